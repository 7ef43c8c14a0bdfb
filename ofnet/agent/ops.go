package agent

import (
	"context"
	"fmt"
	"maps"
	"net"
	"time"

	"github.com/contiv/netplugin/ofnet/ofrpc"
	"github.com/contiv/netplugin/ofnet/pipeline"
)

// AddNetwork makes a network known: vlan (network vlan / internal tag), vni (0 for
// VLAN networks), gateway (may be empty) and vrf (tenant). The VRF gets a host-local
// id on its first network (referenced once per network, quirk A7 fixed). Adding the
// same network again is a no-op; a different network on the same vlan is an error.
// Endpoints and VTEPs added before their network get their flows now.
func (a *Agent) AddNetwork(ctx context.Context, vlan uint16, vni uint32, gateway string, vrf string) error {
	if vlan == 0 || vlan > 4094 {
		return fmt.Errorf("agent: add network: vlan %d out of 1..4094", vlan)
	}
	if vni > 1<<24-1 {
		return fmt.Errorf("agent: add network vlan %d: VNI %d out of 0..16777215", vlan, vni)
	}
	var gw net.IP
	if gateway != "" {
		if gw = net.ParseIP(gateway); gw == nil {
			return fmt.Errorf("agent: add network vlan %d: gateway %q is not an IP address", vlan, gateway)
		}
	}
	nw := &network{Vlan: vlan, Vni: vni, Gateway: gw, Vrf: vrf}
	var conflict error
	err := a.change(ctx, fmt.Sprintf("add network vlan %d", vlan), func() func() {
		if old, ok := a.networks[vlan]; ok {
			if old.Vni != vni || old.Vrf != vrf || !old.Gateway.Equal(gw) {
				conflict = fmt.Errorf("agent: add network vlan %d: already known with VNI %d, VRF %q", vlan, old.Vni, old.Vrf)
			}
			return nil
		}
		if other := a.networkByVniLocked(vni); vni != 0 && other != nil {
			conflict = fmt.Errorf("agent: add network vlan %d: VNI %d belongs to vlan %d", vlan, vni, other.Vlan)
			return nil
		}
		if conflict = a.refVrfLocked(vrf); conflict != nil {
			return nil
		}
		a.networks[vlan] = nw
		return func() { delete(a.networks, vlan); a.unrefVrfLocked(vrf) }
	})
	if err != nil {
		return err
	}
	if conflict != nil {
		return conflict
	}
	a.pushResolvedLocals()
	return nil
}

// RemoveNetwork forgets a network: its flood groups and flows, and the flows of its
// endpoints, go (the endpoints stay recorded). Removing an unknown network is a no-op.
func (a *Agent) RemoveNetwork(ctx context.Context, vlan uint16, vni uint32, gateway string, vrf string) error {
	return a.change(ctx, fmt.Sprintf("remove network vlan %d", vlan), func() func() {
		nw, ok := a.networks[vlan]
		if !ok {
			return nil
		}
		delete(a.networks, vlan)
		a.unrefVrfLocked(nw.Vrf)
		return func() { a.networks[vlan] = nw; _ = a.refVrfLocked(nw.Vrf) }
	})
}

func (a *Agent) refVrfLocked(name string) error {
	if r, ok := a.vrfs[name]; ok {
		r.Refs++
		return nil
	}
	used := map[uint8]bool{}
	for _, r := range a.vrfs {
		used[r.ID] = true
	}
	// The id this tenant had before (in this run or the previous one) if it
	// is free; else the lowest id nobody had; else the lowest free one.
	if id, ok := a.vrfPref[name]; ok && id != 0 && !used[id] {
		a.vrfs[name] = &vrfRef{ID: id, Refs: 1}
		return nil
	}
	remembered := map[uint8]bool{}
	for _, id := range a.vrfPref {
		remembered[id] = true
	}
	pick := uint8(0)
	for id := 1; id <= int(pipeline.VRFField.Max()); id++ {
		if used[uint8(id)] {
			continue
		}
		if !remembered[uint8(id)] {
			pick = uint8(id)
			break
		}
		if pick == 0 {
			pick = uint8(id)
		}
	}
	if pick == 0 {
		return fmt.Errorf("agent: no free VRF id for %q", name)
	}
	a.vrfs[name] = &vrfRef{ID: pick, Refs: 1}
	if a.vrfPref == nil {
		a.vrfPref = map[string]uint8{}
	}
	for n, id := range a.vrfPref {
		if id == pick {
			delete(a.vrfPref, n) // that tenant loses its remembered id
		}
	}
	a.vrfPref[name] = pick
	if a.cfg.OnVrfIDs != nil {
		a.cfg.OnVrfIDs(maps.Clone(a.vrfPref))
	}
	return nil
}

