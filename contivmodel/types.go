package contivmodel

// Object types of the REST model (docs/rest-api.md §1.4, §2). Field order is
// the JSON order clients see (docs/netctl.md §7): "key" first, then the
// config fields in ASCII order of their JSON names, then "link-sets" and
// "links". Every scalar and list is omitted when zero; "link-sets" and
// "links" are structs and therefore always present for the types that have
// them. Go field names follow the original Go client so code written for it
// compiles against ours.

// Type names: the "type" string of links, the modeldb directory
// (obj/modeldb/<type>/<key>) and the "<type> not found" messages.
const (
	TypeAciGw             = "aciGw"
	TypeAppProfile        = "appProfile"
	TypeBgp               = "Bgp"
	TypeEndpoint          = "endpoint"
	TypeEndpointGroup     = "endpointGroup"
	TypeExtContractsGroup = "extContractsGroup"
	TypeGlobal            = "global"
	TypeNetprofile        = "netprofile"
	TypeNetwork           = "network"
	TypePolicy            = "policy"
	TypeRule              = "rule"
	TypeServiceLB         = "serviceLB"
	TypeTenant            = "tenant"
	TypeVolume            = "volume"
	TypeVolumeProfile     = "volumeProfile"
)

// AciGw is the ACI gateway singleton (key "aciGw").
type AciGw struct {
	Key                 string `json:"key,omitempty"`
	EnforcePolicies     string `json:"enforcePolicies,omitempty"`
	IncludeCommonTenant string `json:"includeCommonTenant,omitempty"`
	Name                string `json:"name,omitempty"`
	NodeBindings        string `json:"nodeBindings,omitempty"`
	PathBindings        string `json:"pathBindings,omitempty"`
	PhysicalDomain      string `json:"physicalDomain,omitempty"`
}

// AppProfile groups endpoint groups into an application.
type AppProfile struct {
	Key            string             `json:"key,omitempty"`
	AppProfileName string             `json:"appProfileName,omitempty"`
	EndpointGroups []string           `json:"endpointGroups,omitempty"`
	TenantName     string             `json:"tenantName,omitempty"`
	LinkSets       AppProfileLinkSets `json:"link-sets"`
	Links          AppProfileLinks    `json:"links"`
}

// AppProfileLinkSets are the link sets of an AppProfile.
type AppProfileLinkSets struct {
	EndpointGroups LinkSet `json:"EndpointGroups,omitempty"`
}

// AppProfileLinks are the links of an AppProfile.
type AppProfileLinks struct {
	Tenant Link `json:"Tenant"`
}

// Bgp is the per-host BGP configuration (key = hostname).
type Bgp struct {
	Key        string `json:"key,omitempty"`
	As         string `json:"as,omitempty"`
	Hostname   string `json:"hostname,omitempty"`
	Neighbor   string `json:"neighbor,omitempty"`
	NeighborAs string `json:"neighbor-as,omitempty"`
	Routerip   string `json:"routerip,omitempty"`
}

// EndpointGroup is an application/security group inside a network.
type EndpointGroup struct {
	Key              string                `json:"key,omitempty"`
	CfgdTag          string                `json:"cfgdTag,omitempty"`
	ExtContractsGrps []string              `json:"extContractsGrps,omitempty"`
	GroupName        string                `json:"groupName,omitempty"`
	IpPool           string                `json:"ipPool,omitempty"`
	NetProfile       string                `json:"netProfile,omitempty"`
	NetworkName      string                `json:"networkName,omitempty"`
	Policies         []string              `json:"policies,omitempty"`
	TenantName       string                `json:"tenantName,omitempty"`
	LinkSets         EndpointGroupLinkSets `json:"link-sets"`
	Links            EndpointGroupLinks    `json:"links"`
}

// EndpointGroupLinkSets are the link sets of an EndpointGroup.
type EndpointGroupLinkSets struct {
	ExtContractsGrps LinkSet `json:"ExtContractsGrps,omitempty"`
	MatchRules       LinkSet `json:"MatchRules,omitempty"`
	Policies         LinkSet `json:"Policies,omitempty"`
	Services         LinkSet `json:"Services,omitempty"`
}

// EndpointGroupLinks are the links of an EndpointGroup.
type EndpointGroupLinks struct {
	AppProfile Link `json:"AppProfile"`
	NetProfile Link `json:"NetProfile"`
	Network    Link `json:"Network"`
	Tenant     Link `json:"Tenant"`
}

