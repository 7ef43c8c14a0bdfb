package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"

	"github.com/contiv/netplugin/ofnet/ofctrl"
	of "github.com/contiv/netplugin/ofnet/openflow13"
	"github.com/contiv/netplugin/ofnet/pipeline"
)

// NetpolAllow is one allowed peer of a pod under Kubernetes NetworkPolicy: an
// IPv4 prefix, an IP protocol (0: any) and a destination port range (PortMin 0:
// every port; ranges need TCP or UDP).
type NetpolAllow struct {
	Peer    netip.Prefix
	Proto   uint8
	PortMin uint16
	PortMax uint16
}

// NetpolPod is what NetworkPolicy says of one pod: an isolated direction lets
// only new connections its allow list names through; replies of an allowed
// connection always pass (docs/k8s.md, "NetworkPolicy").
type NetpolPod struct {
	IngressIsolated bool
	EgressIsolated  bool
	Ingress         []NetpolAllow
	Egress          []NetpolAllow
}

// ErrNetpolUnsupported is SetNetworkPolicy's error on the vlrouter datapath.
var ErrNetpolUnsupported = errors.New("NetworkPolicy is not enforced on the vlrouter datapath")

// netpolState is the agent's NetworkPolicy input: nil until SetNetworkPolicy.
type netpolState struct {
	pods map[netip.Addr]NetpolPod
}

// SetNetworkPolicy replaces the NetworkPolicy rules, keyed by pod IPv4
// address; the rules of pods attached to this bridge are enforced. The first
// call turns enforcement on: from then on the connections of every local
// endpoint pass the connection tracker. VLAN routing does not enforce
// NetworkPolicy; bad input is an error and changes nothing.
func (a *Agent) SetNetworkPolicy(ctx context.Context, pods map[netip.Addr]NetpolPod) error {
	if a.cfg.Datapath == DatapathVlrouter {
		return fmt.Errorf("agent %s (%s): %w", a.cfg.Bridge, a.cfg.Datapath, ErrNetpolUnsupported)
	}
	for ip, p := range pods {
		if !ip.Is4() {
			return fmt.Errorf("agent: networkpolicy: pod address %v is not IPv4", ip)
		}
		for _, al := range slices.Concat(p.Ingress, p.Egress) {
			if !al.Peer.IsValid() || !al.Peer.Addr().Is4() {
				return fmt.Errorf("agent: networkpolicy of pod %v: peer %v is not an IPv4 prefix", ip, al.Peer)
			}
			if al.PortMin > al.PortMax || (al.PortMin == 0 && al.PortMax != 0) {
				return fmt.Errorf("agent: networkpolicy of pod %v: bad port range %d-%d", ip, al.PortMin, al.PortMax)
			}
			if al.PortMin != 0 && al.Proto == 0 {
				return fmt.Errorf("agent: networkpolicy of pod %v: ports without a protocol", ip)
			}
		}
	}
	st := &netpolState{pods: maps.Clone(pods)}
	return a.change(ctx, "set networkpolicy", func() func() {
		old := a.netpol
		a.netpol = st
		return func() { a.netpol = old }
	})
}

// netpolHookTable is the last table of the datapath's forwarding, where the
// NetworkPolicy hook sits and where allowed packets go back to.
func (a *Agent) netpolHookTable() pipeline.TableID {
	if a.cfg.Datapath == DatapathVrouter {
		return pipeline.IPTable
	}
	return pipeline.MacDestTable
}

// netpolZone is the conntrack zone of NetworkPolicy on this bridge (the
// bridges of one ovs-vswitchd share its connection tracker).
func (a *Agent) netpolZone() uint16 {
	if a.cfg.Datapath == DatapathVlan {
		return 0x4002
	}
	return 0x4001
}

// tcpFlagSYN is the SYN bit of the TCP flags field (RFC 9293). The
// NetworkPolicy flows' priorities are in priorities.go (netpolPrio*).
const tcpFlagSYN = 0x002

