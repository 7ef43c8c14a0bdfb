package client

// Per-type methods: thin wrappers naming the URL plural and the key parts
// of each type (docs/rest-api.md §1.4). All logic is in request.

// AciGwPost creates or updates the aciGw singleton.
func (c *ContivClient) AciGwPost(obj *AciGw) error { return post(c, "aciGws", obj.Name, obj) }

// AciGwGet reads the aciGw object.
func (c *ContivClient) AciGwGet(name string) (*AciGw, error) { return get[AciGw](c, "aciGws", name) }

// AciGwList lists aciGw objects.
func (c *ContivClient) AciGwList() (*[]*AciGw, error) { return list[AciGw](c, "aciGws") }

// AciGwDelete deletes the aciGw object.
func (c *ContivClient) AciGwDelete(name string) error { return del(c, "aciGws", name) }

// AciGwInspect inspects the aciGw object.
func (c *ContivClient) AciGwInspect(name string) (*AciGwInspect, error) {
	return inspect[AciGwInspect](c, "aciGws", name)
}

// AppProfilePost creates or updates an app profile.
func (c *ContivClient) AppProfilePost(obj *AppProfile) error {
	return post(c, "appProfiles", key(obj.TenantName, obj.AppProfileName), obj)
}

// AppProfileGet reads an app profile.
func (c *ContivClient) AppProfileGet(tenantName, appProfileName string) (*AppProfile, error) {
	return get[AppProfile](c, "appProfiles", key(tenantName, appProfileName))
}

// AppProfileList lists app profiles.
func (c *ContivClient) AppProfileList() (*[]*AppProfile, error) {
	return list[AppProfile](c, "appProfiles")
}

// AppProfileDelete deletes an app profile.
func (c *ContivClient) AppProfileDelete(tenantName, appProfileName string) error {
	return del(c, "appProfiles", key(tenantName, appProfileName))
}

// AppProfileInspect inspects an app profile.
func (c *ContivClient) AppProfileInspect(tenantName, appProfileName string) (*AppProfileInspect, error) {
	return inspect[AppProfileInspect](c, "appProfiles", key(tenantName, appProfileName))
}

// BgpPost creates or updates a host's BGP configuration.
func (c *ContivClient) BgpPost(obj *Bgp) error { return post(c, "Bgps", obj.Hostname, obj) }

// BgpGet reads a host's BGP configuration.
func (c *ContivClient) BgpGet(hostname string) (*Bgp, error) { return get[Bgp](c, "Bgps", hostname) }

// BgpList lists BGP configurations.
func (c *ContivClient) BgpList() (*[]*Bgp, error) { return list[Bgp](c, "Bgps") }

// BgpDelete deletes a host's BGP configuration.
func (c *ContivClient) BgpDelete(hostname string) error { return del(c, "Bgps", hostname) }

// BgpInspect inspects a host's BGP configuration and state.
func (c *ContivClient) BgpInspect(hostname string) (*BgpInspect, error) {
	return inspect[BgpInspect](c, "Bgps", hostname)
}

// EndpointInspect inspects the endpoint whose id, container id or
// container name contains endpointID.
func (c *ContivClient) EndpointInspect(endpointID string) (*EndpointInspect, error) {
	return inspect[EndpointInspect](c, "endpoints", endpointID)
}

// EndpointGroupPost creates or updates an endpoint group.
func (c *ContivClient) EndpointGroupPost(obj *EndpointGroup) error {
	return post(c, "endpointGroups", key(obj.TenantName, obj.GroupName), obj)
}

// EndpointGroupGet reads an endpoint group.
func (c *ContivClient) EndpointGroupGet(tenantName, groupName string) (*EndpointGroup, error) {
	return get[EndpointGroup](c, "endpointGroups", key(tenantName, groupName))
}

// EndpointGroupList lists endpoint groups.
func (c *ContivClient) EndpointGroupList() (*[]*EndpointGroup, error) {
	return list[EndpointGroup](c, "endpointGroups")
}

// EndpointGroupDelete deletes an endpoint group.
func (c *ContivClient) EndpointGroupDelete(tenantName, groupName string) error {
	return del(c, "endpointGroups", key(tenantName, groupName))
}

// EndpointGroupInspect inspects an endpoint group.
func (c *ContivClient) EndpointGroupInspect(tenantName, groupName string) (*EndpointGroupInspect, error) {
	return inspect[EndpointGroupInspect](c, "endpointGroups", key(tenantName, groupName))
}

// ExtContractsGroupPost creates an external contracts group.
func (c *ContivClient) ExtContractsGroupPost(obj *ExtContractsGroup) error {
	return post(c, "extContractsGroups", key(obj.TenantName, obj.ContractsGroupName), obj)
}

// ExtContractsGroupGet reads an external contracts group.
func (c *ContivClient) ExtContractsGroupGet(tenantName, contractsGroupName string) (*ExtContractsGroup, error) {
	return get[ExtContractsGroup](c, "extContractsGroups", key(tenantName, contractsGroupName))
}