// ExtContractsGroup is a named list of external contract DNs. It has link
// sets but no "links" member.
type ExtContractsGroup struct {
	Key                string                    `json:"key,omitempty"`
	Contracts          []string                  `json:"contracts,omitempty"`
	ContractsGroupName string                    `json:"contractsGroupName,omitempty"`
	ContractsType      string                    `json:"contractsType,omitempty"`
	TenantName         string                    `json:"tenantName,omitempty"`
	LinkSets           ExtContractsGroupLinkSets `json:"link-sets"`
}

// ExtContractsGroupLinkSets are the link sets of an ExtContractsGroup.
type ExtContractsGroupLinkSets struct {
	EndpointGroups LinkSet `json:"EndpointGroups,omitempty"`
}

// Global is the fabric-wide settings singleton (key "global").
type Global struct {
	Key              string `json:"key,omitempty"`
	ArpMode          string `json:"arpMode,omitempty"`
	FwdMode          string `json:"fwdMode,omitempty"`
	Name             string `json:"name,omitempty"`
	NetworkInfraType string `json:"networkInfraType,omitempty"`
	PvtSubnet        string `json:"pvtSubnet,omitempty"`
	Vlans            string `json:"vlans,omitempty"`
	Vxlans           string `json:"vxlans,omitempty"`
}

// Netprofile is a bandwidth / DSCP profile. Note the upper-case "DSCP".
type Netprofile struct {
	Key         string             `json:"key,omitempty"`
	DSCP        int                `json:"DSCP,omitempty"`
	Bandwidth   string             `json:"bandwidth,omitempty"`
	Burst       int                `json:"burst,omitempty"`
	ProfileName string             `json:"profileName,omitempty"`
	TenantName  string             `json:"tenantName,omitempty"`
	LinkSets    NetprofileLinkSets `json:"link-sets"`
	Links       NetprofileLinks    `json:"links"`
}

// NetprofileLinkSets are the link sets of a Netprofile.
type NetprofileLinkSets struct {
	EndpointGroups LinkSet `json:"EndpointGroups,omitempty"`
}

// NetprofileLinks are the links of a Netprofile.
type NetprofileLinks struct {
	Tenant Link `json:"Tenant"`
}

// Network is a tenant network.
type Network struct {
	Key         string          `json:"key,omitempty"`
	CfgdTag     string          `json:"cfgdTag,omitempty"`
	Encap       string          `json:"encap,omitempty"`
	Gateway     string          `json:"gateway,omitempty"`
	Ipv6Gateway string          `json:"ipv6Gateway,omitempty"`
	Ipv6Subnet  string          `json:"ipv6Subnet,omitempty"`
	NetworkName string          `json:"networkName,omitempty"`
	NwType      string          `json:"nwType,omitempty"`
	PktTag      int             `json:"pktTag,omitempty"`
	Subnet      string          `json:"subnet,omitempty"`
	TenantName  string          `json:"tenantName,omitempty"`
	LinkSets    NetworkLinkSets `json:"link-sets"`
	Links       NetworkLinks    `json:"links"`
}

// NetworkLinkSets are the link sets of a Network.
type NetworkLinkSets struct {
	EndpointGroups LinkSet `json:"EndpointGroups,omitempty"`
	Servicelbs     LinkSet `json:"Servicelbs,omitempty"`
	Services       LinkSet `json:"Services,omitempty"`
}

// NetworkLinks are the links of a Network.
type NetworkLinks struct {
	Tenant Link `json:"Tenant"`
}

// Policy is a named set of rules.
type Policy struct {
	Key        string         `json:"key,omitempty"`
	PolicyName string         `json:"policyName,omitempty"`
	TenantName string         `json:"tenantName,omitempty"`
	LinkSets   PolicyLinkSets `json:"link-sets"`
	Links      PolicyLinks    `json:"links"`
}

// PolicyLinkSets are the link sets of a Policy.
type PolicyLinkSets struct {
	EndpointGroups LinkSet `json:"EndpointGroups,omitempty"`
	Rules          LinkSet `json:"Rules,omitempty"`
}

// PolicyLinks are the links of a Policy.
type PolicyLinks struct {
	Tenant Link `json:"Tenant"`
}

// Rule is one match/action entry of a policy.
type Rule struct {
	Key               string       `json:"key,omitempty"`
	Action            string       `json:"action,omitempty"`
	Direction         string       `json:"direction,omitempty"`
	FromEndpointGroup string       `json:"fromEndpointGroup,omitempty"`
	FromIpAddress     string       `json:"fromIpAddress,omitempty"`
	FromNetwork       string       `json:"fromNetwork,omitempty"`
	PolicyName        string       `json:"policyName,omitempty"`
	Port              int          `json:"port,omitempty"`
	Priority          int          `json:"priority,omitempty"`
	Protocol          string       `json:"protocol,omitempty"`
	RuleID            string       `json:"ruleId,omitempty"`
	TenantName        string       `json:"tenantName,omitempty"`
	ToEndpointGroup   string       `json:"toEndpointGroup,omitempty"`
	ToIpAddress       string       `json:"toIpAddress,omitempty"`
	ToNetwork         string       `json:"toNetwork,omitempty"`
	LinkSets          RuleLinkSets `json:"link-sets"`
	Links             RuleLinks    `json:"links"`
}

