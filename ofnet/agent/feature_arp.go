package agent

import (
	"context"
	"net"
	"time"

	"github.com/contiv/netplugin/ofnet/ofctrl"
	of "github.com/contiv/netplugin/ofnet/openflow13"
	"github.com/contiv/netplugin/ofnet/packet"
	"github.com/contiv/netplugin/ofnet/pipeline"
)

// packetOutTimeout bounds the packet-outs of one packet-in.
const packetOutTimeout = 5 * time.Second

// featureARP is ARP handling (docs/dataplane.md §3.5). Bridging datapaths redirect ARP
// requests to the agent in proxy mode (in flood mode they follow the flood flows);
// VXLAN routing sends every ARP to the agent, which answers with the router MAC.
type featureARP struct{}

func (featureARP) name() string { return "arp" }

func (featureARP) flows(s *snapshot, d *desiredState) {
	t := s.table(pipeline.ClassifierTable)
	cookie := pipeline.CookieOf(pipeline.CatArpMode, "arp")
	switch {
	case s.a.cfg.Datapath == DatapathVrouter || s.a.cfg.Datapath == DatapathVlrouter:
		d.to("arp")(t.BuildFlow(prioClassifierRedirect).Cookie(cookie).MatchEthType(pipeline.EthTypeARP).Action().Controller().Done())
	case !s.a.arpFlood:
		d.to("arp")(t.BuildFlow(prioClassifierRedirect).Cookie(cookie).MatchARPOp(packet.ARPRequest).Action().Controller().Done())
	}
}

// arpContext is where an ARP request came from.
type arpContext struct {
	vrf        string
	vni        uint32 // VXLAN: the network's VNI
	vlan       uint16
	fromFabric bool // from a VTEP or an uplink
	tunnel     bool // reply needs set_field tun_id
	ok         bool
}

func (f featureARP) handlePacketIn(a *Agent, sw *ofctrl.Switch, pi *of.PacketIn) bool {
	handled, pos := f.decide(a, pi)
	if len(pos) == 0 {
		return handled
	}
	ctx, cancel := context.WithTimeout(context.Background(), packetOutTimeout)
	defer cancel()
	for _, po := range pos {
		if err := sw.PacketOut(ctx, po); err != nil {
			a.log.WithError(err).Debug("agent: ARP packet-out failed")
		}
	}
	return true
}

// decide parses a packet-in and returns whether it was ARP (consumed) and the
// packet-outs to send. It never panics on any input (FuzzARPPacketIn).
func (featureARP) decide(a *Agent, pi *of.PacketIn) (bool, []*of.PacketOut) {
	eth, err := packet.ParseEthernet(pi.Data)
	if err != nil || eth.EtherType != packet.EtherTypeARP {
		return false, nil
	}
	req, err := packet.ParseARP(eth.Payload)
	if err != nil || req.Op != packet.ARPRequest || req.IsGratuitous() {
		return true, nil // ARP replies and gratuitous requests are dropped
	}
	inPort, ok := pi.Match.InPort()
	if !ok {
		return true, nil
	}
	if a.cfg.Datapath == DatapathVrouter || a.cfg.Datapath == DatapathVlrouter {
		return true, a.arpRouting(inPort, eth, req)
	}
	return true, a.arpBridging(inPort, pi, eth, req)
}

// arpSourceLocked works out the vlan/VRF of a request from its ingress port. Requests
// from a VTEP carry the VNI in the packet-in's tunnel_id (quirk A4 fixed: they are
// looked up in the right network instead of vlan 0).
func (a *Agent) arpSourceLocked(inPort uint32, pi *of.PacketIn, eth *packet.Ethernet) arpContext {
	for _, p := range a.vteps {
		if p != inPort {
			continue
		}
		tun, ok := pi.Match.Basic(of.OXMFieldTunnelID)
		if !ok {
			return arpContext{}
		}
		nw := a.networkByVniLocked(uint32(tun.Uint()))
		if nw == nil {
			return arpContext{}
		}
		return arpContext{vrf: nw.Vrf, vni: nw.Vni, vlan: nw.Vlan, fromFabric: true, tunnel: true, ok: true}
	}
	if _, ok := a.uplinks[inPort]; ok {
		for _, nw := range a.networks {
			if nw.Vlan == eth.VLAN {
				return arpContext{vrf: nw.Vrf, vlan: nw.Vlan, fromFabric: true, ok: true}
			}
		}
		for _, l := range a.locals {
			if l.EndpointGroupVlan == eth.VLAN && eth.VLAN != 0 {
				if nw, ok := a.networks[l.Vlan]; ok {
					return arpContext{vrf: nw.Vrf, vlan: eth.VLAN, fromFabric: true, ok: true}
				}
			}
		}
		return arpContext{}
	}
	l, ok := a.locals[inPort]
	if !ok {
		return arpContext{}
	}
	nw, ok := a.networks[l.Vlan]
	if !ok {
		return arpContext{}
	}
	return arpContext{vrf: nw.Vrf, vni: nw.Vni, vlan: nw.Vlan, ok: true}
}

