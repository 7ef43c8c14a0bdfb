package agent

import (
	"context"
	"fmt"
	"net"
	"reflect"
	"sort"

	"github.com/contiv/netplugin/ofnet/ofctrl"
)

// desiredState is what the features want on the switch.
type desiredState struct {
	flows  map[string][]ofctrl.Flow // object key → flows
	groups map[uint32]ofctrl.Group
	meters map[uint32]ofctrl.Meter
	// affinity: learned-flow cookie → signature of each service with session
	// affinity (feature_service.go).
	affinity map[uint64]string
	err      error
}

func (d *desiredState) add(obj string, f ofctrl.Flow, err error) {
	if err != nil {
		if d.err == nil {
			d.err = fmt.Errorf("flows of %s: %w", obj, err)
		}
		return
	}
	d.flows[obj] = append(d.flows[obj], f)
}

// to returns an adder for obj's flows, so builders' Done() results pass straight in.
func (d *desiredState) to(obj string) func(ofctrl.Flow, error) {
	return func(f ofctrl.Flow, err error) { d.add(obj, f, err) }
}

func (d *desiredState) addGroup(g ofctrl.Group) { d.groups[g.ID] = g }

func (d *desiredState) addMeter(m ofctrl.Meter) { d.meters[m.ID] = m }

// localEndpointsLocked resolves the local endpoints whose network is known.
func (a *Agent) localEndpointsLocked() []endpoint {
	var out []endpoint
	for _, l := range a.locals {
		nw, ok := a.networks[l.Vlan]
		if !ok {
			continue
		}
		vrfID, _ := a.vrfIDLocked(nw.Vrf)
		out = append(out, endpoint{ID: endpointID(l.EndpointInfo, nw.Vrf), Local: true, Port: l.PortNo,
			MAC: l.MacAddr, IP: l.IpAddr.To4(), IPv6: l.Ipv6Addr, Vlan: nw.Vlan, Vni: nw.Vni,
			VrfID: vrfID, Vrf: nw.Vrf, EPG: l.EndpointGroup, EPGVlan: l.EndpointGroupVlan, Dscp: l.Dscp,
			Meter: ofctrl.Meter{ID: l.PortNo, RateKbps: l.RateKbps, BurstKb: l.BurstKb}})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Port < out[j].Port })
	return out
}

