package daemon

import (
	"context"
	"fmt"
	"net"

	"github.com/contiv/netplugin/netplugin/ovsdriver"
	"github.com/contiv/netplugin/state"
)

// replay applies the existing state in the original's order (docs/daemons.md §6.2):
// networks, endpoints, groups, global settings. Local endpoints are matched
// with the ports OVS still has, so a restart re-uses them instead of
// creating new ones; ports no endpoint claims any more are removed.
func (d *Daemon) replay(ctx context.Context, nets *follower[state.Network], groups *follower[state.EndpointGroup],
	eps *follower[state.Endpoint], glob *follower[state.GlobConfig]) error {
	vteps, err := d.drv.VTEPs(ctx, ovsdriver.VxlanBridge)
	if err != nil {
		return fmt.Errorf("read VTEPs: %w", err)
	}
	for ip, ofport := range vteps {
		d.vteps[ip] = ofport
		if err := d.vx.AddVtepPort(ctx, ofport, net.ParseIP(ip)); err != nil {
			return fmt.Errorf("replay VTEP %s: %w", ip, err)
		}
	}
	if err := nets.sync(ctx); err != nil {
		return fmt.Errorf("replay networks: %w", err)
	}
	if err := groups.sync(ctx); err != nil {
		return fmt.Errorf("replay endpoint groups: %w", err)
	}
	if err := d.reconcileLocalEndpoints(ctx); err != nil {
		return err
	}
	if err := eps.sync(ctx); err != nil {
		return fmt.Errorf("replay endpoints: %w", err)
	}
	if err := glob.sync(ctx); err != nil {
		return fmt.Errorf("replay global settings: %w", err)
	}
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
				d.mu.Lock()
				nw, ok = d.networks[ep.NetID]
				d.mu.Unlock()
			}
			if !ok || bridgeFor(nw) != bridge || p.OFPort == 0 {
				// No endpoint on this host claims the port, or its veth is
				// gone with its container.
				d.log.WithField("port", p.PortName).Infof("removing stale endpoint port (endpoint %q)", p.EndpointID)
				if err := d.drv.DeleteEndpoint(ctx, bridge, p.PortName); err != nil {
					d.log.WithError(err).Warnf("remove stale port %s", p.PortName)
				}
				continue
			}
			le := &localEndpoint{ep: ep, port: p, bridge: bridge}
			if err := d.agentFor(nw).AddLocalEndpoint(ctx, d.endpointInfo(le, nw)); err != nil {
				return fmt.Errorf("replay local endpoint %s: %w", ep.ID, err)
			}
			d.mu.Lock()
			d.locals[ep.ID] = le
			d.mu.Unlock()
		}
	}
	for id := range mine {
		d.mu.Lock()
		_, ok := d.locals[id]
		d.mu.Unlock()
		if !ok {
			d.log.WithField("endpoint", id).Warn("endpoint homed on this host has no OVS port (its container went away while netplugin was down?)")
		}
	}
	return nil
}

// bridgeFor is the bridge that carries a network's endpoints.
func bridgeFor(nw state.Network) string {
	if nw.PktTagType == "vxlan" {
		return ovsdriver.VxlanBridge
	}
	return ovsdriver.VlanBridge
}

func (d *Daemon) agentFor(nw state.Network) datapath {
	if nw.PktTagType == "vxlan" {
		return d.vx
	}
	return d.vl
}

func (d *Daemon) networkPut(ctx context.Context, nw state.Network, prev *state.Network) {
	if prev != nil {
		return // modifications are ignored (docs/daemons.md §6.3)
	}
	d.mu.Lock()
	d.networks[nw.ID] = nw
	d.mu.Unlock()
	vni := uint32(0)
	if nw.PktTagType == "vxlan" {
		vni = uint32(nw.ExtPktTag)
	}
	if err := d.agentFor(nw).AddNetwork(ctx, uint16(nw.PktTag), vni, nw.Gateway, nw.Tenant); err != nil {
		d.log.WithError(err).Errorf("add network %s to the datapath", nw.ID)
	}
	if nw.NwType == "infra" {
		d.infraUp(ctx, nw)
	}
}

