package daemon

import (
	"context"
	"fmt"

	"github.com/contiv/netplugin/netplugin/follow"

	"github.com/contiv/netplugin/netplugin/attachsvc"
	"github.com/contiv/netplugin/netplugin/ovsdriver"
	"github.com/contiv/netplugin/state"
)

// replay applies the state that exists at start one kind at a time, and
// drains the reconcile queue after each, so every kind finds the ones
// before it applied. The order: the VXLAN tunnel ports OVS still has;
// networks; endpoint groups; local endpoints, matched with the ports OVS
// still has (a restart re-uses them instead of creating new ones; ports no
// endpoint claims any more are removed); the store's endpoints; the global
// settings. Run continues with BGP, then services and their providers.
// The original (docs/daemons.md §6.2) replayed endpoints before groups;
// here groups come first because a re-announced local endpoint takes its
// QoS from its group (netrec GroupQoS).
func (d *Daemon) replay(ctx context.Context, nets *follow.Follower[state.Network], groups *follow.Follower[state.EndpointGroup],
	eps *follow.Follower[state.Endpoint], glob *follow.Follower[state.GlobConfig]) error {
	if err := d.vtep.Restore(ctx); err != nil {
		return err
	}
	if err := nets.Sync(ctx); err != nil {
		return fmt.Errorf("replay networks: %w", err)
	}
	d.rec.Drain(ctx)
	if err := groups.Sync(ctx); err != nil {
		return fmt.Errorf("replay endpoint groups: %w", err)
	}
	d.rec.Drain(ctx)
	if err := d.reconcileLocalEndpoints(ctx); err != nil {
		return err
	}
	if err := eps.Sync(ctx); err != nil {
		return fmt.Errorf("replay endpoints: %w", err)
	}
	d.rec.Drain(ctx)
	if err := glob.Sync(ctx); err != nil {
		return fmt.Errorf("replay global settings: %w", err)
	}
	d.rec.Drain(ctx)
	return nil
}

// reconcileLocalEndpoints pairs the endpoint ports found in OVS with the
// endpoints homed on this host: a pair is re-announced to the datapath with
// its existing OpenFlow port; a port without an endpoint is deleted.
func (d *Daemon) reconcileLocalEndpoints(ctx context.Context) error {
	all, _, err := d.st.Endpoints.ReadAll(ctx)
	if err != nil {
		return fmt.Errorf("replay endpoints: %w", err)
	}
	mine := map[string]state.Endpoint{}
	for _, ep := range all {
		if ep.HomingHost == d.cfg.HostLabel {
			mine[ep.ID] = ep
		}
	}
	for _, bridge := range []string{ovsdriver.VxlanBridge, ovsdriver.VlanBridge} {
		ports, err := d.drv.ExistingEndpoints(ctx, bridge)
		if err != nil {
			return fmt.Errorf("read endpoint ports of %s: %w", bridge, err)
		}
		for _, p := range ports {
			ep, ok := mine[p.EndpointID]
			var nw state.Network
			if ok {
				nw, ok = d.nets.KnownNetwork(ep.NetID)
			}
			if !ok || attachsvc.BridgeFor(nw) != bridge || p.OFPort == 0 {
				// No endpoint on this host claims the port, or its veth is
				// gone with its container.
				d.log.WithField("port", p.PortName).Infof("removing stale endpoint port (endpoint %q)", p.EndpointID)
				if err := d.drv.DeleteEndpoint(ctx, bridge, p.PortName); err != nil {
					d.log.WithError(err).Warnf("remove stale port %s", p.PortName)
				}
				continue
			}
			le := localEndpoint{EP: ep, Port: p, Bridge: bridge, QoS: d.nets.GroupQoS(ep)}
			if err := d.agentFor(nw).AddLocalEndpoint(ctx, d.nets.EndpointInfo(le, nw)); err != nil {
				return fmt.Errorf("replay local endpoint %s: %w", ep.ID, err)
			}
			d.eps.Put(le)
		}
	}
	for id := range mine {
		if !d.eps.Has(id) {
			d.log.WithField("endpoint", id).Warn("endpoint homed on this host has no OVS port (its container went away while netplugin was down?)")
		}
	}
	return nil
}

func (d *Daemon) agentFor(nw state.Network) datapath {
	if nw.PktTagType == "vxlan" {
		return d.vx
	}
	return d.vl
}
