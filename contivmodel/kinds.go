package contivmodel

// The field tables of docs/rest-api.md §2, one per type, in evaluation
// order. Lower bounds of 0 on DSCP, burst, pktTag and port go beyond the
// original (Appendix A, Q7): negative values are refused with the same
// "Value Out of bound" message instead of being stored.

func rng(min, max int) *Range { return &Range{Min: min, Max: max} }

// AciGwKind describes aciGw (§2.2).
func AciGwKind() *Kind[AciGw] {
	return &Kind[AciGw]{
		Name: TypeAciGw, Plural: "aciGws", KeyFields: []string{"name"}, HasOper: true,
		Fields: []Field{
			{JSON: "enforcePolicies", MaxLen: 64, Format: patYesNo},
			{JSON: "includeCommonTenant", MaxLen: 64, Format: patYesNo},
			{JSON: "name", MaxLen: 64, Format: patAciGwName},
			{JSON: "nodeBindings", MaxLen: 2048, Format: patNodeBinding},
			{JSON: "pathBindings", MaxLen: 2048, Format: patPathBinding},
			{JSON: "physicalDomain", MaxLen: 128, Format: patName},
		},
	}
}

// AppProfileKind describes appProfile (§2.9).
func AppProfileKind() *Kind[AppProfile] {
	return &Kind[AppProfile]{
		Name: TypeAppProfile, Plural: "appProfiles", KeyFields: []string{"tenantName", "appProfileName"},
		Fields: []Field{
			{JSON: "appProfileName", MaxLen: 64, Format: patName},
			{JSON: "endpointGroups"},
			{JSON: "tenantName", MaxLen: 64, Format: patName},
		},
		LinkSets: []LinkDef{{"EndpointGroups", TypeEndpointGroup}},
		Links:    []LinkDef{{"Tenant", TypeTenant}},
	}
}

// BgpKind describes Bgp (§2.12).
func BgpKind() *Kind[Bgp] {
	return &Kind[Bgp]{
		Name: TypeBgp, Plural: "Bgps", KeyFields: []string{"hostname"}, HasOper: true,
		Fields: []Field{
			{JSON: "as", MaxLen: 64},
			{JSON: "hostname", MaxLen: 256, Format: patName},
			{JSON: "neighbor", MaxLen: 15, Format: patIPv4Opt},
			{JSON: "neighbor-as", MaxLen: 64},
			{JSON: "routerip", Format: patRouterIP},
		},
	}
}

// EndpointKind describes the inspect-only endpoint type (§2.13).
func EndpointKind() *Kind[Endpoint] {
	return &Kind[Endpoint]{Name: TypeEndpoint, Plural: "endpoints", HasOper: true, InspectOnly: true}
}

// EndpointGroupKind describes endpointGroup (§2.5).
func EndpointGroupKind() *Kind[EndpointGroup] {
	return &Kind[EndpointGroup]{
		Name: TypeEndpointGroup, Plural: "endpointGroups", KeyFields: []string{"tenantName", "groupName"}, HasOper: true,
		Fields: []Field{
			{JSON: "cfgdTag", MaxLen: 128, Format: patTagOpt},
			{JSON: "extContractsGrps"},
			{JSON: "groupName", MaxLen: 64, Format: patName},
			{JSON: "ipPool", Format: patIPPool},
			{JSON: "netProfile", MaxLen: 64},
			{JSON: "networkName", MaxLen: 64, Format: patName},
			{JSON: "policies"},
			{JSON: "tenantName", MaxLen: 64, Format: patName},
		},
		LinkSets: []LinkDef{
			{"ExtContractsGrps", TypeExtContractsGroup},
			{"MatchRules", TypeRule},
			{"Policies", TypePolicy},
			{"Services", TypeServiceLB},
		},
		Links: []LinkDef{
			{"AppProfile", TypeAppProfile},
			{"NetProfile", TypeNetprofile},
			{"Network", TypeNetwork},
			{"Tenant", TypeTenant},
		},
	}
}

