package agent

// Flow priorities, one block per table (docs/dataplane.md §3.0.1, §3.0.2).
// In every table the miss flow has pipeline.MissPriority (1), below all of
// these. Within a table a higher priority wins; where two flows could
// match the same packet the comment says which must win. Flows of
// different tables never compete, so equal numbers across blocks mean
// nothing. TestPipelinesGolden (testdata/pipelines.golden) pins them.

// ClassifierTable (0): drops and redirects ahead of everything, then the
// per-port exceptions that must beat the redirects.
const (
	// prioClassifierHostAccess: contivh0's packets go to the host DNAT
	// table; below the redirects, so the host's own DNS and ARP are still
	// intercepted.
	prioClassifierHostAccess uint16 = 99
	// prioClassifierRedirect: multicast-source and link-local noise drops,
	// ARP to the controller, a container's DNS query to the controller.
	prioClassifierRedirect uint16 = 100
	// prioClassifierDNSReinject: a DNS query the agent re-injects (tagged
	// dnsReinjectVlan) passes on; above the DNS redirect it also matches.
	prioClassifierDNSReinject uint16 = 101
	// prioClassifierBGP: the BGP port's traffic to and from the uplink
	// (vlrouter); above the ARP redirect, which would take the peer's ARP.
	prioClassifierBGP uint16 = 101
	// prioClassifierDNSFabric: DNS from a VTEP or uplink (another host's
	// container) is not intercepted here; above the DNS redirect.
	prioClassifierDNSFabric uint16 = 102
)

// VlanTable (1): the port, tunnel and uplink classification.
const (
	// prioVlanPort: a local endpoint's port flow (vlan, VRF, source EPG).
	prioVlanPort uint16 = 10
	// prioVlanPortDSCP: the same port's IPv4 and IPv6 flows that also set
	// the endpoint's DSCP; above prioVlanPort.
	prioVlanPortDSCP uint16 = 100
	// prioVlanFabric: a VTEP's (per VNI) or an uplink's ingress flow.
	prioVlanFabric uint16 = 100
)

// HostDNATTable (2): one flow per endpoint reachable at its private
// address (host access).
const prioHostDNAT uint16 = 100

// SrvProxyDNATTable (3): the service load balancer.
const (
	// prioSvcInvalid: tracked-invalid packets of a service zone are
	// dropped; above every VIP flow.
	prioSvcInvalid uint16 = 110
	// prioSvcVIP: the lookup, new-connection and provider flows.
	prioSvcVIP uint16 = 100
)

// SrvAffinityTable (14): the flows the switch learns for session affinity
// (one per client, VIP and port), above the table's miss flow.
const prioSvcAffinityLearned uint16 = 100

// SrvAffinityDNATTable (15): session affinity's DNAT.
const (
	// prioSvcAffinityBound: a connection whose registers name a provider of
	// the port (bound, or just picked by the group) is committed to it.
	prioSvcAffinityBound uint16 = 100
	// prioSvcAffinityPick: otherwise the select group picks one; below the
	// bound flows.
	prioSvcAffinityPick uint16 = 90
)

// DstGroupTable (4): destination address → destination EPG.
const prioDstGroup uint16 = 100

// PolicyTable (5): a rule of priority p (1..100) gets prioRuleBase+p, so
// every rule is above the table's miss flow and the order of the rules'
// own priorities is kept.
const prioRuleBase uint16 = 10

// SrvProxySNATTable (6): replies of providers get the VIP back.
const prioSvcReply uint16 = 100

// IPTable (7): routing.
const (
	// prioIPHostDrop: packets from contivh0 that no other flow routes are
	// dropped (host access); below every route.
	prioIPHostDrop uint16 = 10
	// prioIPEndpoint: a local or remote endpoint's route (VXLAN routing),
	// a local endpoint's IPv6 route (vlrouter).
	prioIPEndpoint uint16 = 100
	// prioIPBGPRoute: a route learned by BGP (vlrouter); below a local
	// endpoint's own route.
	prioIPBGPRoute uint16 = 101
	// prioIPLocalVlr: a local endpoint's IPv4 route (vlrouter); above a
	// learned route covering its address.
	prioIPLocalVlr uint16 = 102
)

// HostSNATTable (8): egress through contivh0 (host access).
const (
	// prioHostSNATEndpoint: an endpoint's traffic to the host, source
	// translated to its private address.
	prioHostSNATEndpoint uint16 = 100
	// prioHostSNATBlock: nothing reaches another endpoint's private
	// address through the host; above prioHostSNATEndpoint.
	prioHostSNATBlock uint16 = 101
	// prioHostSNATHostIP: an endpoint's traffic to contivh0's own private
	// address; above the block, which covers it.
	prioHostSNATHostIP uint16 = 102
)

// MacDestTable (9): bridging (netpolPrioHook sits above these).
const (
	// prioMacFlood: unknown destinations of a network are flooded.
	prioMacFlood uint16 = 10
	// prioMacEndpoint: a local or remote endpoint's MAC.
	prioMacEndpoint uint16 = 100
)

// NetworkPolicy (docs/k8s.md, "NetworkPolicy"). netpolPrioHook is in the
// table netpolHookTable names (MacDestTable, 9; IPTable, 7, on vrouter),
// above every other flow there: untracked IPv4 from or to a local endpoint
// goes through the connection tracker first.
const netpolPrioHook uint16 = 200

// NetpolStateTable (10).
const (
	// netpolPrioState: established and related connections pass.
	netpolPrioState uint16 = 100
	// netpolPrioPickup: a new TCP packet without SYN passes uncommitted
	// (compat K23); above netpolPrioNew, which it also matches.
	netpolPrioPickup uint16 = 95
	// netpolPrioNew: a new connection goes on to the egress table.
	netpolPrioNew uint16 = 90
)

// NetpolEgressTable (11) and NetpolIngressTable (12): an allowed peer
// passes above the isolated pod's drop.
const (
	netpolPrioAllow uint16 = 100
	netpolPrioDeny  uint16 = 50
)
