package agent

import (
	"context"
	"net"
	"sort"

	"github.com/contiv/netplugin/ofnet/ofctrl"
	of "github.com/contiv/netplugin/ofnet/openflow13"
	"github.com/contiv/netplugin/ofnet/packet"
	"github.com/contiv/netplugin/ofnet/pipeline"
)

// DNS interception (docs/dns.md): DNS queries from containers
// (source MAC 02:02:…) go to the agent, which asks the name server of its owner for
// the query's tenant. An answer goes straight back to the container; a query the name
// server does not answer is re-injected with VLAN 4093, which a flow strips before the
// query continues on its normal path. Queries from the fabric are never intercepted.

const (
	dnsPort         = 53
	dnsReinjectVlan = 4093
	// maxDNSAnswer is the largest answer sent back (bigger ones are not sent).
	maxDNSAnswer = 1024
)

// containerMAC and its mask select the MACs contiv gives its endpoints.
var (
	containerMAC     = net.HardwareAddr{0x02, 0x02, 0, 0, 0, 0}
	containerMACMask = net.HardwareAddr{0xff, 0xff, 0, 0, 0, 0}
)

// DNSLookup answers a raw DNS query from a container of tenant vrf: the packed answer
// and true, or false to let the query continue unanswered. It must not call back
// into the agent.
type DNSLookup func(query []byte, vrf string) ([]byte, bool)

// featureDNS installs the interception flows when the agent has a name server.
type featureDNS struct{}

func (featureDNS) name() string { return "dns" }

func (featureDNS) flows(s *snapshot, d *desiredState) {
	if s.a.cfg.DNSLookup == nil {
		return
	}
	t := s.table(pipeline.ClassifierTable)
	cookie := pipeline.CookieOf(pipeline.CatDNS, "dns")
	d.to("dns")(t.BuildFlow(prioClassifierRedirect).Cookie(cookie).MatchEthSrcMasked(containerMAC, containerMACMask).
		MatchUDPDst(dnsPort).Action().Controller().Done())
	d.to("dns")(t.BuildFlow(prioClassifierDNSReinject).Cookie(cookie).MatchVlan(dnsReinjectVlan).
		MatchEthSrcMasked(containerMAC, containerMACMask).MatchUDPDst(dnsPort).
		Action().PopVlan().GotoTable(pipeline.VlanTable).Done())
	var fabric []uint32
	for _, p := range s.a.vteps {
		fabric = append(fabric, p)
	}
	for p := range s.a.uplinks {
		fabric = append(fabric, p)
	}
	sort.Slice(fabric, func(i, j int) bool { return fabric[i] < fabric[j] })
	for _, p := range fabric {
		d.to("dns")(t.BuildFlow(prioClassifierDNSFabric).Cookie(cookie).MatchInPort(p).MatchUDPDst(dnsPort).
			Action().GotoTable(pipeline.VlanTable).Done())
	}
}

func (f featureDNS) handlePacketIn(a *Agent, sw *ofctrl.Switch, pi *of.PacketIn) bool {
	handled, po := f.decide(a, pi)
	if po == nil {
		return handled
	}
	ctx, cancel := context.WithTimeout(context.Background(), packetOutTimeout)
	defer cancel()
	if err := sw.PacketOut(ctx, po); err != nil {
		a.log.WithError(err).Debug("agent: DNS packet-out failed")
	}
	return true
}

// decide parses a packet-in and returns whether it was a DNS query (consumed) and
// the packet-out to send: the answer, the re-injected query, or nil to drop it. It
// never panics on any input (FuzzDNSPacketIn).
func (featureDNS) decide(a *Agent, pi *of.PacketIn) (bool, *of.PacketOut) {
	if a.cfg.DNSLookup == nil {
		return false, nil
	}
	eth, err := packet.ParseEthernet(pi.Data)
	if err != nil || eth.EtherType != packet.EtherTypeIPv4 {
		return false, nil
	}
	ip, err := packet.ParseIPv4(eth.Payload)
	if err != nil || ip.Protocol != packet.ProtoUDP || ip.IsFragment() {
		return false, nil
	}
	udp, err := packet.ParseUDP(ip.Payload)
	if err != nil || udp.DstPort != dnsPort {
		return false, nil
	}
	inPort, ok := pi.Match.InPort()
	if !ok || eth.HasTag() {
		return true, nil // queries from the fabric carry a tag: never ours
	}
	if _, tunneled := pi.Match.Basic(of.OXMFieldTunnelID); tunneled && a.cfg.Datapath == DatapathVrouter {
		return true, nil
	}
	a.mu.Lock()
	fromFabric := false
	for _, p := range a.vteps {
		fromFabric = fromFabric || p == inPort
	}
	if _, ok := a.uplinks[inPort]; ok {
		fromFabric = true
	}
	vrf := ""
	if l, ok := a.locals[inPort]; ok {
		if nw, ok := a.networks[l.Vlan]; ok {
			vrf = nw.Vrf
		}
	}
	a.mu.Unlock()
	if fromFabric {
		return true, nil
	}
	if vrf != "" {
		if answer, ok := a.cfg.DNSLookup(udp.Payload, vrf); ok && len(answer) <= maxDNSAnswer {
			return true, of.NewPacketOut(dnsReplyFrame(eth, ip, udp, answer), of.ActionOutput{Port: inPort})
		}
	}
	// Not ours to answer: let the query go on, tagged so the interception skips it.
	// Its UDP checksum is cleared (valid over IPv4): a query from a port with
	// checksum offload carries only a partial one, which no hop completes now.
	u := *udp
	u.Checksum = 0
	p := *ip
	p.Payload = u.Marshal()
	tagged := *eth
	tagged.VLAN, tagged.Tagged, tagged.Payload = dnsReinjectVlan, true, p.Marshal()
	po := of.NewPacketOut(tagged.Marshal(), of.ActionOutput{Port: of.OFPPTable})
	po.InPort = inPort
	return true, po
}

// dnsReplyFrame builds the answer to a query frame: addresses and ports swapped,
// IPv4 header without options, TTL 64, id, flags and TOS copied, UDP checksum 0.
func dnsReplyFrame(eth *packet.Ethernet, ip *packet.IPv4, udp *packet.UDP, answer []byte) []byte {
	u := packet.UDP{SrcPort: udp.DstPort, DstPort: udp.SrcPort, Payload: answer}
	p := packet.IPv4{TOS: ip.TOS, ID: ip.ID, Flags: ip.Flags, FragOff: ip.FragOff, TTL: 64,
		Protocol: packet.ProtoUDP, Src: ip.Dst, Dst: ip.Src, Payload: u.Marshal()}
	e := packet.Ethernet{Dst: eth.Src, Src: eth.Dst, VLAN: eth.VLAN, PCP: eth.PCP, Tagged: eth.Tagged,
		EtherType: packet.EtherTypeIPv4, Payload: p.Marshal()}
	return e.Marshal()
}