// ExtContractsGroupKind describes extContractsGroup (§2.10).
func ExtContractsGroupKind() *Kind[ExtContractsGroup] {
	return &Kind[ExtContractsGroup]{
		Name: TypeExtContractsGroup, Plural: "extContractsGroups", KeyFields: []string{"tenantName", "contractsGroupName"},
		Fields: []Field{
			{JSON: "contracts"},
			{JSON: "contractsGroupName", MaxLen: 64, Format: patName},
			{JSON: "contractsType"}, // checked by the controller
			{JSON: "tenantName", MaxLen: 64, Format: patName},
		},
		LinkSets: []LinkDef{{"EndpointGroups", TypeEndpointGroup}},
	}
}

// GlobalKind describes global (§2.1).
func GlobalKind() *Kind[Global] {
	return &Kind[Global]{
		Name: TypeGlobal, Plural: "globals", KeyFields: []string{"name"}, HasOper: true,
		Fields: []Field{
			{JSON: "arpMode", MaxLen: 64, Format: patArpMode},
			{JSON: "fwdMode", MaxLen: 64, Format: patFwdMode},
			{JSON: "name", MaxLen: 64, Format: patGlobalName},
			{JSON: "networkInfraType", MaxLen: 64, Format: patInfraType},
			{JSON: "pvtSubnet", Format: patPvtSubnet},
			{JSON: "vlans", Format: patVlanRange},
			{JSON: "vxlans", Format: patVxlanRange},
		},
	}
}

// NetprofileKind describes netprofile (§2.6).
func NetprofileKind() *Kind[Netprofile] {
	return &Kind[Netprofile]{
		Name: TypeNetprofile, Plural: "netprofiles", KeyFields: []string{"tenantName", "profileName"},
		Fields: []Field{
			{JSON: "DSCP", Range: rng(0, 63)},
			{JSON: "bandwidth", MaxLen: 64, Format: patBandwidth},
			{JSON: "burst", Range: rng(0, 10486)},
			{JSON: "profileName", MaxLen: 64},
			{JSON: "tenantName"},
		},
		LinkSets: []LinkDef{{"EndpointGroups", TypeEndpointGroup}},
		Links:    []LinkDef{{"Tenant", TypeTenant}},
	}
}

// NetworkKind describes network (§2.4).
func NetworkKind() *Kind[Network] {
	return &Kind[Network]{
		Name: TypeNetwork, Plural: "networks", KeyFields: []string{"tenantName", "networkName"}, HasOper: true,
		Fields: []Field{
			{JSON: "cfgdTag", MaxLen: 128, Format: patTagOpt},
			{JSON: "encap", Format: patEncap},
			{JSON: "gateway", Format: patIPv4Opt},
			{JSON: "ipv6Gateway", Format: patIPv6Opt},
			{JSON: "ipv6Subnet", Format: patIPv6SubOpt},
			{JSON: "networkName", MaxLen: 64, Format: patName},
			{JSON: "nwType", Default: "data", Format: patNwType},
			{JSON: "pktTag", Range: rng(0, 16777216)},
			{JSON: "subnet", Format: patSubnet},
			{JSON: "tenantName", MaxLen: 64, Format: patName},
		},
		LinkSets: []LinkDef{
			{"EndpointGroups", TypeEndpointGroup},
			{"Servicelbs", TypeServiceLB},
			{"Services", TypeServiceLB},
		},
		Links: []LinkDef{{"Tenant", TypeTenant}},
	}
}

// PolicyKind describes policy (§2.7).
func PolicyKind() *Kind[Policy] {
	return &Kind[Policy]{
		Name: TypePolicy, Plural: "policys", KeyFields: []string{"tenantName", "policyName"}, HasOper: true,
		Fields: []Field{
			{JSON: "policyName", MaxLen: 64, Format: patName},
			{JSON: "tenantName", MaxLen: 64, Format: patName},
		},
		LinkSets: []LinkDef{{"EndpointGroups", TypeEndpointGroup}, {"Rules", TypeRule}},
		Links:    []LinkDef{{"Tenant", TypeTenant}},
	}
}