// ExtContractsGroupList lists external contracts groups.
func (c *ContivClient) ExtContractsGroupList() (*[]*ExtContractsGroup, error) {
	return list[ExtContractsGroup](c, "extContractsGroups")
}

// ExtContractsGroupDelete deletes an external contracts group.
func (c *ContivClient) ExtContractsGroupDelete(tenantName, contractsGroupName string) error {
	return del(c, "extContractsGroups", key(tenantName, contractsGroupName))
}

// ExtContractsGroupInspect inspects an external contracts group.
func (c *ContivClient) ExtContractsGroupInspect(tenantName, contractsGroupName string) (*ExtContractsGroupInspect, error) {
	return inspect[ExtContractsGroupInspect](c, "extContractsGroups", key(tenantName, contractsGroupName))
}

// GlobalPost creates or updates the global singleton.
func (c *ContivClient) GlobalPost(obj *Global) error { return post(c, "globals", obj.Name, obj) }

// GlobalGet reads the global object.
func (c *ContivClient) GlobalGet(name string) (*Global, error) {
	return get[Global](c, "globals", name)
}

// GlobalList lists global objects.
func (c *ContivClient) GlobalList() (*[]*Global, error) { return list[Global](c, "globals") }

// GlobalDelete deletes the global object.
func (c *ContivClient) GlobalDelete(name string) error { return del(c, "globals", name) }

// GlobalInspect inspects the global object.
func (c *ContivClient) GlobalInspect(name string) (*GlobalInspect, error) {
	return inspect[GlobalInspect](c, "globals", name)
}

// NetprofilePost creates or updates a netprofile.
func (c *ContivClient) NetprofilePost(obj *Netprofile) error {
	return post(c, "netprofiles", key(obj.TenantName, obj.ProfileName), obj)
}

// NetprofileGet reads a netprofile.
func (c *ContivClient) NetprofileGet(tenantName, profileName string) (*Netprofile, error) {
	return get[Netprofile](c, "netprofiles", key(tenantName, profileName))
}

// NetprofileList lists netprofiles.
func (c *ContivClient) NetprofileList() (*[]*Netprofile, error) {
	return list[Netprofile](c, "netprofiles")
}

// NetprofileDelete deletes a netprofile.
func (c *ContivClient) NetprofileDelete(tenantName, profileName string) error {
	return del(c, "netprofiles", key(tenantName, profileName))
}

// NetprofileInspect inspects a netprofile.
func (c *ContivClient) NetprofileInspect(tenantName, profileName string) (*NetprofileInspect, error) {
	return inspect[NetprofileInspect](c, "netprofiles", key(tenantName, profileName))
}

// NetworkPost creates or updates a network.
func (c *ContivClient) NetworkPost(obj *Network) error {
	return post(c, "networks", key(obj.TenantName, obj.NetworkName), obj)
}

// NetworkGet reads a network.
func (c *ContivClient) NetworkGet(tenantName, networkName string) (*Network, error) {
	return get[Network](c, "networks", key(tenantName, networkName))
}

// NetworkList lists networks.
func (c *ContivClient) NetworkList() (*[]*Network, error) { return list[Network](c, "networks") }

// NetworkDelete deletes a network.
func (c *ContivClient) NetworkDelete(tenantName, networkName string) error {
	return del(c, "networks", key(tenantName, networkName))
}

// NetworkInspect inspects a network.
func (c *ContivClient) NetworkInspect(tenantName, networkName string) (*NetworkInspect, error) {
	return inspect[NetworkInspect](c, "networks", key(tenantName, networkName))
}

// PolicyPost creates or updates a policy.
func (c *ContivClient) PolicyPost(obj *Policy) error {
	return post(c, "policys", key(obj.TenantName, obj.PolicyName), obj)
}

// PolicyGet reads a policy.
func (c *ContivClient) PolicyGet(tenantName, policyName string) (*Policy, error) {
	return get[Policy](c, "policys", key(tenantName, policyName))
}

// PolicyList lists policies.
func (c *ContivClient) PolicyList() (*[]*Policy, error) { return list[Policy](c, "policys") }

// PolicyDelete deletes a policy.
func (c *ContivClient) PolicyDelete(tenantName, policyName string) error {
	return del(c, "policys", key(tenantName, policyName))
}

// PolicyInspect inspects a policy.
func (c *ContivClient) PolicyInspect(tenantName, policyName string) (*PolicyInspect, error) {
	return inspect[PolicyInspect](c, "policys", key(tenantName, policyName))
}

// RulePost creates a rule.
func (c *ContivClient) RulePost(obj *Rule) error {
	return post(c, "rules", key(obj.TenantName, obj.PolicyName, obj.RuleID), obj)
}

// RuleGet reads a rule.
func (c *ContivClient) RuleGet(tenantName, policyName, ruleId string) (*Rule, error) {
	return get[Rule](c, "rules", key(tenantName, policyName, ruleId))
}

