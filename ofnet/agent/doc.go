// Package agent is the ofnet agent of one OVS bridge (docs/dataplane.md §3, §4, §6): it
// keeps the desired forwarding state of its datapath (networks, local and remote
// endpoints, VTEPs, uplinks, policy rules, ARP mode), turns it into flows and flood
// groups through the pipeline features of its datapath, and keeps the switch in step
// through an ofctrl controller. It serves the "OfnetAgent" and "PolicyAgent" RPC
// services the ofnet master calls, and pushes its local endpoints to the masters.
//
// # Flow state
//
// Every state change recomputes the desired flows, grouped by the object that owns
// them (endpoint id, VTEP address, rule id, network, ...), diffs them against the
// per-object cache of what was installed, and applies the difference in one batch:
// flood groups first, then InstallFlows (all or nothing), then DeleteFlows by
// identity, then removed groups. If the switch rejects the change the state change is
// undone and the error returned, so the table never holds half of an object. Because
// the flows are a function of the state, the order of events (network before or after
// an endpoint, VTEP before or after a network, a remote endpoint before its VTEP)
// does not matter: the same state gives the same table.
//
// # Restart
//
// The controller runs with ofctrl's DeferFirstResync: flows a previous netplugin
// left on the bridge keep forwarding while the new agent replays its state (cookies
// and flood group ids are deterministic, so replayed flows are identical). After the
// replay the owner calls FinishRestart, which runs the Resync that deletes whatever
// is stale; if nobody calls it, a timer does RestartGrace after the first connect.
// Flows the switch learns for a service's session affinity are not the agent's:
// resyncs keep those of current services (ofctrl Config.KeepUnrecorded) and the
// agent deletes them by cookie when a service's affinity goes (feature_service.go).
//
// Out of scope here (extension points are features): DNS interception, the service
// load balancer, VLAN routing/BGP, host NAT and the stats poller.
package agent