func (a *Agent) unrefVrfLocked(name string) {
	if r, ok := a.vrfs[name]; ok {
		if r.Refs--; r.Refs <= 0 {
			delete(a.vrfs, name)
		}
	}
}

// AddLocalEndpoint installs a local endpoint's flows (port flows, MAC or IP flows,
// flood membership, dst-group flows) all or nothing, and pushes it to every master
// asynchronously. Idempotent: the same endpoint on the same port is a no-op; a
// different endpoint on an occupied port replaces it. If the endpoint's network is
// not known yet its flows are installed when the network is added.
func (a *Agent) AddLocalEndpoint(ctx context.Context, ep EndpointInfo) error {
	if err := ep.validate(); err != nil {
		return err
	}
	ep.IpAddr = ep.IpAddr.To4()
	var replaced *localEndpoint
	err := a.change(ctx, fmt.Sprintf("add local endpoint %v on port %d", ep.IpAddr, ep.PortNo), func() func() {
		old, ok := a.locals[ep.PortNo]
		if ok && sameEndpointInfo(old.EndpointInfo, ep) {
			return nil
		}
		replaced = old
		a.locals[ep.PortNo] = &localEndpoint{EndpointInfo: ep}
		return func() {
			if old != nil {
				a.locals[ep.PortNo] = old
			} else {
				delete(a.locals, ep.PortNo)
			}
		}
	})
	if err != nil {
		return err
	}
	if replaced != nil {
		a.pushDel(replaced)
	}
	a.pushResolvedLocals()
	a.garpForEndpoint(ep)
	return nil
}

// RemoveLocalEndpoint removes every flow of the endpoint on portNo and tells the
// masters. Idempotent: an unknown port is a no-op.
func (a *Agent) RemoveLocalEndpoint(ctx context.Context, portNo uint32) error {
	var gone *localEndpoint
	err := a.change(ctx, fmt.Sprintf("remove local endpoint on port %d", portNo), func() func() {
		old, ok := a.locals[portNo]
		if !ok {
			return nil
		}
		gone = old
		delete(a.locals, portNo)
		return func() { a.locals[portNo] = old }
	})
	if err == nil && gone != nil {
		a.pushDel(gone)
	}
	return err
}

// UpdateLocalEndpoint changes a local endpoint's DSCP marking and meter (the
// attributes an EPG update changes in the datapath). Unknown port: error.
func (a *Agent) UpdateLocalEndpoint(ctx context.Context, ep EndpointInfo) error {
	if ep.Dscp < 0 || ep.Dscp > 63 {
		return fmt.Errorf("agent: update endpoint on port %d: DSCP %d out of 0..63", ep.PortNo, ep.Dscp)
	}
	a.mu.Lock()
	_, ok := a.locals[ep.PortNo]
	a.mu.Unlock()
	if !ok {
		return fmt.Errorf("agent: update endpoint: no local endpoint on port %d", ep.PortNo)
	}
	return a.change(ctx, fmt.Sprintf("update local endpoint on port %d", ep.PortNo), func() func() {
		l, ok := a.locals[ep.PortNo]
		if !ok || (l.Dscp == ep.Dscp && l.RateKbps == ep.RateKbps && l.BurstKb == ep.BurstKb) {
			return nil
		}
		old := l.EndpointInfo
		l.Dscp, l.RateKbps, l.BurstKb = ep.Dscp, ep.RateKbps, ep.BurstKb
		return func() { l.Dscp, l.RateKbps, l.BurstKb = old.Dscp, old.RateKbps, old.BurstKb }
	})
}

// AddVtepPort records the VXLAN tunnel port towards a peer host: tunnel ingress flows
// for every network, flood buckets, and the flows of the peer's remote endpoints.
// Idempotent.
func (a *Agent) AddVtepPort(ctx context.Context, portNo uint32, remoteIP net.IP) error {
	if portNo == 0 || remoteIP.To4() == nil {
		return fmt.Errorf("agent: add VTEP: port %d, peer %v: need a port and an IPv4 peer", portNo, remoteIP)
	}
	ip := remoteIP.To4().String()
	return a.change(ctx, "add VTEP to "+ip, func() func() {
		old, ok := a.vteps[ip]
		if ok && old == portNo {
			return nil
		}
		a.vteps[ip] = portNo
		return func() {
			if ok {
				a.vteps[ip] = old
			} else {
				delete(a.vteps, ip)
			}
		}
	})
}

