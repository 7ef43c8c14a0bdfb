package daemon

import (
	"context"

	"github.com/contiv/netplugin/api/attach"
	"github.com/contiv/netplugin/mgmtfn/k8splugin"
	"github.com/contiv/netplugin/netplugin/attachsvc"
	"github.com/contiv/netplugin/netplugin/ovsdriver"
	"github.com/contiv/netplugin/ofnet/agent"
	"github.com/contiv/netplugin/state"
)

// localEndpoint is an endpoint homed on this host (netplugin/attachsvc owns
// them; the daemon reads copies).
type localEndpoint = attachsvc.Local

// newAttachService wires the attach service to the daemon's driver,
// datapaths, netmaster client and desired state.
func (d *Daemon) newAttachService() *attachsvc.Service {
	return attachsvc.New(attachsvc.Config{Host: d.cfg.HostLabel,
		Datapath: func(bridge string) attachsvc.Datapath {
			if bridge == ovsdriver.VxlanBridge {
				return d.vx
			}
			return d.vl
		},
		Ports: d.drv, Master: d.mc, Store: d.st, Cluster: attachCluster{d},
		Hooks: attachsvc.Hooks{Changed: d.bgpEndpoint, PolicyAttached: d.netpolAttached,
			PolicyDetached: d.netpolDetached, Observe: d.met.observeAttach},
		Enqueue: d.rec.Enqueue, Log: d.log})
}

// attachCluster is the daemon as the attach service reads it.
type attachCluster struct{ d *Daemon }

// The networks and groups are netplugin/netrec's (set before anything
// attaches).
func (c attachCluster) Network(ctx context.Context, id string) (state.Network, error) {
	return c.d.nets.Network(ctx, id)
}

func (c attachCluster) KnownNetwork(id string) (state.Network, bool) {
	return c.d.nets.KnownNetwork(id)
}

func (c attachCluster) Group(id string) (state.EndpointGroup, bool) { return c.d.nets.Group(id) }

func (c attachCluster) EndpointInfo(le localEndpoint, nw state.Network) agent.EndpointInfo {
	return c.d.nets.EndpointInfo(le, nw)
}

func (c attachCluster) Release(ctx context.Context, epID string) error {
	return c.d.releaseEndpoint(ctx, epID)
}

// Attach connects a container to a network (attach.Attacher; the attach
// service does it).
func (d *Daemon) Attach(ctx context.Context, req attach.Request) (attach.Result, error) {
	return d.eps.Attach(ctx, req)
}

// AttachHost creates a container's endpoint and its port (attach.HostAttacher).
func (d *Daemon) AttachHost(ctx context.Context, req attach.HostRequest) (attach.Result, error) {
	return d.eps.AttachHost(ctx, req)
}

// Attached returns the endpoint of (tenant, network, containerID) if it is
// attached on this host (attach.HostAttacher).
func (d *Daemon) Attached(tenant, network, containerID string) (attach.Result, bool) {
	return d.eps.Attached(tenant, network, containerID)
}

// Detach removes a container's endpoint (attach.Attacher).
func (d *Daemon) Detach(ctx context.Context, req attach.DetachRequest) error {
	return d.eps.Detach(ctx, req)
}

// CheckAttachment verifies a CNI attachment (k8splugin.Checker).
func (d *Daemon) CheckAttachment(ctx context.Context, ref k8splugin.AttachmentRef) error {
	return d.eps.CheckAttachment(ctx, ref)
}

var (
	_ attach.Attacher     = (*Daemon)(nil)
	_ attach.HostAttacher = (*Daemon)(nil)
	_ k8splugin.Checker   = (*Daemon)(nil)
)

// addLocal and removeLocal are the attach service's (replay, reconcilers,
// tests).
func (d *Daemon) addLocal(ctx context.Context, ep state.Endpoint, nw state.Network) (*localEndpoint, error) {
	return d.eps.AddLocal(ctx, ep, nw)
}

func (d *Daemon) removeLocal(ctx context.Context, epID string) error {
	return d.eps.RemoveLocal(ctx, epID)
}
