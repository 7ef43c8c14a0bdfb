package contivmodel

// Operational state returned by inspect (docs/rest-api.md §2, docs/netctl.md §7).
// Every member is omitted when zero. The inspect wrappers have no JSON tags:
// their members are "Config" and "Oper".

// EndpointOper describes one endpoint (§2.0). Key is set only by endpoint
// inspect (the id the client asked for).
type EndpointOper struct {
	Key              string   `json:"key,omitempty"`
	ContainerID      string   `json:"containerID,omitempty"`
	ContainerName    string   `json:"containerName,omitempty"`
	EndpointGroupID  int      `json:"endpointGroupId,omitempty"`
	EndpointGroupKey string   `json:"endpointGroupKey,omitempty"`
	EndpointID       string   `json:"endpointID,omitempty"`
	HomingHost       string   `json:"homingHost,omitempty"`
	IntfName         string   `json:"intfName,omitempty"`
	IpAddress        []string `json:"ipAddress,omitempty"`
	Labels           string   `json:"labels,omitempty"`
	MacAddress       string   `json:"macAddress,omitempty"`
	Network          string   `json:"network,omitempty"`
	ServiceName      string   `json:"serviceName,omitempty"`
	VirtualPort      string   `json:"virtualPort,omitempty"`
	VtepIP           string   `json:"vtepIP,omitempty"`
}

// AciGwOper is the inspect state of the aciGw singleton.
type AciGwOper struct {
	NumAppProfiles int `json:"numAppProfiles,omitempty"`
}

// BgpOper is the live BGP state fetched from the host's agent.
type BgpOper struct {
	AdminStatus    string   `json:"adminStatus,omitempty"`
	NeighborStatus string   `json:"neighborStatus,omitempty"`
	NumRoutes      int      `json:"numRoutes,omitempty"`
	Routes         []string `json:"routes,omitempty"`
}

// EndpointGroupOper is the inspect state of an endpoint group.
type EndpointGroupOper struct {
	AllocatedIPAddresses string         `json:"allocatedIPAddresses,omitempty"`
	AvailableIPAddresses string         `json:"availableIPAddresses,omitempty"`
	Endpoints            []EndpointOper `json:"endpoints,omitempty"`
	ExternalPktTag       int            `json:"externalPktTag,omitempty"`
	GroupTag             string         `json:"groupTag,omitempty"`
	NumEndpoints         int            `json:"numEndpoints,omitempty"`
	PktTag               int            `json:"pktTag,omitempty"`
}

// GlobalOper is the inspect state of the global singleton.
type GlobalOper struct {
	ClusterMode     string `json:"clusterMode,omitempty"`
	DefaultNetwork  string `json:"defaultNetwork,omitempty"`
	FreeVXLANsStart int    `json:"freeVXLANsStart,omitempty"`
	NumNetworks     int    `json:"numNetworks,omitempty"`
	VlansInUse      string `json:"vlansInUse,omitempty"`
	VxlansInUse     string `json:"vxlansInUse,omitempty"`
}

// NetworkOper is the inspect state of a network.
type NetworkOper struct {
	AllocatedAddressesCount int            `json:"allocatedAddressesCount,omitempty"`
	AllocatedIPAddresses    string         `json:"allocatedIPAddresses,omitempty"`
	AvailableIPAddresses    string         `json:"availableIPAddresses,omitempty"`
	Endpoints               []EndpointOper `json:"endpoints,omitempty"`
	ExternalPktTag          int            `json:"externalPktTag,omitempty"`
	NetworkTag              string         `json:"networkTag,omitempty"`
	NumEndpoints            int            `json:"numEndpoints,omitempty"`
	PktTag                  int            `json:"pktTag,omitempty"`
}

// PolicyOper is the inspect state of a policy.
type PolicyOper struct {
	Endpoints        []EndpointOper `json:"endpoints,omitempty"`
	NumEndpoints     int            `json:"numEndpoints,omitempty"`
	PolicyViolations int            `json:"policyViolations,omitempty"`
}

// ServiceLBOper is the inspect state of a service LB.
type ServiceLBOper struct {
	NumProviders int            `json:"numProviders,omitempty"`
	Providers    []EndpointOper `json:"providers,omitempty"`
	ServiceVip   string         `json:"serviceVip,omitempty"`
}

// TenantOper is the inspect state of a tenant.
type TenantOper struct {
	EndpointGroups   []EndpointGroupOper `json:"endpointGroups,omitempty"`
	Endpoints        []EndpointOper      `json:"endpoints,omitempty"`
	Networks         []NetworkOper       `json:"networks,omitempty"`
	Policies         []PolicyOper        `json:"policies,omitempty"`
	Servicelbs       []ServiceLBOper     `json:"servicelbs,omitempty"`
	TotalAppProfiles int                 `json:"totalAppProfiles,omitempty"`
	TotalEPGs        int                 `json:"totalEPGs,omitempty"`
	TotalEndpoints   int                 `json:"totalEndpoints,omitempty"`
	TotalNetprofiles int                 `json:"totalNetprofiles,omitempty"`
	TotalNetworks    int                 `json:"totalNetworks,omitempty"`
	TotalPolicies    int                 `json:"totalPolicies,omitempty"`
	TotalServicelbs  int                 `json:"totalServicelbs,omitempty"`
}

// Inspect answers as clients decode them. Types with operational state
// carry Config and Oper; the others only Config; endpoints only Oper.

// AciGwInspect is the inspect answer for aciGw.
type AciGwInspect struct {
	Config AciGw
	Oper   AciGwOper
}

// AppProfileInspect is the inspect answer for appProfile.
type AppProfileInspect struct {
	Config AppProfile
}

// BgpInspect is the inspect answer for Bgp.
type BgpInspect struct {
	Config Bgp
	Oper   BgpOper
}

// EndpointInspect is the inspect answer for endpoint.
type EndpointInspect struct {
	Oper EndpointOper
}

// EndpointGroupInspect is the inspect answer for endpointGroup.
type EndpointGroupInspect struct {
	Config EndpointGroup
	Oper   EndpointGroupOper
}

// ExtContractsGroupInspect is the inspect answer for extContractsGroup.
type ExtContractsGroupInspect struct {
	Config ExtContractsGroup
}

// GlobalInspect is the inspect answer for global.
type GlobalInspect struct {
	Config Global
	Oper   GlobalOper
}

// NetprofileInspect is the inspect answer for netprofile.
type NetprofileInspect struct {
	Config Netprofile
}

// NetworkInspect is the inspect answer for network.
type NetworkInspect struct {
	Config Network
	Oper   NetworkOper
}

// PolicyInspect is the inspect answer for policy.
type PolicyInspect struct {
	Config Policy
	Oper   PolicyOper
}

// RuleInspect is the inspect answer for rule.
type RuleInspect struct {
	Config Rule
}

// ServiceLBInspect is the inspect answer for serviceLB.
type ServiceLBInspect struct {
	Config ServiceLB
	Oper   ServiceLBOper
}

// TenantInspect is the inspect answer for tenant.
type TenantInspect struct {
	Config Tenant
	Oper   TenantOper
}

// VolumeInspect is the inspect answer for volume.
type VolumeInspect struct {
	Config Volume
}

// VolumeProfileInspect is the inspect answer for volumeProfile.
type VolumeProfileInspect struct {
	Config VolumeProfile
}
