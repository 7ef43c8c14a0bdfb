package agent

import (
	"fmt"
	"net"
	"sort"
	"strings"

	"github.com/contiv/netplugin/ofnet/ofctrl"
	"github.com/contiv/netplugin/ofnet/ofrpc"
	"github.com/contiv/netplugin/ofnet/pipeline"
)

// featurePolicy is the policy agent (docs/dataplane.md §4): table 4 tags packets with the
// destination EPG of every known endpoint, table 5 holds the rules. Default allow;
// enforced on the source host only.
type featurePolicy struct{ ipv6 bool }

func (featurePolicy) name() string { return "policy" }

func (f featurePolicy) flows(s *snapshot, d *desiredState) {
	t := s.table(pipeline.DstGroupTable)
	dstGroup := func(key string, cookie uint64, ep endpoint) {
		d.to(key)(t.BuildFlow(prioDstGroup).Cookie(cookie).MatchIPv4Dst(ep.IP, nil).
			MatchMetadata(pipeline.VRFField, uint64(ep.VrfID)).
			Action().SetMetadata(pipeline.DstEPGField, uint64(ep.EPG)).GotoTable(pipeline.PolicyTable).Done())
		if f.ipv6 && ep.IPv6 != nil {
			d.to(key)(t.BuildFlow(prioDstGroup).Cookie(cookie).MatchIPv6Dst(ep.IPv6).
				MatchMetadata(pipeline.VRFField, uint64(ep.VrfID)).
				Action().SetMetadata(pipeline.DstEPGField, uint64(ep.EPG)).GotoTable(pipeline.PolicyTable).Done())
		}
	}
	for _, ep := range s.locals {
		dstGroup(keyLocal(ep), pipeline.CookieOf(pipeline.CatLocalEndpoint, ep.ID), ep)
	}
	for _, ep := range s.remotes {
		dstGroup(keyRemote(ep), pipeline.CookieOf(pipeline.CatRemoteEndpoint, ep.ID), ep)
	}
	ids := make([]string, 0, len(s.a.rules))
	for id := range s.a.rules {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		d.to(keyRule(id))(ruleFlow(s.a.tables.Get(pipeline.PolicyTable), s.a.rules[id]))
	}
}

// tcpFlagSpecs are the accepted TcpFlags strings and their value/mask (§4.3).
var tcpFlagSpecs = map[string][2]uint16{
	"syn": {0x02, 0x02}, "syn,ack": {0x12, 0x12}, "ack": {0x10, 0x10},
	"syn,!ack": {0x02, 0x12}, "!syn,ack": {0x10, 0x12},
}

// parseRuleAddr accepts "a.b.c.d" (a host) or a CIDR.
func parseRuleAddr(s string) (net.IP, net.IPMask, error) {
	if strings.Contains(s, "/") {
		_, n, err := net.ParseCIDR(s)
		if err != nil || n.IP.To4() == nil {
			return nil, nil, fmt.Errorf("address %q is not an IPv4 CIDR", s)
		}
		return n.IP.To4(), n.Mask, nil
	}
	ip := net.ParseIP(s).To4()
	if ip == nil {
		return nil, nil, fmt.Errorf("address %q is not IPv4", s)
	}
	return ip, nil, nil
}

// ruleFlow turns a policy rule into its table-5 flow, validating every field.
func ruleFlow(t *pipeline.Table, r ofrpc.OfnetPolicyRule) (ofctrl.Flow, error) {
	fail := func(format string, args ...any) (ofctrl.Flow, error) {
		return ofctrl.Flow{}, fmt.Errorf("agent: rule %q: %s", r.RuleId, fmt.Sprintf(format, args...))
	}
	if r.RuleId == "" {
		return fail("empty RuleId")
	}
	if r.Priority < 1 || r.Priority > 100 {
		return fail("priority %d out of 1..100", r.Priority)
	}
	fb := t.BuildFlow(prioRuleBase + uint16(r.Priority)).Cookie(pipeline.CookieOf(pipeline.CatRule, r.RuleId)).
		MatchEthType(pipeline.EthTypeIPv4)
	if r.SrcIpAddr != "" {
		ip, mask, err := parseRuleAddr(r.SrcIpAddr)
		if err != nil {
			return fail("SrcIpAddr: %v", err)
		}
		fb = fb.MatchIPv4Src(ip, mask)
	}
	if r.DstIpAddr != "" {
		ip, mask, err := parseRuleAddr(r.DstIpAddr)
		if err != nil {
			return fail("DstIpAddr: %v", err)
		}
		fb = fb.MatchIPv4Dst(ip, mask)
	}
	if r.IpProtocol != 0 {
		fb = fb.MatchIPProto(r.IpProtocol)
	}
	switch r.IpProtocol {
	case pipeline.ProtoTCP:
		if r.SrcPort != 0 {
			fb = fb.MatchTCPSrc(r.SrcPort)
		}
		if r.DstPort != 0 {
			fb = fb.MatchTCPDst(r.DstPort)
		}
	case pipeline.ProtoUDP:
		if r.SrcPort != 0 {
			fb = fb.MatchUDPSrc(r.SrcPort)
		}
		if r.DstPort != 0 {
			fb = fb.MatchUDPDst(r.DstPort)
		}
	}
	if r.TcpFlags != "" {
		spec, ok := tcpFlagSpecs[r.TcpFlags]
		if !ok {
			return fail("TcpFlags %q: want syn, ack, syn,ack, syn,!ack or !syn,ack", r.TcpFlags)
		}
		if r.IpProtocol != pipeline.ProtoTCP {
			return fail("TcpFlags %q need IpProtocol 6", r.TcpFlags)
		}
		fb = fb.MatchTCPFlags(spec[0], spec[1])
	}
	if r.SrcEndpointGroup < 0 || r.DstEndpointGroup < 0 {
		return fail("negative EPG id")
	}
	if r.SrcEndpointGroup != 0 {
		fb = fb.MatchMetadata(pipeline.SrcEPGField, uint64(r.SrcEndpointGroup))
	}
	if r.DstEndpointGroup != 0 {
		fb = fb.MatchMetadata(pipeline.DstEPGField, uint64(r.DstEndpointGroup))
	}
	var f ofctrl.Flow
	var err error
	switch r.Action {
	case "allow":
		f, err = fb.Action().GotoTable(pipeline.SrvProxySNATTable).Done()
	case "deny":
		f, err = fb.Action().Drop().Done()
	default:
		return fail("action %q: want allow or deny", r.Action)
	}
	if err != nil {
		return ofctrl.Flow{}, fmt.Errorf("agent: rule %q: %w", r.RuleId, err)
	}
	return f, nil
}
