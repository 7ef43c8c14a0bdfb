package agent

import (
	"sort"

	"github.com/contiv/netplugin/ofnet/pipeline"
)

// featureVlanBridge is VLAN bridging (docs/dataplane.md §3.3): OVS tags (access ports,
// trunk uplinks) and forwards (NORMAL in table 9); the pipeline only adds metadata
// for policy and lets fabric traffic from uplinks bypass policy.
type featureVlanBridge struct{}

func (featureVlanBridge) name() string { return "vlan-bridge" }

func (featureVlanBridge) flows(s *snapshot, d *desiredState) {
	for _, ep := range s.locals {
		portFlows(s, d, ep, false)
	}
	t := s.table(pipeline.VlanTable)
	ports := make([]uint32, 0, len(s.a.uplinks))
	for p := range s.a.uplinks {
		ports = append(ports, p)
	}
	sort.Slice(ports, func(i, j int) bool { return ports[i] < ports[j] })
	for _, p := range ports {
		key := keyUplink(p)
		d.to(key)(t.BuildFlow(prioVlanFabric).Cookie(pipeline.CookieOf(pipeline.CatUplink, key)).MatchInPort(p).
			Action().GotoTable(pipeline.SrvProxySNATTable).Done())
	}
}