// featureNetpol enforces Kubernetes NetworkPolicy, connection-stateful: in the
// bridging table, untracked IPv4 packets from or to a local endpoint go through
// ct(zone) to the state table; established and related ones go back to the
// bridging table; new ones pass the egress table (for isolated local sources)
// and the ingress table (for isolated local destinations), are committed and
// recirculated into the bridging table, now tracked, so the hook no longer matches.
type featureNetpol struct{}

func (featureNetpol) name() string { return "netpol" }

func (featureNetpol) flows(s *snapshot, d *desiredState) {
	a := s.a
	if a.netpol == nil {
		return
	}
	zone := a.netpolZone()
	hookT := a.netpolHookTable()
	cookie := pipeline.CookieOf(pipeline.CatNetpol, "netpol")
	add := d.to("netpol")
	state, egress := s.table(pipeline.NetpolStateTable), s.table(pipeline.NetpolEgressTable)
	ingress, commit := s.table(pipeline.NetpolIngressTable), s.table(pipeline.NetpolCommitTable)
	ct := func(t pipeline.TableID) of.ActionConntrack {
		return of.ActionConntrack{Zone: zone, RecircTable: uint8(t)}
	}
	stateFlow := func(st uint32) *pipeline.FlowBuilder {
		return state.BuildFlow(netpolPrioState).Cookie(cookie).MatchEthType(pipeline.EthTypeIPv4).
			MatchCtState(of.CtStateTrk|st, of.CtStateTrk|st).MatchCtZone(zone)
	}
	add(stateFlow(of.CtStateEst).Action().Resubmit(hookT).Done())
	add(stateFlow(of.CtStateRel).Action().Resubmit(hookT).Done())
	add(stateFlow(of.CtStateInv).Action().Drop().Done())
	// A new TCP packet without SYN cannot open a connection: it belongs to one
	// conntrack has no entry for (lost with a restarted ovs-vswitchd, or missed
	// by the userspace conntrack under load: the replies of an admitted
	// connection were seen classified new). It passes untracked and uncommitted,
	// so policy still decides every connection opening (docs/k8s.md,
	// "NetworkPolicy"; compat K23).
	add(state.BuildFlow(netpolPrioPickup).Cookie(cookie).MatchEthType(pipeline.EthTypeIPv4).
		MatchCtState(of.CtStateTrk|of.CtStateNew, of.CtStateTrk|of.CtStateNew).MatchCtZone(zone).
		MatchTCPFlags(0, tcpFlagSYN).Action().Resubmit(hookT).Done())
	add(state.BuildFlow(netpolPrioNew).Cookie(cookie).MatchEthType(pipeline.EthTypeIPv4).
		MatchCtState(of.CtStateTrk|of.CtStateNew, of.CtStateTrk|of.CtStateNew).MatchCtZone(zone).
		Action().GotoTable(pipeline.NetpolEgressTable).Done())
	add(state.BuildFlow(pipeline.MissPriority).Cookie(cookie).Action().Drop().Done())
	add(egress.BuildFlow(pipeline.MissPriority).Cookie(cookie).Action().GotoTable(pipeline.NetpolIngressTable).Done())
	add(ingress.BuildFlow(pipeline.MissPriority).Cookie(cookie).Action().GotoTable(pipeline.NetpolCommitTable).Done())
	// Commit and recirculate straight into the bridging table: a ct without
	// recirculation leaves the packet untracked again (OVS clears ct_state), and the
	// hook would send it round once more.
	add(commit.BuildFlow(pipeline.MissPriority).Cookie(cookie).MatchEthType(pipeline.EthTypeIPv4).Action().
		Conntrack(of.ActionConntrack{Flags: of.NXCTFlagCommit, Zone: zone, RecircTable: uint8(hookT)}).Done())

	mac := s.table(hookT)
	seenIP := map[netip.Addr]bool{}
	for _, ep := range s.locals {
		ip4 := ep.IP.To4()
		if ip4 == nil {
			continue
		}
		ip, _ := netip.AddrFromSlice(ip4)
		if seenIP[ip] {
			continue
		}
		seenIP[ip] = true
		key := "netpol:" + ip.String()
		pc := pipeline.CookieOf(pipeline.CatNetpol, ip.String())
		hook := d.to(key)
		hook(mac.BuildFlow(netpolPrioHook).Cookie(pc).MatchIPv4Src(ip4, nil).MatchCtState(0, of.CtStateTrk).
			Action().Conntrack(ct(pipeline.NetpolStateTable)).Done())
		hook(mac.BuildFlow(netpolPrioHook).Cookie(pc).MatchIPv4Dst(ip4, nil).MatchCtState(0, of.CtStateTrk).
			Action().Conntrack(ct(pipeline.NetpolStateTable)).Done())
		pod, ok := a.netpol.pods[ip]
		if !ok {
			continue
		}
		seen := map[ofctrl.FlowKey]bool{}
		out := func(f ofctrl.Flow, err error) {
			if err == nil {
				if seen[f.Key()] {
					return
				}
				seen[f.Key()] = true
			}
			d.add(key, f, err)
		}
		if pod.EgressIsolated {
			for _, al := range pod.Egress {
				netpolAllowFlows(egress, pc, ip4, al, false, pipeline.NetpolIngressTable, out)
			}
			out(egress.BuildFlow(netpolPrioDeny).Cookie(pc).MatchIPv4Src(ip4, nil).Action().Drop().Done())
		}
		if pod.IngressIsolated {
			for _, al := range pod.Ingress {
				netpolAllowFlows(ingress, pc, ip4, al, true, pipeline.NetpolCommitTable, out)
			}
			out(ingress.BuildFlow(netpolPrioDeny).Cookie(pc).MatchIPv4Dst(ip4, nil).Action().Drop().Done())
		}
	}
}