// RuleLinkSets are the link sets of a Rule.
type RuleLinkSets struct {
	Policies LinkSet `json:"Policies,omitempty"`
}

// RuleLinks are the links of a Rule.
type RuleLinks struct {
	MatchEndpointGroup Link `json:"MatchEndpointGroup"`
}

// ServiceLB is a load-balanced service VIP. It has links but no
// "link-sets" member.
type ServiceLB struct {
	Key         string         `json:"key,omitempty"`
	IpAddress   string         `json:"ipAddress,omitempty"`
	NetworkName string         `json:"networkName,omitempty"`
	Ports       []string       `json:"ports,omitempty"`
	Selectors   []string       `json:"selectors,omitempty"`
	ServiceName string         `json:"serviceName,omitempty"`
	TenantName  string         `json:"tenantName,omitempty"`
	Links       ServiceLBLinks `json:"links"`
}

// ServiceLBLinks are the links of a ServiceLB.
type ServiceLBLinks struct {
	Network Link `json:"Network"`
	Tenant  Link `json:"Tenant"`
}

// Tenant owns networks, groups, policies and profiles. It has link sets but
// no "links" member.
type Tenant struct {
	Key            string         `json:"key,omitempty"`
	DefaultNetwork string         `json:"defaultNetwork,omitempty"`
	TenantName     string         `json:"tenantName,omitempty"`
	LinkSets       TenantLinkSets `json:"link-sets"`
}

// TenantLinkSets are the link sets of a Tenant.
type TenantLinkSets struct {
	AppProfiles    LinkSet `json:"AppProfiles,omitempty"`
	EndpointGroups LinkSet `json:"EndpointGroups,omitempty"`
	NetProfiles    LinkSet `json:"NetProfiles,omitempty"`
	Networks       LinkSet `json:"Networks,omitempty"`
	Policies       LinkSet `json:"Policies,omitempty"`
	Servicelbs     LinkSet `json:"Servicelbs,omitempty"`
	VolumeProfiles LinkSet `json:"VolumeProfiles,omitempty"`
	Volumes        LinkSet `json:"Volumes,omitempty"`
}

// Volume is defined by the model but has no controller.
type Volume struct {
	Key           string         `json:"key,omitempty"`
	DatastoreType string         `json:"datastoreType,omitempty"`
	MountPoint    string         `json:"mountPoint,omitempty"`
	PoolName      string         `json:"poolName,omitempty"`
	Size          string         `json:"size,omitempty"`
	TenantName    string         `json:"tenantName,omitempty"`
	VolumeName    string         `json:"volumeName,omitempty"`
	LinkSets      VolumeLinkSets `json:"link-sets"`
	Links         VolumeLinks    `json:"links"`
}

// VolumeLinkSets are the link sets of a Volume.
type VolumeLinkSets struct {
	ServiceInstances LinkSet `json:"ServiceInstances,omitempty"`
}

// VolumeLinks are the links of a Volume.
type VolumeLinks struct {
	Tenant Link `json:"Tenant"`
}

// VolumeProfile is defined by the model but has no controller.
type VolumeProfile struct {
	Key               string                `json:"key,omitempty"`
	DatastoreType     string                `json:"datastoreType,omitempty"`
	MountPoint        string                `json:"mountPoint,omitempty"`
	PoolName          string                `json:"poolName,omitempty"`
	Size              string                `json:"size,omitempty"`
	TenantName        string                `json:"tenantName,omitempty"`
	VolumeProfileName string                `json:"volumeProfileName,omitempty"`
	LinkSets          VolumeProfileLinkSets `json:"link-sets"`
	Links             VolumeProfileLinks    `json:"links"`
}

// VolumeProfileLinkSets are the link sets of a VolumeProfile.
type VolumeProfileLinkSets struct {
	Services LinkSet `json:"Services,omitempty"`
}

// VolumeProfileLinks are the links of a VolumeProfile.
type VolumeProfileLinks struct {
	Tenant Link `json:"Tenant"`
}

// Endpoint is the (config-less) endpoint object; it exists only so the
// inspect-only endpoint type has a Go name. Its inspect answer is
// EndpointInspect.
type Endpoint struct {
	Key string `json:"key,omitempty"`
}