// lookupLocked finds a resolved endpoint by IPv4 address and VRF.
func (a *Agent) lookupLocked(ip net.IP, vrf string) (endpoint, bool) {
	for _, ep := range a.localEndpointsLocked() {
		if ep.Vrf == vrf && ep.IP.Equal(ip) {
			return ep, true
		}
	}
	for _, ep := range a.remoteEndpointsLocked() {
		if ep.Vrf == vrf && ep.IP.Equal(ip) {
			return ep, true
		}
	}
	return endpoint{}, false
}

// arpBridging implements the bridging decision table of §3.5.
func (a *Agent) arpBridging(inPort uint32, pi *of.PacketIn, eth *packet.Ethernet, req *packet.ARP) []*of.PacketOut {
	a.mu.Lock()
	defer a.mu.Unlock()
	src := a.arpSourceLocked(inPort, pi, eth)
	if !src.ok {
		return nil
	}
	sep, srcKnown := a.lookupLocked(req.SenderIP, src.vrf)
	tep, tgtKnown := a.lookupLocked(req.TargetIP, src.vrf)
	switch {
	case !srcKnown && !tgtKnown:
		return nil
	case src.fromFabric && !(tgtKnown && tep.Local):
		return nil
	case tgtKnown && (srcKnown || tep.Local):
		var acts []of.Action
		if src.tunnel {
			acts = append(acts, of.ActionSetField{Field: of.OXMTunnelID(uint64(src.vni))})
		}
		acts = append(acts, of.ActionOutput{Port: inPort})
		return []*of.PacketOut{of.NewPacketOut(packet.ARPReplyFrame(eth, req, tep.MAC), acts...)}
	case !tgtKnown && !src.fromFabric && a.isServiceVIPLocked(req.TargetIP, src.vrf):
		return []*of.PacketOut{of.NewPacketOut(packet.ARPReplyFrame(eth, req, serviceProxyMAC(req.TargetIP)),
			of.ActionOutput{Port: inPort})}
	case srcKnown && !tgtKnown && sep.Local:
		return a.arpToFabricLocked(sep, pi.Data, eth)
	}
	return nil
}

// arpToFabricLocked forwards a request for an unknown target to the fabric: every
// VTEP with the source's VNI (VXLAN), or one uplink member re-tagged with the
// source's EPG vlan (VLAN).
func (a *Agent) arpToFabricLocked(sep endpoint, frame []byte, eth *packet.Ethernet) []*of.PacketOut {
	if a.cfg.Datapath == DatapathVxlan {
		vteps := sortedVteps(a.vteps)
		if len(vteps) == 0 {
			return nil
		}
		acts := []of.Action{of.ActionSetField{Field: of.OXMTunnelID(uint64(sep.Vni))}}
		for _, v := range vteps {
			acts = append(acts, of.ActionOutput{Port: v.port})
		}
		return []*of.PacketOut{of.NewPacketOut(frame, acts...)}
	}
	port, ok := a.uplinkForLocked(sep.MAC.String())
	if !ok {
		return nil
	}
	vlan := sep.EPGVlan
	if vlan == 0 {
		vlan = sep.Vlan
	}
	tagged := *eth
	tagged.VLAN, tagged.Tagged = vlan, true
	return []*of.PacketOut{of.NewPacketOut(tagged.Marshal(), of.ActionOutput{Port: port})}
}

// arpRouting answers requests from local ports for any known endpoint or gateway in
// the port's VRF with the router MAC (§3.5, VXLAN routing).
func (a *Agent) arpRouting(inPort uint32, eth *packet.Ethernet, req *packet.ARP) []*of.PacketOut {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.host != nil && inPort == a.host.Port {
		// Whatever the host asks through contivh0 is answered with the router
		// MAC (docs/dataplane.md §3.7).
		return []*of.PacketOut{of.NewPacketOut(packet.ARPReplyFrame(eth, req, routerMAC), of.ActionOutput{Port: inPort})}
	}
	l, ok := a.locals[inPort]
	if !ok {
		return nil
	}
	nw, ok := a.networks[l.Vlan]
	if !ok {
		return nil
	}
	_, known := a.lookupLocked(req.TargetIP, nw.Vrf)
	if !known {
		for _, n := range a.networks {
			if n.Vrf == nw.Vrf && n.Gateway != nil && n.Gateway.Equal(req.TargetIP) {
				known = true
			}
		}
	}
	if !known && a.cfg.Datapath == DatapathVlrouter && !req.TargetIP.Equal(l.IpAddr) {
		// VLAN routing: addresses behind the BGP peer (docs/dataplane.md §3.5).
		known = a.bgpRouteCoversLocked(req.TargetIP)
	}
	mac := routerMAC
	if !known && a.isServiceVIPLocked(req.TargetIP, nw.Vrf) {
		known, mac = true, serviceProxyMAC(req.TargetIP)
	}
	if !known {
		return nil
	}
	untagged := *eth
	untagged.VLAN, untagged.Tagged = 0, false
	return []*of.PacketOut{of.NewPacketOut(packet.ARPReplyFrame(&untagged, req, mac), of.ActionOutput{Port: inPort})}
}
