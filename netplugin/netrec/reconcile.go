package netrec

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"

	"github.com/contiv/netplugin/netplugin/attachsvc"
	"github.com/contiv/netplugin/netplugin/ovsdriver"
	"github.com/contiv/netplugin/ofnet/agent"
	"github.com/contiv/netplugin/state"
)

// ReconcileNetwork puts a network of the store into its bridge's datapath
// (with the host's port on an infra network) or takes one the store no
// longer has out. Other changes of a network are ignored (docs/daemons.md
// §6.3).
func (r *Reconciler) ReconcileNetwork(ctx context.Context, id string) error {
	if r.cfg.Changed != nil {
		defer r.cfg.Changed()
	}
	nw, want := r.cfg.Networks.Get(id)
	r.mu.Lock()
	have, had := r.applied[id]
	r.mu.Unlock()
	if had && (!want || !sameSegment(have, nw)) {
		if err := r.removeNetwork(ctx, id, have, want); err != nil {
			return err
		}
		had = false
	}
	if !want {
		r.mu.Lock()
		delete(r.networks, id)
		r.mu.Unlock()
		return nil
	}
	r.mu.Lock()
	r.networks[id] = nw
	r.mu.Unlock()
	if !had {
		if err := r.cfg.Datapath(nw).AddNetwork(ctx, uint16(nw.PktTag), vniOf(nw), nw.Gateway, nw.Tenant); err != nil {
			return fmt.Errorf("add network %s to the datapath: %w", id, err)
		}
		r.mu.Lock()
		r.applied[id] = nw
		r.mu.Unlock()
	}
	if nw.NwType != "infra" {
		return nil
	}
	r.mu.Lock()
	up := r.infra[id]
	r.mu.Unlock()
	if up {
		return nil
	}
	if len(nw.NetworkName) > 15 {
		// Cannot work, however often it is tried.
		r.cfg.Log.Errorf("infra network %s: host port not created: network name %q is longer than an interface name (15)", id, nw.NetworkName)
		return nil
	}
	if err := r.cfg.Locals.InfraUp(ctx, nw); err != nil {
		return fmt.Errorf("infra network %s: host port: %w", id, err)
	}
	r.mu.Lock()
	r.infra[id] = true
	r.mu.Unlock()
	return nil
}

// removeNetwork takes an applied network out of the datapath (its host
// port first on an infra network). replaced: the store holds another
// version of it, which stays in r.networks.
func (r *Reconciler) removeNetwork(ctx context.Context, id string, have state.Network, replaced bool) error {
	r.mu.Lock()
	infraUp := r.infra[id]
	r.mu.Unlock()
	if infraUp {
		if err := r.cfg.Locals.InfraDown(ctx, have); err != nil {
			return err
		}
		r.mu.Lock()
		delete(r.infra, id)
		r.mu.Unlock()
	}
	if !replaced {
		r.mu.Lock()
		delete(r.networks, id)
		r.mu.Unlock()
	}
	if err := r.cfg.Datapath(have).RemoveNetwork(ctx, uint16(have.PktTag), vniOf(have), have.Gateway, have.Tenant); err != nil {
		return fmt.Errorf("remove network %s from the datapath: %w", id, err)
	}
	r.mu.Lock()
	delete(r.applied, id)
	r.mu.Unlock()
	return nil
}

// ReconcileGroup keeps the group for new endpoints and brings the policing,
// meter and DSCP of the group's local endpoints to the group's values.
func (r *Reconciler) ReconcileGroup(ctx context.Context, id string) error {
	g, want := r.cfg.Groups.Get(id)
	r.mu.Lock()
	if !want {
		delete(r.groups, id)
		r.mu.Unlock()
		return nil
	}
	r.groups[id] = g
	r.mu.Unlock()
	q := attachsvc.QoSOf(g)
	type todo struct {
		le attachsvc.Local
		nw state.Network
		ok bool
	}
	var work []todo
	for _, le := range r.cfg.Locals.All() {
		if le.EP.EndpointGroupKey == id && le.QoS != q {
			nw, ok := r.KnownNetwork(le.EP.NetID)
			work = append(work, todo{le, nw, ok})
		}
	}
	var errs []error
	for _, w := range work {
		le := w.le
		if !le.QoS.Known || le.QoS.Bandwidth != q.Bandwidth || le.QoS.Burst != q.Burst {
			if err := r.cfg.Policing.UpdatePolicing(ctx, le.Port.PortName, g.Bandwidth, g.Burst); err != nil {
				errs = append(errs, fmt.Errorf("update policing of %s: %w", le.Port.PortName, err))
				continue
			}
		}
		if !w.ok {
			errs = append(errs, fmt.Errorf("endpoint %s: network %s unknown", le.EP.ID, le.EP.NetID))
			continue
		}
		if err := r.cfg.Datapath(w.nw).UpdateLocalEndpoint(ctx, r.EndpointInfo(le, w.nw)); err != nil {
			errs = append(errs, fmt.Errorf("update DSCP and meter of %s: %w", le.EP.ID, err))
			continue
		}
		r.cfg.Locals.SetQoS(le.EP.ID, q)
	}
	return errors.Join(errs...)
}

// EndpointInfo describes a local endpoint to its datapath.
func (r *Reconciler) EndpointInfo(le attachsvc.Local, nw state.Network) agent.EndpointInfo {
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
	r.mu.Lock()
	g, ok := r.groups[le.EP.EndpointGroupKey]
	r.mu.Unlock()
	if ok {
		info.Dscp = g.DSCP
		if g.PktTag != 0 {
			info.EndpointGroupVlan = uint16(g.PktTag)
		}
		info.RateKbps, info.BurstKb = r.meterFor(g)
	}
	return info
}

// meterFor is the group's bandwidth limit as an OpenFlow meter rate and burst: on
// the userspace datapath only, which ignores the ingress policing the driver sets
// (docs/traffic.md). The burst is the profile's, but at least one second of the
// rate: with less, the userspace meter's drops hold TCP to about half the rate. A
// bandwidth the driver cannot parse gives no meter (the driver refuses it with an
// error of its own).
func (r *Reconciler) meterFor(g state.EndpointGroup) (rate, burst uint32) {
	if !r.cfg.Meters {
		return 0, 0
	}
	kbps, err := ovsdriver.ParseBandwidth(g.Bandwidth)
	if err != nil || kbps <= 0 || g.Burst < 0 {
		return 0, 0
	}
	rate = uint32(min(kbps, math.MaxUint32))
	return rate, max(rate, uint32(g.Burst))
}
