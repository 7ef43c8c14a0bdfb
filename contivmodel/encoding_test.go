package contivmodel_test

import (
	"encoding/json"
	"testing"

	cm "github.com/contiv/netplugin/contivmodel"
)

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %T: %v", v, err)
	}
	return string(b)
}

// TestEncodingGolden pins the JSON of every type: key first, config fields
// in ASCII order, zeros omitted, link-sets/links always present where the
// type defines them, every single link present ({} when unset). The
// populated bodies are the ones the original netctl sends (docs/netctl.md §6).
func TestEncodingGolden(t *testing.T) {
	tenantLink := cm.NewLink(cm.TypeTenant, "spectest")
	cases := []struct {
		name string
		obj  any
		want string
	}{
		{"aciGw empty", &cm.AciGw{}, `{}`},
		{"aciGw", &cm.AciGw{EnforcePolicies: "no", IncludeCommonTenant: "yes", Name: "aciGw", NodeBindings: "topology/pod-1/node-101",
			PathBindings: "topology/pod-1/paths-101/pathep-[eth1/14]", PhysicalDomain: "containerDom"},
			`{"enforcePolicies":"no","includeCommonTenant":"yes","name":"aciGw","nodeBindings":"topology/pod-1/node-101","pathBindings":"topology/pod-1/paths-101/pathep-[eth1/14]","physicalDomain":"containerDom"}`},
		{"appProfile empty", &cm.AppProfile{}, `{"link-sets":{},"links":{"Tenant":{}}}`},
		{"appProfile", &cm.AppProfile{AppProfileName: "ap", EndpointGroups: []string{"a", "b"}, TenantName: "spectest"},
			`{"appProfileName":"ap","endpointGroups":["a","b"],"tenantName":"spectest","link-sets":{},"links":{"Tenant":{}}}`},
		{"Bgp empty", &cm.Bgp{}, `{}`},
		{"Bgp", &cm.Bgp{As: "65002", Hostname: "h1", Neighbor: "50.1.1.2", NeighborAs: "500", Routerip: "50.1.1.1/24"},
			`{"as":"65002","hostname":"h1","neighbor":"50.1.1.2","neighbor-as":"500","routerip":"50.1.1.1/24"}`},
		{"endpoint empty", &cm.Endpoint{}, `{}`},
		{"endpointGroup empty", &cm.EndpointGroup{}, `{"link-sets":{},"links":{"AppProfile":{},"NetProfile":{},"Network":{},"Tenant":{}}}`},
		{"endpointGroup", &cm.EndpointGroup{CfgdTag: "gt", ExtContractsGrps: []string{"ec1", "ec2"}, GroupName: "g1", IpPool: "10.1.1.1-10.1.1.5",
			NetProfile: "np", NetworkName: "n1", Policies: []string{"p1", "p2"}, TenantName: "spectest"},
			`{"cfgdTag":"gt","extContractsGrps":["ec1","ec2"],"groupName":"g1","ipPool":"10.1.1.1-10.1.1.5","netProfile":"np","networkName":"n1","policies":["p1","p2"],"tenantName":"spectest","link-sets":{},"links":{"AppProfile":{},"NetProfile":{},"Network":{},"Tenant":{}}}`},
		{"endpointGroup linked", &cm.EndpointGroup{Key: "spectest:sgrp1", GroupName: "sgrp1", TenantName: "spectest",
			LinkSets: cm.EndpointGroupLinkSets{Policies: cm.LinkSet{"spectest:spol1": cm.NewLink(cm.TypePolicy, "spectest:spol1")}},
			Links:    cm.EndpointGroupLinks{Network: cm.NewLink(cm.TypeNetwork, "spectest:snet1"), Tenant: tenantLink}},
			`{"key":"spectest:sgrp1","groupName":"sgrp1","tenantName":"spectest","link-sets":{"Policies":{"spectest:spol1":{"type":"policy","key":"spectest:spol1"}}},"links":{"AppProfile":{},"NetProfile":{},"Network":{"type":"network","key":"spectest:snet1"},"Tenant":{"type":"tenant","key":"spectest"}}}`},
		{"extContractsGroup empty", &cm.ExtContractsGroup{}, `{"link-sets":{}}`},
		{"extContractsGroup", &cm.ExtContractsGroup{Contracts: []string{"x", "y"}, ContractsGroupName: "ec", ContractsType: "consumed", TenantName: "spectest"},
			`{"contracts":["x","y"],"contractsGroupName":"ec","contractsType":"consumed","tenantName":"spectest","link-sets":{}}`},
		{"global empty", &cm.Global{}, `{}`},
		{"global", &cm.Global{Key: "global", ArpMode: "flood", FwdMode: "routing", Name: "global", NetworkInfraType: "aci",
			PvtSubnet: "172.20.0.0/16", Vlans: "100-200", Vxlans: "1000-2000"},
			`{"key":"global","arpMode":"flood","fwdMode":"routing","name":"global","networkInfraType":"aci","pvtSubnet":"172.20.0.0/16","vlans":"100-200","vxlans":"1000-2000"}`},
		{"netprofile empty", &cm.Netprofile{}, `{"link-sets":{},"links":{"Tenant":{}}}`},
		{"netprofile", &cm.Netprofile{DSCP: 3, Bandwidth: "10 mbps", Burst: 64, ProfileName: "np1", TenantName: "spectest"},
			`{"DSCP":3,"bandwidth":"10 mbps","burst":64,"profileName":"np1","tenantName":"spectest","link-sets":{},"links":{"Tenant":{}}}`},
		{"network empty", &cm.Network{}, `{"link-sets":{},"links":{"Tenant":{}}}`},
		{"network", &cm.Network{CfgdTag: "T", Encap: "vlan", Gateway: "10.1.1.1", Ipv6Gateway: "2001::1", Ipv6Subnet: "2001::/64",
			NetworkName: "n1", NwType: "infra", PktTag: 12, Subnet: "10.1.1.0/24", TenantName: "spectest"},
			`{"cfgdTag":"T","encap":"vlan","gateway":"10.1.1.1","ipv6Gateway":"2001::1","ipv6Subnet":"2001::/64","networkName":"n1","nwType":"infra","pktTag":12,"subnet":"10.1.1.0/24","tenantName":"spectest","link-sets":{},"links":{"Tenant":{}}}`},
		{"network linked", &cm.Network{Key: "blue:web", Encap: "vlan", NetworkName: "web", TenantName: "blue",
			Links: cm.NetworkLinks{Tenant: cm.NewLink(cm.TypeTenant, "blue")}},
			`{"key":"blue:web","encap":"vlan","networkName":"web","tenantName":"blue","link-sets":{},"links":{"Tenant":{"type":"tenant","key":"blue"}}}`},
		{"policy empty", &cm.Policy{}, `{"link-sets":{},"links":{"Tenant":{}}}`},
		{"policy", &cm.Policy{PolicyName: "p1", TenantName: "spectest"},
			`{"policyName":"p1","tenantName":"spectest","link-sets":{},"links":{"Tenant":{}}}`},
		{"rule empty", &cm.Rule{}, `{"link-sets":{},"links":{"MatchEndpointGroup":{}}}`},
		{"rule", &cm.Rule{Action: "deny", Direction: "out", PolicyName: "p1", Port: 8080, Priority: 3, Protocol: "tcp", RuleID: "r2",
			TenantName: "spectest", ToEndpointGroup: "g2", ToIpAddress: "1.2.3.0/24"},
			`{"action":"deny","direction":"out","policyName":"p1","port":8080,"priority":3,"protocol":"tcp","ruleId":"r2","tenantName":"spectest","toEndpointGroup":"g2","toIpAddress":"1.2.3.0/24","link-sets":{},"links":{"MatchEndpointGroup":{}}}`},
		{"rule all", &cm.Rule{Key: "k", Action: "a", Direction: "d", FromEndpointGroup: "fg", FromIpAddress: "fi", FromNetwork: "fn", PolicyName: "p",
			Port: 1, Priority: 2, Protocol: "pr", RuleID: "r", TenantName: "t", ToEndpointGroup: "tg", ToIpAddress: "ti", ToNetwork: "tn"},
			`{"key":"k","action":"a","direction":"d","fromEndpointGroup":"fg","fromIpAddress":"fi","fromNetwork":"fn","policyName":"p","port":1,"priority":2,"protocol":"pr","ruleId":"r","tenantName":"t","toEndpointGroup":"tg","toIpAddress":"ti","toNetwork":"tn","link-sets":{},"links":{"MatchEndpointGroup":{}}}`},
		{"serviceLB empty", &cm.ServiceLB{}, `{"links":{"Network":{},"Tenant":{}}}`},
		{"serviceLB", &cm.ServiceLB{IpAddress: "1.1.1.1", NetworkName: "n1", Ports: []string{"80:8080:TCP"}, Selectors: []string{"a=b"},
			ServiceName: "svc", TenantName: "default"},
			`{"ipAddress":"1.1.1.1","networkName":"n1","ports":["80:8080:TCP"],"selectors":["a=b"],"serviceName":"svc","tenantName":"default","links":{"Network":{},"Tenant":{}}}`},
		{"tenant empty", &cm.Tenant{}, `{"link-sets":{}}`},
		{"tenant", &cm.Tenant{TenantName: "t1"}, `{"tenantName":"t1","link-sets":{}}`},
		{"tenant linked", &cm.Tenant{Key: "default", DefaultNetwork: "n1", TenantName: "default", LinkSets: cm.TenantLinkSets{
			Networks: cm.LinkSet{"default:n1": cm.NewLink(cm.TypeNetwork, "default:n1"), "default:n0": cm.NewLink(cm.TypeNetwork, "default:n0")},
			Policies: cm.LinkSet{}}},
			`{"key":"default","defaultNetwork":"n1","tenantName":"default","link-sets":{"Networks":{"default:n0":{"type":"network","key":"default:n0"},"default:n1":{"type":"network","key":"default:n1"}}}}`},
		{"volume empty", &cm.Volume{}, `{"link-sets":{},"links":{"Tenant":{}}}`},
		{"volume", &cm.Volume{DatastoreType: "d", MountPoint: "m", PoolName: "p", Size: "s", TenantName: "t", VolumeName: "v"},
			`{"datastoreType":"d","mountPoint":"m","poolName":"p","size":"s","tenantName":"t","volumeName":"v","link-sets":{},"links":{"Tenant":{}}}`},
		{"volumeProfile empty", &cm.VolumeProfile{}, `{"link-sets":{},"links":{"Tenant":{}}}`},
		{"volumeProfile", &cm.VolumeProfile{DatastoreType: "d", MountPoint: "m", PoolName: "p", Size: "s", TenantName: "t", VolumeProfileName: "v"},
			`{"datastoreType":"d","mountPoint":"m","poolName":"p","size":"s","tenantName":"t","volumeProfileName":"v","link-sets":{},"links":{"Tenant":{}}}`},
	}
	for _, tc := range cases {
		if got := mustJSON(t, tc.obj); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

// TestOperEncodingGolden pins the oper members and the inspect wrappers.
func TestOperEncodingGolden(t *testing.T) {
	ep := cm.EndpointOper{Key: "k", ContainerID: "c", ContainerName: "cn", EndpointGroupID: 3, EndpointGroupKey: "g:t", EndpointID: "e",
		HomingHost: "h", IntfName: "i", IpAddress: []string{"10.1.1.1", ""}, Labels: "map[]", MacAddress: "02:02:0a:01:01:01",
		Network: "n.t", ServiceName: "s", VirtualPort: "vport1", VtepIP: "1.2.3.4"}
	cases := []struct {
		name string
		obj  any
		want string
	}{
		{"endpoint oper", ep, `{"key":"k","containerID":"c","containerName":"cn","endpointGroupId":3,"endpointGroupKey":"g:t","endpointID":"e","homingHost":"h","intfName":"i","ipAddress":["10.1.1.1",""],"labels":"map[]","macAddress":"02:02:0a:01:01:01","network":"n.t","serviceName":"s","virtualPort":"vport1","vtepIP":"1.2.3.4"}`},
		{"aciGw oper", cm.AciGwOper{NumAppProfiles: 2}, `{"numAppProfiles":2}`},
		{"bgp oper", cm.BgpOper{AdminStatus: "up", NeighborStatus: "established", NumRoutes: 1, Routes: []string{"1.1.1.0/24"}},
			`{"adminStatus":"up","neighborStatus":"established","numRoutes":1,"routes":["1.1.1.0/24"]}`},
		{"epg oper", cm.EndpointGroupOper{AllocatedIPAddresses: "a", AvailableIPAddresses: "b", Endpoints: []cm.EndpointOper{{EndpointID: "e"}},
			ExternalPktTag: 2, GroupTag: "gt", NumEndpoints: 1, PktTag: 3},
			`{"allocatedIPAddresses":"a","availableIPAddresses":"b","endpoints":[{"endpointID":"e"}],"externalPktTag":2,"groupTag":"gt","numEndpoints":1,"pktTag":3}`},
		{"global oper", cm.GlobalOper{ClusterMode: "test", NumNetworks: 4, VlansInUse: "1077", VxlansInUse: "1-3"},
			`{"clusterMode":"test","numNetworks":4,"vlansInUse":"1077","vxlansInUse":"1-3"}`},
		{"global oper all", cm.GlobalOper{ClusterMode: "c", DefaultNetwork: "d", FreeVXLANsStart: 5, NumNetworks: 1, VlansInUse: "1", VxlansInUse: "2"},
			`{"clusterMode":"c","defaultNetwork":"d","freeVXLANsStart":5,"numNetworks":1,"vlansInUse":"1","vxlansInUse":"2"}`},
		{"network oper", cm.NetworkOper{AllocatedAddressesCount: 1, AllocatedIPAddresses: "10.1.2.254", AvailableIPAddresses: "10.1.2.1-10.1.2.253",
			ExternalPktTag: 5, NetworkTag: "web.blue", NumEndpoints: 1, PktTag: 1},
			`{"allocatedAddressesCount":1,"allocatedIPAddresses":"10.1.2.254","availableIPAddresses":"10.1.2.1-10.1.2.253","externalPktTag":5,"networkTag":"web.blue","numEndpoints":1,"pktTag":1}`},
		{"policy oper", cm.PolicyOper{NumEndpoints: 1, PolicyViolations: 2}, `{"numEndpoints":1,"policyViolations":2}`},
		{"serviceLB oper", cm.ServiceLBOper{NumProviders: 1, Providers: []cm.EndpointOper{{ServiceName: "s"}}, ServiceVip: "10.1.1.3"},
			`{"numProviders":1,"providers":[{"serviceName":"s"}],"serviceVip":"10.1.1.3"}`},
		{"tenant oper", cm.TenantOper{Networks: []cm.NetworkOper{{PktTag: 1}}, TotalAppProfiles: 1, TotalEPGs: 2, TotalEndpoints: 3,
			TotalNetprofiles: 4, TotalNetworks: 5, TotalPolicies: 6, TotalServicelbs: 7},
			`{"networks":[{"pktTag":1}],"totalAppProfiles":1,"totalEPGs":2,"totalEndpoints":3,"totalNetprofiles":4,"totalNetworks":5,"totalPolicies":6,"totalServicelbs":7}`},
		{"tenant oper empty", cm.TenantOper{}, `{}`},
		{"network inspect", cm.NetworkInspect{}, `{"Config":{"link-sets":{},"links":{"Tenant":{}}},"Oper":{}}`},
		{"netprofile inspect", cm.NetprofileInspect{}, `{"Config":{"link-sets":{},"links":{"Tenant":{}}}}`},
		{"endpoint inspect", cm.EndpointInspect{Oper: cm.EndpointOper{Key: "abc"}}, `{"Oper":{"key":"abc"}}`},
	}
	for _, tc := range cases {
		if got := mustJSON(t, tc.obj); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

// TestKindsCompile checks every kind's table against its Go type (all
// fields listed once, rules matching Go kinds, links matching members).
func TestKindsCompile(t *testing.T) {
	reg := cm.NewRegistry(nil)
	if err := cm.RegisterAll(reg, cm.Controllers{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"aciGw", "appProfile", "Bgp", "endpoint", "endpointGroup", "extContractsGroup", "global", "netprofile",
		"network", "policy", "rule", "serviceLB", "tenant", "volume", "volumeProfile"}
	got := reg.Types()
	if len(got) != len(want) {
		t.Fatalf("types %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("type %d = %q, want %q", i, got[i], want[i])
		}
	}
	if err := cm.Register(reg, cm.TenantKind(), nil); err == nil {
		t.Error("registering tenant twice succeeded")
	}
	bad := cm.TenantKind()
	bad.Fields = bad.Fields[:1]
	if err := cm.Register(cm.NewRegistry(nil), bad, nil); err == nil {
		t.Error("a table missing a field was accepted")
	}
	bad = cm.TenantKind()
	bad.LinkSets = bad.LinkSets[1:]
	if err := cm.Register(cm.NewRegistry(nil), bad, nil); err == nil {
		t.Error("a link-set table missing a member was accepted")
	}
	badRule := cm.RuleKind()
	badRule.Fields[6].MaxLen = 5 // port is an int
	if err := cm.Register(cm.NewRegistry(nil), badRule, nil); err == nil {
		t.Error("a length rule on an int field was accepted")
	}
}
