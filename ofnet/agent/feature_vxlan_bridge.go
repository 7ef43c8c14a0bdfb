package agent

import (
	"sort"

	"github.com/contiv/netplugin/ofnet/ofctrl"
	of "github.com/contiv/netplugin/ofnet/openflow13"
	"github.com/contiv/netplugin/ofnet/pipeline"
)

// Flood group ids are derived from the network vlan, so a restarted agent reuses the
// groups its predecessor left (quirk A11: no process-wide counters).
func localFloodGroup(vlan uint16) uint32 { return 2 * uint32(vlan) }
func allFloodGroup(vlan uint16) uint32   { return 2*uint32(vlan) + 1 }

// featureVxlanBridge is VXLAN bridging (docs/dataplane.md §3.1): local traffic is tagged
// with the network vlan inside the bridge, MAC lookups in table 9, unknown
// destinations flooded through per-network groups, VXLAN tunnels keyed by VNI.
type featureVxlanBridge struct{}

func (featureVxlanBridge) name() string { return "vxlan-bridge" }

func (featureVxlanBridge) flows(s *snapshot, d *desiredState) {
	a := s.a
	vteps := sortedVteps(a.vteps)
	mac := s.table(pipeline.MacDestTable)
	for _, nw := range sortedNetworks(a.networks) {
		key := keyNetwork(nw.Vlan)
		cookie := pipeline.CookieOf(pipeline.CatNetwork, key)
		local := ofctrl.Group{ID: localFloodGroup(nw.Vlan), Type: of.GroupTypeAll}
		for _, ep := range s.locals {
			if ep.Vlan == nw.Vlan {
				local.Buckets = append(local.Buckets, of.NewBucket(of.ActionPopVLAN{}, of.ActionOutput{Port: ep.Port}))
			}
		}
		all := ofctrl.Group{ID: allFloodGroup(nw.Vlan), Type: of.GroupTypeAll,
			Buckets: append([]of.Bucket(nil), local.Buckets...)}
		for _, v := range vteps {
			all.Buckets = append(all.Buckets, of.NewBucket(of.ActionSetField{Field: of.OXMTunnelID(uint64(nw.Vni))},
				of.ActionPopVLAN{}, of.ActionOutput{Port: v.port}))
		}
		d.addGroup(local)
		d.addGroup(all)
		// Unknown destination: from a local port flood everywhere, from a tunnel only
		// locally (the sender's host already flooded to every VTEP).
		d.to(key)(mac.BuildFlow(prioMacFlood).Cookie(cookie).MatchVlan(nw.Vlan).
			MatchMetadata(pipeline.RxVtepField, 0).Action().Group(all.ID).Done())
		d.to(key)(mac.BuildFlow(prioMacFlood).Cookie(cookie).MatchVlan(nw.Vlan).
			MatchMetadata(pipeline.RxVtepField, 1).Action().Group(local.ID).Done())
	}
	vtepIngressFlows(s, d, vteps, true)
	for _, ep := range s.locals {
		portFlows(s, d, ep, true)
		d.to(keyLocal(ep))(mac.BuildFlow(prioMacEndpoint).Cookie(pipeline.CookieOf(pipeline.CatLocalEndpoint, ep.ID)).
			MatchVlan(ep.Vlan).MatchEthDst(ep.MAC).Action().PopVlan().Output(ep.Port).Done())
	}
	for _, ep := range s.remotes {
		d.to(keyRemote(ep))(mac.BuildFlow(prioMacEndpoint).Cookie(pipeline.CookieOf(pipeline.CatRemoteEndpoint, ep.ID)).
			MatchVlan(ep.Vlan).MatchEthDst(ep.MAC).Action().SetTunnelID(uint64(ep.Vni)).PopVlan().
			Output(ep.Port).Done())
	}
}

// vtepIngressFlows: for every VTEP and network, tunnel traffic with the network's VNI
// gets the VRF and RX_VTEP metadata (and, when bridging, the network vlan) and goes to
// table 6 — always 6, whatever the order of events (quirk A3 fixed).
func vtepIngressFlows(s *snapshot, d *desiredState, vteps []vtep, pushVlan bool) {
	t := s.table(pipeline.VlanTable)
	for _, v := range vteps {
		key := keyVtep(v.ip)
		cookie := pipeline.CookieOf(pipeline.CatVtep, v.ip)
		for _, nw := range sortedNetworks(s.a.networks) {
			if nw.Vni == 0 {
				continue
			}
			vrfID, _ := s.a.vrfIDLocked(nw.Vrf)
			ab := t.BuildFlow(prioVlanFabric).Cookie(cookie).MatchInPort(v.port).MatchTunnelID(uint64(nw.Vni)).Action()
			if pushVlan {
				ab = ab.PushVlan(nw.Vlan)
			}
			d.to(key)(ab.SetMetadata(pipeline.VRFField, uint64(vrfID)).SetMetadata(pipeline.RxVtepField, 1).
				GotoTable(pipeline.SrvProxySNATTable).Done())
		}
	}
}

type vtep struct {
	ip   string
	port uint32
}

func sortedVteps(m map[string]uint32) []vtep {
	out := make([]vtep, 0, len(m))
	for ip, p := range m {
		out = append(out, vtep{ip: ip, port: p})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].port < out[j].port })
	return out
}

func sortedNetworks(m map[uint16]*network) []*network {
	out := make([]*network, 0, len(m))
	for _, nw := range m {
		out = append(out, nw)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Vlan < out[j].Vlan })
	return out
}