// RemoveVtepPort removes a VTEP and every flow and bucket that uses it, including
// the flows of the peer's endpoints (kept recorded: they come back with the VTEP).
// Idempotent.
func (a *Agent) RemoveVtepPort(ctx context.Context, portNo uint32, remoteIP net.IP) error {
	ip := remoteIP.To4().String()
	return a.change(ctx, "remove VTEP to "+ip, func() func() {
		old, ok := a.vteps[ip]
		if !ok {
			return nil
		}
		delete(a.vteps, ip)
		return func() { a.vteps[ip] = old }
	})
}

// AddUplink adds an uplink member port (VLAN bridging): fabric traffic from it
// bypasses policy. Several member ports (a bond) are fine. Idempotent.
func (a *Agent) AddUplink(ctx context.Context, portNo uint32, linkName string) error {
	if portNo == 0 {
		return fmt.Errorf("agent: add uplink %q: port number 0", linkName)
	}
	return a.change(ctx, "add uplink "+linkName, func() func() {
		old, ok := a.uplinks[portNo]
		if ok && old == linkName {
			return nil
		}
		a.uplinks[portNo] = linkName
		return func() {
			if ok {
				a.uplinks[portNo] = old
			} else {
				delete(a.uplinks, portNo)
			}
		}
	})
}

// RemoveUplink removes an uplink member port. Idempotent.
func (a *Agent) RemoveUplink(ctx context.Context, portNo uint32) error {
	return a.change(ctx, fmt.Sprintf("remove uplink port %d", portNo), func() func() {
		old, ok := a.uplinks[portNo]
		if !ok {
			return nil
		}
		delete(a.uplinks, portNo)
		return func() { a.uplinks[portNo] = old }
	})
}

// SetArpMode selects "flood" (ARP broadcasts are flooded like any unknown
// destination) or, for anything else, "proxy" (ARP requests go to the agent). Only
// the bridging datapaths honour it. Switching to flood starts a GARP burst (VLAN
// bridging).
func (a *Agent) SetArpMode(ctx context.Context, mode string) error {
	flood := mode == "flood"
	var changed bool
	err := a.change(ctx, "set ARP mode "+mode, func() func() {
		if a.arpFlood == flood {
			return nil
		}
		changed = true
		a.arpFlood = flood
		return func() { a.arpFlood = !flood }
	})
	if err == nil && changed && flood {
		a.InjectGARPs(ctx, 0)
	}
	return err
}

// AddRule installs a policy rule (§4.3). The same rule again is a no-op; a different
// rule with an existing RuleId is an error; an invalid rule is an error and changes
// nothing. A rule naming a group whose id it lacks is refused, allow and deny alike
// (installed, it would match any group): the refusal is logged, returned and listed
// under RefusedRules until the rule is deleted or a valid one replaces it
// (docs/security.md, "Fail closed").
func (a *Agent) AddRule(ctx context.Context, r ofrpc.OfnetPolicyRule) error {
	if err := r.CheckGroups(); err != nil {
		err = fmt.Errorf("agent: %w", err)
		a.log.WithError(err).WithField("rule", r.RuleId).WithField("action", r.Action).Error("policy rule refused: not installed")
		a.mu.Lock()
		a.refused[r.RuleId] = err.Error()
		a.mu.Unlock()
		return err
	}
	if _, err := ruleFlow(a.tables.Get(pipeline.PolicyTable), r); err != nil {
		return err
	}
	a.mu.Lock()
	delete(a.refused, r.RuleId)
	old, ok := a.rules[r.RuleId]
	a.mu.Unlock()
	if ok {
		if old == r {
			return nil
		}
		return fmt.Errorf("agent: rule %q already exists with other content", r.RuleId)
	}
	return a.change(ctx, "add rule "+r.RuleId, func() func() {
		if _, ok := a.rules[r.RuleId]; ok {
			return nil
		}
		a.rules[r.RuleId] = r
		return func() { delete(a.rules, r.RuleId) }
	})
}

// DelRule removes a policy rule by RuleId. Unknown ids are a no-op.
func (a *Agent) DelRule(ctx context.Context, r ofrpc.OfnetPolicyRule) error {
	a.mu.Lock()
	delete(a.refused, r.RuleId)
	a.mu.Unlock()
	return a.change(ctx, "delete rule "+r.RuleId, func() func() {
		old, ok := a.rules[r.RuleId]
		if !ok {
			return nil
		}
		delete(a.rules, r.RuleId)
		return func() { a.rules[r.RuleId] = old }
	})
}

// AddRemoteEndpoint handles OfnetAgent.EndpointAdd (§3.0.5): endpoints this host
// originated, endpoints of the other encapsulation and stale updates (timestamp not
// later than the stored one) are ignored; otherwise the endpoint replaces the stored
// one. In VXLAN modes its flows wait for its network and its originator's VTEP.
func (a *Agent) AddRemoteEndpoint(ctx context.Context, ep ofrpc.OfnetEndpoint) error {
	if skip, err := a.checkRemote(ep); skip || err != nil {
		return err
	}
	return a.change(ctx, "add remote endpoint "+ep.EndpointID, func() func() {
		return a.storeRemoteLocked(ep)
	})
}