// RuleKind describes rule (§2.8).
func RuleKind() *Kind[Rule] {
	return &Kind[Rule]{
		Name: TypeRule, Plural: "rules", KeyFields: []string{"tenantName", "policyName", "ruleId"},
		Fields: []Field{
			{JSON: "action", Format: patAction},
			{JSON: "direction", Format: patDirection},
			{JSON: "fromEndpointGroup", MaxLen: 64, Format: patNameOpt},
			{JSON: "fromIpAddress", Format: patRuleIP},
			{JSON: "fromNetwork", MaxLen: 64, Format: patNameOpt},
			{JSON: "policyName", MaxLen: 64, Format: patName},
			{JSON: "port", Range: rng(0, 65535)},
			{JSON: "priority", Default: 1, Range: rng(1, 100)},
			{JSON: "protocol", Format: patProtocol},
			{JSON: "ruleId", MaxLen: 64, Format: patName},
			{JSON: "tenantName", MaxLen: 64, Format: patName},
			{JSON: "toEndpointGroup", MaxLen: 64, Format: patNameOpt},
			{JSON: "toIpAddress", Format: patRuleIP},
			{JSON: "toNetwork", MaxLen: 64, Format: patNameOpt},
		},
		LinkSets: []LinkDef{{"Policies", TypePolicy}},
		Links:    []LinkDef{{"MatchEndpointGroup", TypeEndpointGroup}},
	}
}

// ServiceLBKind describes serviceLB (§2.11).
func ServiceLBKind() *Kind[ServiceLB] {
	return &Kind[ServiceLB]{
		Name: TypeServiceLB, Plural: "serviceLBs", KeyFields: []string{"tenantName", "serviceName"}, HasOper: true,
		Fields: []Field{
			{JSON: "ipAddress", MaxLen: 15, Format: patIPv4Opt},
			{JSON: "networkName", MaxLen: 64, Format: patName},
			{JSON: "ports"},     // checked by the controller
			{JSON: "selectors"}, // checked by the controller
			{JSON: "serviceName", MaxLen: 256, Format: patName},
			{JSON: "tenantName", MaxLen: 64, Format: patName},
		},
		Links: []LinkDef{{"Network", TypeNetwork}, {"Tenant", TypeTenant}},
	}
}

// TenantKind describes tenant (§2.3).
func TenantKind() *Kind[Tenant] {
	return &Kind[Tenant]{
		Name: TypeTenant, Plural: "tenants", KeyFields: []string{"tenantName"}, HasOper: true,
		Fields: []Field{
			{JSON: "defaultNetwork", MaxLen: 64, Format: patNameOpt},
			{JSON: "tenantName", MaxLen: 64, Format: patName},
		},
		LinkSets: []LinkDef{
			{"AppProfiles", TypeAppProfile},
			{"EndpointGroups", TypeEndpointGroup},
			{"NetProfiles", TypeNetprofile},
			{"Networks", TypeNetwork},
			{"Policies", TypePolicy},
			{"Servicelbs", TypeServiceLB},
			{"VolumeProfiles", TypeVolumeProfile},
			{"Volumes", TypeVolume},
		},
	}
}

// VolumeKind describes volume (§2.14): only the key is checked.
func VolumeKind() *Kind[Volume] {
	return &Kind[Volume]{
		Name: TypeVolume, Plural: "volumes", KeyFields: []string{"tenantName", "volumeName"},
		Fields: []Field{
			{JSON: "datastoreType"}, {JSON: "mountPoint"}, {JSON: "poolName"},
			{JSON: "size"}, {JSON: "tenantName"}, {JSON: "volumeName"},
		},
		LinkSets: []LinkDef{{"ServiceInstances", "serviceInstance"}},
		Links:    []LinkDef{{"Tenant", TypeTenant}},
	}
}

// VolumeProfileKind describes volumeProfile (§2.14): only the key is checked.
func VolumeProfileKind() *Kind[VolumeProfile] {
	return &Kind[VolumeProfile]{
		Name: TypeVolumeProfile, Plural: "volumeProfiles", KeyFields: []string{"tenantName", "volumeProfileName"},
		Fields: []Field{
			{JSON: "datastoreType"}, {JSON: "mountPoint"}, {JSON: "poolName"},
			{JSON: "size"}, {JSON: "tenantName"}, {JSON: "volumeProfileName"},
		},
		LinkSets: []LinkDef{{"Services", "service"}},
		Links:    []LinkDef{{"Tenant", TypeTenant}},
	}
}