func (d *Daemon) networkDel(ctx context.Context, nw state.Network) {
	if nw.NwType == "infra" {
		d.infraDown(ctx, nw)
	}
	d.mu.Lock()
	delete(d.networks, nw.ID)
	d.mu.Unlock()
	vni := uint32(0)
	if nw.PktTagType == "vxlan" {
		vni = uint32(nw.ExtPktTag)
	}
	if err := d.agentFor(nw).RemoveNetwork(ctx, uint16(nw.PktTag), vni, nw.Gateway, nw.Tenant); err != nil {
		d.log.WithError(err).Errorf("remove network %s from the datapath", nw.ID)
	}
}

// groupPut re-applies bandwidth, burst and DSCP to the group's local ports.
func (d *Daemon) groupPut(ctx context.Context, g state.EndpointGroup, prev *state.EndpointGroup) {
	d.mu.Lock()
	d.groups[g.ID] = g
	var mine []*localEndpoint
	for _, le := range d.locals {
		if le.ep.EndpointGroupKey == g.ID {
			mine = append(mine, le)
		}
	}
	d.mu.Unlock()
	if prev == nil || (prev.Bandwidth == g.Bandwidth && prev.Burst == g.Burst && prev.DSCP == g.DSCP) {
		return
	}
	for _, le := range mine {
		if err := d.drv.UpdatePolicing(ctx, le.port.PortName, g.Bandwidth, g.Burst); err != nil {
			d.log.WithError(err).Errorf("update policing of %s", le.port.PortName)
		}
		d.mu.Lock()
		nw, ok := d.networks[le.ep.NetID]
		d.mu.Unlock()
		if ok {
			if err := d.agentFor(nw).UpdateLocalEndpoint(ctx, d.endpointInfo(le, nw)); err != nil {
				d.log.WithError(err).Errorf("update DSCP of %s", le.ep.ID)
			}
		}
	}
}

func (d *Daemon) groupDel(_ context.Context, g state.EndpointGroup) {
	d.mu.Lock()
	delete(d.groups, g.ID)
	d.mu.Unlock()
}

// endpointPut: remote endpoints reach the datapath through the ofnet master,
// and local ones through the attach path, so a store event needs no work.
func (d *Daemon) endpointPut(context.Context, state.Endpoint, *state.Endpoint) {}

// endpointDel removes a local endpoint deleted behind netplugin's back (e.g.
// by netmaster's cleanup): its flows and its OVS port go.
func (d *Daemon) endpointDel(ctx context.Context, ep state.Endpoint) {
	if ep.HomingHost != d.cfg.HostLabel {
		return
	}
	if err := d.removeLocal(ctx, ep.ID); err != nil {
		d.log.WithError(err).Errorf("remove deleted endpoint %s", ep.ID)
	}
}

// globalPut follows ARP-mode changes (docs/daemons.md §6.3 master/config/).
func (d *Daemon) globalPut(ctx context.Context, g state.GlobConfig, prev *state.GlobConfig) {
	if prev == nil {
		prev = &d.glob
	}
	if g.FwdMode != prev.FwdMode || g.PvtSubnet != prev.PvtSubnet {
		d.log.Errorf("cluster forwarding mode or private subnet changed (%s %s → %s %s): restart netplugin to apply",
			prev.FwdMode, prev.PvtSubnet, g.FwdMode, g.PvtSubnet)
	}
	if g.ArpMode != prev.ArpMode {
		mode := "proxy"
		if g.ArpMode == "flood" {
			mode = "flood"
		}
		for _, a := range []datapath{d.vx, d.vl} {
			if err := a.SetArpMode(ctx, mode); err != nil {
				d.log.WithError(err).Error("set ARP mode")
			}
		}
	}
	d.glob = g
}