// checkRemote reports whether ep is to be ignored here (this host's, or of
// the other encapsulation) or refused.
func (a *Agent) checkRemote(ep ofrpc.OfnetEndpoint) (skip bool, err error) {
	if ep.OriginatorIp.Equal(a.cfg.LocalIP) {
		return true, nil
	}
	if (a.vlanDatapath()) != (ep.Vni == 0) {
		return true, nil
	}
	if ep.EndpointID == "" || ep.IpAddr.To4() == nil {
		return false, fmt.Errorf("agent: remote endpoint %q: id and IPv4 address required", ep.EndpointID)
	}
	if _, err := net.ParseMAC(ep.MacAddrStr); err != nil {
		return false, fmt.Errorf("agent: remote endpoint %q: MAC %q: %w", ep.EndpointID, ep.MacAddrStr, err)
	}
	if ep.EndpointGroup < 0 || ep.EndpointGroup > int(pipeline.DstEPGField.Max()) {
		return false, fmt.Errorf("agent: remote endpoint %q: EPG id %d out of 0..%d", ep.EndpointID,
			ep.EndpointGroup, pipeline.DstEPGField.Max())
	}
	return false, nil
}

// storeRemoteLocked stores ep unless the stored copy is not older, and
// returns the undo (nil: nothing changed).
func (a *Agent) storeRemoteLocked(ep ofrpc.OfnetEndpoint) func() {
	old, ok := a.remotes[ep.EndpointID]
	if ok && !ep.Timestamp.After(old.Timestamp) {
		return nil
	}
	a.remotes[ep.EndpointID] = ep
	return func() {
		if ok {
			a.remotes[ep.EndpointID] = old
		} else {
			delete(a.remotes, ep.EndpointID)
		}
	}
}

// AddRemoteEndpoints handles OfnetAgent.EndpointAddBatch: each endpoint as
// AddRemoteEndpoint would, but with one switch sync for the whole batch (a
// replay of thousands of endpoints would otherwise recompute the flows
// thousands of times). When that sync fails, the endpoints are tried one by
// one, so one the switch refuses does not fail the others. It returns the
// endpoints not added and why.
func (a *Agent) AddRemoteEndpoints(ctx context.Context, eps []ofrpc.OfnetEndpoint) []ofrpc.OfnetBatchFailure {
	var failed []ofrpc.OfnetBatchFailure
	var ok []ofrpc.OfnetEndpoint
	for _, ep := range eps {
		skip, err := a.checkRemote(ep)
		switch {
		case err != nil:
			failed = append(failed, ofrpc.OfnetBatchFailure{EndpointID: ep.EndpointID, Error: err.Error()})
		case !skip:
			ok = append(ok, ep)
		}
	}
	if len(ok) == 0 {
		return failed
	}
	err := a.change(ctx, fmt.Sprintf("add %d remote endpoints", len(ok)), func() func() {
		var undos []func()
		for _, ep := range ok {
			if u := a.storeRemoteLocked(ep); u != nil {
				undos = append(undos, u)
			}
		}
		if len(undos) == 0 {
			return nil
		}
		return func() {
			for i := len(undos) - 1; i >= 0; i-- {
				undos[i]()
			}
		}
	})
	if err == nil {
		return failed
	}
	a.log.WithError(err).WithField("endpoints", len(ok)).Warn("agent: batch of remote endpoints failed: adding them one by one")
	for _, ep := range ok {
		if err := a.AddRemoteEndpoint(ctx, ep); err != nil {
			failed = append(failed, ofrpc.OfnetBatchFailure{EndpointID: ep.EndpointID, Error: err.Error()})
		}
	}
	return failed
}

// RemoveRemoteEndpoint handles OfnetAgent.EndpointDel: unknown ids and deletions
// older than the stored endpoint are ignored.
func (a *Agent) RemoveRemoteEndpoint(ctx context.Context, ep ofrpc.OfnetEndpoint) error {
	return a.change(ctx, "delete remote endpoint "+ep.EndpointID, func() func() {
		old, ok := a.remotes[ep.EndpointID]
		if !ok || (!ep.Timestamp.IsZero() && old.Timestamp.After(ep.Timestamp)) {
			return nil
		}
		delete(a.remotes, ep.EndpointID)
		return func() { a.remotes[ep.EndpointID] = old }
	})
}

// now is the timestamp of pushed endpoints.
func now() time.Time { return time.Now().UTC() }
