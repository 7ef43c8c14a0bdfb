// Package pipeline is the flow framework of the ofnet agent (docs/dataplane.md §3.0,
// docs/style.md 12–14, 16, 18): the table registry with each table's miss action, the typed
// metadata fields, a fluent flow builder that produces immutable ofctrl.Flows and
// refuses flows OVS would reject, object cookies, and a renderer in
// `ovs-ofctl -O OpenFlow13 dump-flows` syntax shared by golden tests and inspect output.
//
//	tables := pipeline.NewRegistry(pipeline.Misses{pipeline.VlanTable: pipeline.MissDrop()})
//	f, err := tables.Get(pipeline.VlanTable).BuildFlow(10).
//		Cookie(pipeline.CookieOf(pipeline.CatLocalEndpoint, "10.1.1.5:t1")).
//		MatchInPort(3).
//		Action().PushVlan(1).SetMetadata(pipeline.VRFField, 1).SetMetadata(pipeline.SrcEPGField, 5).
//		GotoTable(pipeline.SrvProxyDNATTable).Done()
//
// Nothing here talks to a switch: pipelines hand the flows to ofctrl.Switch.
package pipeline
