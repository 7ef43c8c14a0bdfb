package agent

import (
	"github.com/contiv/netplugin/ofnet/pipeline"
)

// featureVxlanRouting is VXLAN routing (docs/dataplane.md §3.2): no vlan inside the
// bridge, an IP table per VRF; local destinations get the router MAC as source and
// their own MAC as destination, remote ones leave through their host's VTEP with the
// router MAC as destination.
type featureVxlanRouting struct{}

func (featureVxlanRouting) name() string { return "vxlan-routing" }

func (featureVxlanRouting) flows(s *snapshot, d *desiredState) {
	vtepIngressFlows(s, d, sortedVteps(s.a.vteps), false)
	ipt := s.table(pipeline.IPTable)
	for _, ep := range s.locals {
		portFlows(s, d, ep, false)
		cookie := pipeline.CookieOf(pipeline.CatLocalEndpoint, ep.ID)
		d.to(keyLocal(ep))(ipt.BuildFlow(prioIPEndpoint).Cookie(cookie).MatchIPv4Dst(ep.IP, nil).
			MatchMetadata(pipeline.VRFField, uint64(ep.VrfID)).
			Action().SetEthSrc(routerMAC).SetEthDst(ep.MAC).Output(ep.Port).Done())
		if ep.IPv6 != nil {
			d.to(keyLocal(ep))(ipt.BuildFlow(prioIPEndpoint).Cookie(cookie).MatchIPv6Dst(ep.IPv6).
				MatchMetadata(pipeline.VRFField, uint64(ep.VrfID)).
				Action().SetEthSrc(routerMAC).SetEthDst(ep.MAC).Output(ep.Port).Done())
		}
	}
	for _, ep := range s.remotes {
		cookie := pipeline.CookieOf(pipeline.CatRemoteEndpoint, ep.ID)
		d.to(keyRemote(ep))(ipt.BuildFlow(prioIPEndpoint).Cookie(cookie).MatchIPv4Dst(ep.IP, nil).
			MatchMetadata(pipeline.VRFField, uint64(ep.VrfID)).
			Action().SetTunnelID(uint64(ep.Vni)).SetEthDst(routerMAC).Output(ep.Port).Done())
		if ep.IPv6 != nil {
			d.to(keyRemote(ep))(ipt.BuildFlow(prioIPEndpoint).Cookie(cookie).MatchIPv6Dst(ep.IPv6).
				MatchMetadata(pipeline.VRFField, uint64(ep.VrfID)).
				Action().SetTunnelID(uint64(ep.Vni)).SetEthDst(routerMAC).Output(ep.Port).Done())
		}
	}
}
