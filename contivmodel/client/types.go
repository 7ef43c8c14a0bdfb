package client

import "github.com/contiv/netplugin/contivmodel"

// The object types are the model's own (aliases), so client and server
// cannot drift apart.
type (
	Link    = contivmodel.Link
	LinkSet = contivmodel.LinkSet

	AciGw        = contivmodel.AciGw
	AciGwOper    = contivmodel.AciGwOper
	AciGwInspect = contivmodel.AciGwInspect

	AppProfile         = contivmodel.AppProfile
	AppProfileLinkSets = contivmodel.AppProfileLinkSets
	AppProfileLinks    = contivmodel.AppProfileLinks
	AppProfileInspect  = contivmodel.AppProfileInspect

	Bgp        = contivmodel.Bgp
	BgpOper    = contivmodel.BgpOper
	BgpInspect = contivmodel.BgpInspect

	Endpoint        = contivmodel.Endpoint
	EndpointOper    = contivmodel.EndpointOper
	EndpointInspect = contivmodel.EndpointInspect

	EndpointGroup         = contivmodel.EndpointGroup
	EndpointGroupLinkSets = contivmodel.EndpointGroupLinkSets
	EndpointGroupLinks    = contivmodel.EndpointGroupLinks
	EndpointGroupOper     = contivmodel.EndpointGroupOper
	EndpointGroupInspect  = contivmodel.EndpointGroupInspect

	ExtContractsGroup         = contivmodel.ExtContractsGroup
	ExtContractsGroupLinkSets = contivmodel.ExtContractsGroupLinkSets
	ExtContractsGroupInspect  = contivmodel.ExtContractsGroupInspect

	Global        = contivmodel.Global
	GlobalOper    = contivmodel.GlobalOper
	GlobalInspect = contivmodel.GlobalInspect

	Netprofile         = contivmodel.Netprofile
	NetprofileLinkSets = contivmodel.NetprofileLinkSets
	NetprofileLinks    = contivmodel.NetprofileLinks
	NetprofileInspect  = contivmodel.NetprofileInspect

	Network         = contivmodel.Network
	NetworkLinkSets = contivmodel.NetworkLinkSets
	NetworkLinks    = contivmodel.NetworkLinks
	NetworkOper     = contivmodel.NetworkOper
	NetworkInspect  = contivmodel.NetworkInspect

	Policy         = contivmodel.Policy
	PolicyLinkSets = contivmodel.PolicyLinkSets
	PolicyLinks    = contivmodel.PolicyLinks
	PolicyOper     = contivmodel.PolicyOper
	PolicyInspect  = contivmodel.PolicyInspect

	Rule         = contivmodel.Rule
	RuleLinkSets = contivmodel.RuleLinkSets
	RuleLinks    = contivmodel.RuleLinks
	RuleInspect  = contivmodel.RuleInspect

	ServiceLB        = contivmodel.ServiceLB
	ServiceLBLinks   = contivmodel.ServiceLBLinks
	ServiceLBOper    = contivmodel.ServiceLBOper
	ServiceLBInspect = contivmodel.ServiceLBInspect

	Tenant         = contivmodel.Tenant
	TenantLinkSets = contivmodel.TenantLinkSets
	TenantOper     = contivmodel.TenantOper
	TenantInspect  = contivmodel.TenantInspect

	Volume         = contivmodel.Volume
	VolumeLinkSets = contivmodel.VolumeLinkSets
	VolumeLinks    = contivmodel.VolumeLinks
	VolumeInspect  = contivmodel.VolumeInspect

	VolumeProfile         = contivmodel.VolumeProfile
	VolumeProfileLinkSets = contivmodel.VolumeProfileLinkSets
	VolumeProfileLinks    = contivmodel.VolumeProfileLinks
	VolumeProfileInspect  = contivmodel.VolumeProfileInspect
)