// netpolAllowFlows adds the flows of one allow entry of pod ip: for ingress
// the peer is the source and ip the destination, for egress the reverse. A
// port range becomes masked port matches; a port on another protocol than
// TCP or UDP (SCTP) cannot be matched here and allows nothing.
func netpolAllowFlows(t *pipeline.Table, cookie uint64, ip net.IP, al NetpolAllow, ingress bool,
	next pipeline.TableID, out func(ofctrl.Flow, error)) {
	peer := net.IP(al.Peer.Masked().Addr().AsSlice())
	mask := net.CIDRMask(al.Peer.Bits(), 32)
	base := func() *pipeline.FlowBuilder {
		fb := t.BuildFlow(netpolPrioAllow).Cookie(cookie)
		if ingress {
			fb = fb.MatchIPv4Dst(ip, nil)
			if al.Peer.Bits() > 0 {
				fb = fb.MatchIPv4Src(peer, mask)
			}
		} else {
			fb = fb.MatchIPv4Src(ip, nil)
			if al.Peer.Bits() > 0 {
				fb = fb.MatchIPv4Dst(peer, mask)
			}
		}
		if al.Proto != 0 {
			fb = fb.MatchIPProto(al.Proto)
		}
		return fb
	}
	if al.PortMin == 0 {
		out(base().Action().GotoTable(next).Done())
		return
	}
	if al.Proto != pipeline.ProtoTCP && al.Proto != pipeline.ProtoUDP {
		return
	}
	for _, r := range portMasks(al.PortMin, al.PortMax) {
		out(base().MatchL4DstMasked(al.Proto, r[0], r[1]).Action().GotoTable(next).Done())
	}
}

// portMasks covers [lo, hi] with value/mask pairs (the fewest aligned blocks).
func portMasks(lo, hi uint16) [][2]uint16 {
	var out [][2]uint16
	l, h := uint32(lo), uint32(hi)
	for l <= h {
		size := uint32(1)
		for l&(size*2-1) == 0 && l+size*2-1 <= h && size < 1<<16 {
			size *= 2
		}
		out = append(out, [2]uint16{uint16(l), uint16(^(size - 1))})
		l += size
	}
	return out
}

// NetpolFlowCount is the number of NetworkPolicy flows the agent wants on its
// switch (the hook, state, allow and deny flows), for benchmarks and inspect.
func (a *Agent) NetpolFlowCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for obj, m := range a.cache {
		if obj == "netpol" || len(obj) > 7 && obj[:7] == "netpol:" {
			n += len(m)
		}
	}
	return n
}
