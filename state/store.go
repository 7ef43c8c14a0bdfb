package state

import "github.com/contiv/netplugin/objdb"

// Key prefixes of docs/daemons.md §3.1, relative to the store root.
const (
	PrefixGlobConfig    = "master/config/"
	PrefixGlobalCfg     = "state/global/"
	PrefixGlobalOper    = "oper/global/"
	PrefixVlanCfg       = "state/auto-vlan/"
	PrefixVlanOper      = "oper/auto-vlan/"
	PrefixVxlanCfg      = "state/auto-vxlan/"
	PrefixVxlanOper     = "oper/auto-vxlan/"
	PrefixNetworks      = "state/nets/"
	PrefixEndpoints     = "state/eps/"
	PrefixEPGs          = "state/endpointGroups/"
	PrefixEpgPolicies   = "state/policy/"
	PrefixPolicyRules   = "state/policyRule/"
	PrefixBgp           = "state/bgp/"
	PrefixServiceLBs    = "state/serviceLB/"
	PrefixProviders     = "state/provider/"
	PrefixDocknets      = "oper/docknet/"
	PrefixEndpointOper  = "oper/eps/"
	PrefixOvsDriverOper = "oper/ovs-driver/"
	PrefixNodes         = "oper/nodes/"
)

// Store is every kind of state object over one objdb client.
type Store struct {
	GlobConfig     Collection[GlobConfig]
	GlobalCfg      Collection[GlobalCfg]
	GlobalOper     Collection[GlobalOper]
	VlanCfg        Collection[VlanResource]
	VlanOper       Collection[VlanResourceOper]
	VxlanCfg       Collection[VxlanResource]
	VxlanOper      Collection[VxlanResourceOper]
	Networks       Collection[Network]
	Endpoints      Collection[Endpoint]
	EndpointGroups Collection[EndpointGroup]
	EpgPolicies    Collection[EpgPolicy]
	PolicyRules    Collection[PolicyRule]
	Bgp            Collection[Bgp]
	ServiceLBs     Collection[ServiceLB]
	Providers      Collection[SvcProvider]
	Docknets       Collection[Docknet]
	EndpointOper   Collection[EndpointOper]
	OvsDriverOper  Collection[OvsDriverOper]
	Nodes          Collection[Node]
}

// New binds every collection to kv.
func New(kv objdb.KV) *Store {
	return &Store{
		GlobConfig:     NewCollection[GlobConfig](kv, PrefixGlobConfig),
		GlobalCfg:      NewCollection[GlobalCfg](kv, PrefixGlobalCfg),
		GlobalOper:     NewCollection[GlobalOper](kv, PrefixGlobalOper),
		VlanCfg:        NewCollection[VlanResource](kv, PrefixVlanCfg),
		VlanOper:       NewCollection[VlanResourceOper](kv, PrefixVlanOper),
		VxlanCfg:       NewCollection[VxlanResource](kv, PrefixVxlanCfg),
		VxlanOper:      NewCollection[VxlanResourceOper](kv, PrefixVxlanOper),
		Networks:       NewCollection[Network](kv, PrefixNetworks),
		Endpoints:      NewCollection[Endpoint](kv, PrefixEndpoints),
		EndpointGroups: NewCollection[EndpointGroup](kv, PrefixEPGs),
		EpgPolicies:    NewCollection[EpgPolicy](kv, PrefixEpgPolicies),
		PolicyRules:    NewCollection[PolicyRule](kv, PrefixPolicyRules),
		Bgp:            NewCollection[Bgp](kv, PrefixBgp),
		ServiceLBs:     NewCollection[ServiceLB](kv, PrefixServiceLBs),
		Providers:      NewCollection[SvcProvider](kv, PrefixProviders),
		Docknets:       NewCollection[Docknet](kv, PrefixDocknets),
		EndpointOper:   NewCollection[EndpointOper](kv, PrefixEndpointOper),
		OvsDriverOper:  NewCollection[OvsDriverOper](kv, PrefixOvsDriverOper),
		Nodes:          NewCollection[Node](kv, PrefixNodes),
	}
}