// remoteEndpointsLocked resolves the remote endpoints that can be installed: their
// VRF is known here and, in VXLAN modes, their VNI's network and originator's VTEP.
func (a *Agent) remoteEndpointsLocked() []endpoint {
	var out []endpoint
	for id, r := range a.remotes {
		vrfID, ok := a.vrfIDLocked(r.Vrf)
		if !ok {
			continue
		}
		mac, err := net.ParseMAC(r.MacAddrStr)
		if err != nil || r.IpAddr.To4() == nil {
			continue
		}
		ep := endpoint{ID: id, MAC: mac, IP: r.IpAddr.To4(), Vlan: r.Vlan, Vni: r.Vni,
			VrfID: vrfID, Vrf: r.Vrf, EPG: r.EndpointGroup, EPGVlan: r.EndpointGroupVlan}
		if r.Ipv6Addr != nil && r.Ipv6Addr.To4() == nil {
			ep.IPv6 = r.Ipv6Addr
		}
		if !a.vlanDatapath() {
			nw := a.networkByVniLocked(r.Vni)
			port, known := a.vtepPortLocked(r.OriginatorIp)
			if nw == nil || !known {
				continue // deferred until the network and the VTEP are known
			}
			ep.Vlan, ep.Port = nw.Vlan, port
		}
		out = append(out, ep)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (a *Agent) networkByVniLocked(vni uint32) *network {
	for _, nw := range a.networks {
		if nw.Vni == vni {
			return nw
		}
	}
	return nil
}

// desiredLocked computes every feature's flows and groups from the current state.
func (a *Agent) desiredLocked() (*desiredState, error) {
	d := &desiredState{flows: map[string][]ofctrl.Flow{}, groups: map[uint32]ofctrl.Group{}, meters: map[uint32]ofctrl.Meter{},
		affinity: map[uint64]string{}}
	s := &snapshot{a: a, locals: a.localEndpointsLocked(), remotes: a.remoteEndpointsLocked()}
	for _, f := range a.features {
		f.flows(s, d)
	}
	return d, d.err
}

// syncLocked brings the switch to the desired state by diff against the per-object
// cache: meters and groups added or changed, then flows added or changed (one
// all-or-nothing InstallFlows), then flows no object wants any more deleted by
// identity, then groups and meters no longer wanted deleted. Without a switch it only checks that the state
// builds. On error the cache keeps what is really installed.
func (a *Agent) syncLocked(ctx context.Context) error {
	d, err := a.desiredLocked()
	if err != nil {
		return err
	}
	if a.sw == nil {
		return nil
	}
	newCache := make(map[string]map[ofctrl.FlowKey]ofctrl.Flow, len(d.flows))
	wanted := map[ofctrl.FlowKey]bool{}
	var adds []ofctrl.Flow
	for obj, flows := range d.flows {
		m := make(map[ofctrl.FlowKey]ofctrl.Flow, len(flows))
		for _, f := range flows {
			k := f.Key()
			if wanted[k] {
				a.log.WithField("object", obj).WithField("flow", f.String()).Warn("agent: flow wanted by two objects")
			}
			wanted[k] = true
			m[k] = f
			if old, ok := a.cache[obj][k]; !ok || !sameFlow(old, f) {
				adds = append(adds, f)
			}
		}
		newCache[obj] = m
	}
	var dels []ofctrl.Flow
	for obj, m := range a.cache {
		for k, f := range m {
			if _, still := newCache[obj][k]; !still && !wanted[k] {
				dels = append(dels, f)
			}
		}
	}
	var groupAdds []ofctrl.Group
	for id, g := range d.groups {
		if old, ok := a.groups[id]; !ok || !reflect.DeepEqual(old, g) {
			groupAdds = append(groupAdds, g)
		}
	}
	var groupDels []uint32
	for id := range a.groups {
		if _, ok := d.groups[id]; !ok {
			groupDels = append(groupDels, id)
		}
	}
	var meterAdds []ofctrl.Meter
	for id, m := range d.meters {
		if old, ok := a.meters[id]; !ok || old != m {
			meterAdds = append(meterAdds, m)
		}
	}
	var meterDels []uint32
	for id := range a.meters {
		if _, ok := d.meters[id]; !ok {
			meterDels = append(meterDels, id)
		}
	}
	sort.Slice(meterAdds, func(i, j int) bool { return meterAdds[i].ID < meterAdds[j].ID })
	sort.Slice(meterDels, func(i, j int) bool { return meterDels[i] < meterDels[j] })
	sort.Slice(groupAdds, func(i, j int) bool { return groupAdds[i].ID < groupAdds[j].ID })
	sort.Slice(groupDels, func(i, j int) bool { return groupDels[i] < groupDels[j] })

	if len(meterAdds) > 0 {
		if err := a.sw.InstallMeters(ctx, meterAdds...); err != nil {
			return fmt.Errorf("install endpoint meters: %w", err)
		}
		for _, m := range meterAdds {
			a.meters[m.ID] = m
		}
	}
	if len(groupAdds) > 0 {
		if err := a.sw.InstallGroups(ctx, groupAdds...); err != nil {
			return fmt.Errorf("install flood groups: %w", err)
		}
		for _, g := range groupAdds {
			a.groups[g.ID] = g
		}
	}
	if len(adds) > 0 {
		if err := a.sw.InstallFlows(ctx, adds...); err != nil {
			return fmt.Errorf("install %d flows: %w", len(adds), err)
		}
	}
	if len(dels) > 0 {
		if err := a.sw.DeleteFlows(ctx, dels...); err != nil {
			// The adds are in; keep the deleted-but-failed flows cached so the next
			// sync retries them.
			a.cache = newCache
			for _, f := range dels {
				a.cacheKeep(f)
			}
			return fmt.Errorf("delete %d flows: %w", len(dels), err)
		}
	}
	a.cache = newCache
	if len(groupDels) > 0 {
		if err := a.sw.DeleteGroups(ctx, groupDels...); err != nil {
			return fmt.Errorf("delete flood groups: %w", err)
		}
		for _, id := range groupDels {
			delete(a.groups, id)
		}
	}
	if len(meterDels) > 0 {
		if err := a.sw.DeleteMeters(ctx, meterDels...); err != nil {
			return fmt.Errorf("delete endpoint meters: %w", err)
		}
		for _, id := range meterDels {
			delete(a.meters, id)
		}
	}
	return a.syncAffinityLocked(ctx, d.affinity)
}

// cacheKeep records a flow that could not be deleted under an orphan key.
func (a *Agent) cacheKeep(f ofctrl.Flow) {
	m := a.cache["orphan"]
	if m == nil {
		m = map[ofctrl.FlowKey]ofctrl.Flow{}
		a.cache["orphan"] = m
	}
	m[f.Key()] = f
}

func sameFlow(a, b ofctrl.Flow) bool {
	return a.Cookie == b.Cookie && reflect.DeepEqual(a.Instructions, b.Instructions)
}

// change applies a state mutation and syncs; if the sync fails the mutation is undone
// (and synced back) and the error returned, so a rejected change leaves no trace.
func (a *Agent) change(ctx context.Context, what string, mutate func() (undo func())) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	undo := mutate()
	err := a.syncLocked(ctx)
	if err == nil {
		return nil
	}
	if undo != nil {
		undo()
		if err2 := a.syncLocked(ctx); err2 != nil {
			a.log.WithError(err2).Warn("agent: re-sync after a failed change failed")
		}
	}
	return fmt.Errorf("agent %s: %s: %w", a.cfg.Bridge, what, err)
}