// RuleList lists rules.
func (c *ContivClient) RuleList() (*[]*Rule, error) { return list[Rule](c, "rules") }

// RuleDelete deletes a rule.
func (c *ContivClient) RuleDelete(tenantName, policyName, ruleId string) error {
	return del(c, "rules", key(tenantName, policyName, ruleId))
}

// RuleInspect inspects a rule.
func (c *ContivClient) RuleInspect(tenantName, policyName, ruleId string) (*RuleInspect, error) {
	return inspect[RuleInspect](c, "rules", key(tenantName, policyName, ruleId))
}

// ServiceLBPost creates or updates a service LB.
func (c *ContivClient) ServiceLBPost(obj *ServiceLB) error {
	return post(c, "serviceLBs", key(obj.TenantName, obj.ServiceName), obj)
}

// ServiceLBGet reads a service LB.
func (c *ContivClient) ServiceLBGet(tenantName, serviceName string) (*ServiceLB, error) {
	return get[ServiceLB](c, "serviceLBs", key(tenantName, serviceName))
}

// ServiceLBList lists service LBs.
func (c *ContivClient) ServiceLBList() (*[]*ServiceLB, error) {
	return list[ServiceLB](c, "serviceLBs")
}

// ServiceLBDelete deletes a service LB.
func (c *ContivClient) ServiceLBDelete(tenantName, serviceName string) error {
	return del(c, "serviceLBs", key(tenantName, serviceName))
}

// ServiceLBInspect inspects a service LB.
func (c *ContivClient) ServiceLBInspect(tenantName, serviceName string) (*ServiceLBInspect, error) {
	return inspect[ServiceLBInspect](c, "serviceLBs", key(tenantName, serviceName))
}

// TenantPost creates a tenant.
func (c *ContivClient) TenantPost(obj *Tenant) error { return post(c, "tenants", obj.TenantName, obj) }

// TenantGet reads a tenant.
func (c *ContivClient) TenantGet(tenantName string) (*Tenant, error) {
	return get[Tenant](c, "tenants", tenantName)
}

// TenantList lists tenants.
func (c *ContivClient) TenantList() (*[]*Tenant, error) { return list[Tenant](c, "tenants") }

// TenantDelete deletes a tenant.
func (c *ContivClient) TenantDelete(tenantName string) error { return del(c, "tenants", tenantName) }

// TenantInspect inspects a tenant.
func (c *ContivClient) TenantInspect(tenantName string) (*TenantInspect, error) {
	return inspect[TenantInspect](c, "tenants", tenantName)
}

// VolumePost creates or updates a volume (the netmaster has no controller
// for volumes and refuses).
func (c *ContivClient) VolumePost(obj *Volume) error {
	return post(c, "volumes", key(obj.TenantName, obj.VolumeName), obj)
}

// VolumeGet reads a volume.
func (c *ContivClient) VolumeGet(tenantName, volumeName string) (*Volume, error) {
	return get[Volume](c, "volumes", key(tenantName, volumeName))
}

// VolumeList lists volumes.
func (c *ContivClient) VolumeList() (*[]*Volume, error) { return list[Volume](c, "volumes") }

// VolumeDelete deletes a volume.
func (c *ContivClient) VolumeDelete(tenantName, volumeName string) error {
	return del(c, "volumes", key(tenantName, volumeName))
}

// VolumeInspect inspects a volume.
func (c *ContivClient) VolumeInspect(tenantName, volumeName string) (*VolumeInspect, error) {
	return inspect[VolumeInspect](c, "volumes", key(tenantName, volumeName))
}

// VolumeProfilePost creates or updates a volume profile (refused by the
// netmaster, which has no controller for it).
func (c *ContivClient) VolumeProfilePost(obj *VolumeProfile) error {
	return post(c, "volumeProfiles", key(obj.TenantName, obj.VolumeProfileName), obj)
}

// VolumeProfileGet reads a volume profile.
func (c *ContivClient) VolumeProfileGet(tenantName, volumeProfileName string) (*VolumeProfile, error) {
	return get[VolumeProfile](c, "volumeProfiles", key(tenantName, volumeProfileName))
}

// VolumeProfileList lists volume profiles.
func (c *ContivClient) VolumeProfileList() (*[]*VolumeProfile, error) {
	return list[VolumeProfile](c, "volumeProfiles")
}

// VolumeProfileDelete deletes a volume profile.
func (c *ContivClient) VolumeProfileDelete(tenantName, volumeProfileName string) error {
	return del(c, "volumeProfiles", key(tenantName, volumeProfileName))
}

// VolumeProfileInspect inspects a volume profile.
func (c *ContivClient) VolumeProfileInspect(tenantName, volumeProfileName string) (*VolumeProfileInspect, error) {
	return inspect[VolumeProfileInspect](c, "volumeProfiles", key(tenantName, volumeProfileName))
}
