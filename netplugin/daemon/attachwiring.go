package daemon

import (
	"context"
	"fmt"
	"math"
	"net"
	"time"

	"github.com/contiv/netplugin/api/attach"
	"github.com/contiv/netplugin/mgmtfn/k8splugin"
	"github.com/contiv/netplugin/netplugin/attachsvc"
	"github.com/contiv/netplugin/netplugin/ovsdriver"
	"github.com/contiv/netplugin/ofnet/agent"
	"github.com/contiv/netplugin/state"

	"github.com/contiv/netplugin/utils/ctxutil"
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
		Log: d.log})
}

// attachCluster is the daemon as the attach service reads it.
type attachCluster struct{ d *Daemon }

func (c attachCluster) Network(ctx context.Context, id string) (state.Network, error) {
	return c.d.network(ctx, id)
}

func (c attachCluster) KnownNetwork(id string) (state.Network, bool) {
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	nw, ok := c.d.networks[id]
	return nw, ok
}

func (c attachCluster) Group(id string) (state.EndpointGroup, bool) {
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	g, ok := c.d.groups[id]
	return g, ok
}

func (c attachCluster) EndpointInfo(le localEndpoint, nw state.Network) agent.EndpointInfo {
	return c.d.endpointInfo(le, nw)
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

// endpointInfo describes a local endpoint to its datapath.
func (d *Daemon) endpointInfo(le localEndpoint, nw state.Network) agent.EndpointInfo {
	info := agent.EndpointInfo{
		PortNo:        le.Port.OFPort,
		Vlan:          uint16(nw.PktTag),
		IpAddr:        net.ParseIP(le.EP.IPAddress),
		EndpointGroup: le.EP.EndpointGroupID,
	}
	info.MacAddr, _ = net.ParseMAC(le.EP.MacAddress)
	if le.EP.IPv6Address != "" {
		info.Ipv6Addr = net.ParseIP(le.EP.IPv6Address)
	}
	d.mu.Lock()
	g, ok := d.groups[le.EP.EndpointGroupKey]
	d.mu.Unlock()
	if ok {
		info.Dscp = g.DSCP
		if g.PktTag != 0 {
			info.EndpointGroupVlan = uint16(g.PktTag)
		}
		info.RateKbps, info.BurstKb = d.meterFor(g)
	}
	return info
}

// meterFor is the group's bandwidth limit as an OpenFlow meter rate and burst: on
// the userspace datapath only, which ignores the ingress policing the driver sets
// (docs/traffic.md). The burst is the profile's, but at least one second of the
// rate: with less, the userspace meter's drops hold TCP to about half the rate. A
// bandwidth the driver cannot parse gives no meter (the driver refuses it with an
// error of its own).
func (d *Daemon) meterFor(g state.EndpointGroup) (rate, burst uint32) {
	if d.cfg.OVSDatapath != "netdev" {
		return 0, 0
	}
	kbps, err := ovsdriver.ParseBandwidth(g.Bandwidth)
	if err != nil || kbps <= 0 || g.Burst < 0 {
		return 0, 0
	}
	rate = uint32(min(kbps, math.MaxUint32))
	return rate, max(rate, uint32(g.Burst))
}

// network returns a network's state, from the cache or the store (a network
// created a moment ago may not have reached the watch yet).
func (d *Daemon) network(ctx context.Context, id string) (state.Network, error) {
	d.mu.Lock()
	nw, ok := d.networks[id]
	d.mu.Unlock()
	if ok {
		return nw, nil
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		nw, err := d.st.Networks.Read(ctx, id)
		if err != nil {
			return nw, fmt.Errorf("network %s: %w", id, err)
		}
		d.mu.Lock()
		_, ok := d.networks[id]
		d.mu.Unlock()
		if ok || time.Now().After(deadline) {
			return nw, nil
		}
		// Let the network watch add it to the datapath first.
		if !ctxutil.Sleep(ctx, 50*time.Millisecond) {
			return nw, ctx.Err()
		}
	}
}
