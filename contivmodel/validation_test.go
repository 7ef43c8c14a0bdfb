package contivmodel_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	cm "github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/contivmodel/modeltest"
)

func long(n int) string { return strings.Repeat("a", n) }

type badValue struct {
	field string
	value any
	want  string // exact first line of the 500 body
}

type typeCase struct {
	plural     string
	keyFields  []string
	base       map[string]any
	controller bool
	bad        []badValue
}

func tooLong(field string, v any) badValue {
	return badValue{field, v, field + " string too long"}
}

func badFormat(field string, vs ...any) []badValue {
	out := make([]badValue, len(vs))
	for i, v := range vs {
		out[i] = badValue{field, v, field + " string invalid format"}
	}
	return out
}

func outOfBound(field string, vs ...int) []badValue {
	out := make([]badValue, len(vs))
	for i, v := range vs {
		out[i] = badValue{field, v, field + " Value Out of bound"}
	}
	return out
}

func join(parts ...[]badValue) []badValue {
	var out []badValue
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// validationCases lists, per type, a valid body and every rule of the
// type's field table (docs/rest-api.md §2) with a value that breaks it.
func validationCases() []typeCase {
	return []typeCase{
		{plural: "aciGws", keyFields: []string{"name"}, controller: true,
			base: map[string]any{"name": "aciGw", "enforcePolicies": "yes", "includeCommonTenant": "no", "physicalDomain": "dom1",
				"nodeBindings": "topology/pod-1/node-101,topology/pod-1/node-102", "pathBindings": "topology/pod-1/paths-101/pathep-[eth1/14]"},
			bad: join(
				[]badValue{tooLong("enforcePolicies", long(65))}, badFormat("enforcePolicies", "maybe", "", "yesno"),
				[]badValue{tooLong("includeCommonTenant", long(65))}, badFormat("includeCommonTenant", "No", ""),
				[]badValue{tooLong("name", long(65))}, badFormat("name", "aciGw2", "global"),
				[]badValue{tooLong("nodeBindings", strings.Repeat("topology/pod-1/node-101,", 90)+"topology/pod-1/node-101")},
				badFormat("nodeBindings", "topology/tor-1/node-101", "topology/pod-1/node-101,", "pod-1/node-101"),
				[]badValue{tooLong("pathBindings", strings.Repeat("x", 2049))},
				badFormat("pathBindings", "pod-1/paths-101/pathep-[eth1/14]", "topology/pod-1/paths-101/pathep-[eth1/14],topology/pod-1/paths-101/pathep-eth1/15"),
				[]badValue{tooLong("physicalDomain", long(129))}, badFormat("physicalDomain", "", "dom_1", "-dom"),
			)},
		{plural: "appProfiles", keyFields: []string{"tenantName", "appProfileName"}, controller: true,
			base: map[string]any{"tenantName": "default", "appProfileName": "ap1", "endpointGroups": []string{"g1", "g2"}},
			bad: join(
				[]badValue{tooLong("appProfileName", long(65))}, badFormat("appProfileName", "ap_1", "", "-ap"),
				[]badValue{tooLong("tenantName", long(65))}, badFormat("tenantName", "t@1", ""),
			)},
		{plural: "Bgps", keyFields: []string{"hostname"}, controller: true,
			base: map[string]any{"hostname": "hostA", "routerip": "65.1.1.1/24", "as": "65001", "neighbor": "16.1.2.3", "neighbor-as": "65002"},
			bad: join(
				[]badValue{tooLong("as", long(65))},
				[]badValue{tooLong("hostname", long(257))}, badFormat("hostname", "host_a", "host."),
				[]badValue{tooLong("neighbor", "1111111111111111")}, badFormat("neighbor", "16.1.2", "16.1.2.256"),
				[]badValue{tooLong("neighbor-as", long(65))},
				badFormat("routerip", "", "65.1.1.1", "65.1.1.1/32", "65.1.1.1/0"),
			)},
		{plural: "endpointGroups", keyFields: []string{"tenantName", "groupName"}, controller: true,
			base: map[string]any{"tenantName": "default", "groupName": "g1", "networkName": "n1", "cfgdTag": "tag1", "ipPool": "10.1.1.1-10.1.1.10",
				"netProfile": "np1", "policies": []string{"p1"}, "extContractsGrps": []string{"e1"}},
			bad: join(
				[]badValue{tooLong("cfgdTag", long(129))}, badFormat("cfgdTag", "tag=x", "a/b"),
				[]badValue{tooLong("groupName", long(65))}, badFormat("groupName", "in_valid", ""),
				badFormat("ipPool", "10.1.1.1/24", "10.1.1.1-", "x"),
				[]badValue{tooLong("netProfile", long(65))},
				[]badValue{tooLong("networkName", long(65))}, badFormat("networkName", "", "n_1"),
				[]badValue{tooLong("tenantName", long(65))}, badFormat("tenantName", "", "t:1"),
			)},
		{plural: "extContractsGroups", keyFields: []string{"tenantName", "contractsGroupName"}, controller: true,
			base: map[string]any{"tenantName": "default", "contractsGroupName": "ec1", "contractsType": "provided", "contracts": []string{"uni/tn-common/brc-default"}},
			bad: join(
				[]badValue{tooLong("contractsGroupName", long(65))}, badFormat("contractsGroupName", "ec 1", ""),
				[]badValue{tooLong("tenantName", long(65))}, badFormat("tenantName", "t#1"),
			)},
		{plural: "globals", keyFields: []string{"name"}, controller: true,
			base: map[string]any{"name": "global", "arpMode": "proxy", "fwdMode": "bridge", "networkInfraType": "default",
				"pvtSubnet": "172.19.0.0/16", "vlans": "1-4094", "vxlans": "1-10000"},
			bad: join(
				[]badValue{tooLong("arpMode", long(65))}, badFormat("arpMode", "xyz"),
				[]badValue{tooLong("fwdMode", long(65))}, badFormat("fwdMode", "xyz"),
				[]badValue{tooLong("name", long(65))}, badFormat("name", "global2"),
				[]badValue{tooLong("networkInfraType", long(65))}, badFormat("networkInfraType", "xyz"),
				badFormat("pvtSubnet", "172.21.0.0/24", "", "172.21.0/16"),
				badFormat("vlans", "1", "1?2", "abcd", "", "1-2,5-6"),
				badFormat("vxlans", "1", "", "1-123456789"),
			)},
		{plural: "netprofiles", keyFields: []string{"tenantName", "profileName"}, controller: true,
			base: map[string]any{"tenantName": "default", "profileName": "np1", "DSCP": 5, "bandwidth": "10 Gbps", "burst": 1500},
			bad: join(
				outOfBound("DSCP", 64, 72, -1),
				[]badValue{tooLong("bandwidth", strings.Repeat("1", 63)+"Gbps")},
				badFormat("bandwidth", "invalid", "10 Gkms", "10 G12ms", "10 ms", "10 bms", "Gkms", "Gbps", "0 Gbps", " 10 Gbps"),
				outOfBound("burst", 10487, -1),
				[]badValue{tooLong("profileName", long(65))},
			)},
		{plural: "networks", keyFields: []string{"tenantName", "networkName"}, controller: true,
			base: map[string]any{"tenantName": "default", "networkName": "n1", "encap": "vlan", "subnet": "10.1.1.0/24", "gateway": "10.1.1.254",
				"cfgdTag": "contiv-net", "ipv6Subnet": "2016:0617::/120", "ipv6Gateway": "2016:0617::1", "pktTag": 10, "nwType": "data"},
			bad: join(
				[]badValue{tooLong("cfgdTag", long(129))}, badFormat("cfgdTag", "tag=contiv-net", "io.contiv.network/test"),
				badFormat("encap", "vvvv", ""),
				badFormat("gateway", "10.1.1", "10.1.1.1/24"),
				badFormat("ipv6Gateway", "xyz", "2016::/64"),
				badFormat("ipv6Subnet", "2016:0617::/128", "2016:0617::/108", "2016:0617::"),
				[]badValue{tooLong("networkName", long(65))}, badFormat("networkName", "contiv:invalid", "contiv|invalid", "-invalid", ""),
				badFormat("nwType", "infratest", "testinfra", "testdata", "datatest"),
				outOfBound("pktTag", 16777217, -1),
				badFormat("subnet", "10.1.1.10-20/24", "10.1.1.10-10.1.20/24", "10.1.1.10-10.1.1.1.30/24", "10.1.1/24", "10.1.1.256/24",
					"10.1.1.1/32", ""),
				[]badValue{tooLong("tenantName", long(65))}, badFormat("tenantName", "t~1", ""),
			)},
		{plural: "policys", keyFields: []string{"tenantName", "policyName"}, controller: true,
			base: map[string]any{"tenantName": "default", "policyName": "p1"},
			bad: join(
				[]badValue{tooLong("policyName", long(65))}, badFormat("policyName", "p*1", ""),
				[]badValue{tooLong("tenantName", long(65))}, badFormat("tenantName", "t^1", ""),
			)},
		{plural: "rules", keyFields: []string{"tenantName", "policyName", "ruleId"}, controller: true,
			base: map[string]any{"tenantName": "default", "policyName": "p1", "ruleId": "1", "direction": "in", "action": "allow",
				"priority": 5, "protocol": "tcp", "port": 80, "fromEndpointGroup": "g1", "fromNetwork": "n1", "fromIpAddress": "10.1.1.1/24",
				"toEndpointGroup": "g2", "toNetwork": "n2", "toIpAddress": "10.1.2.1-20/24"},
			bad: join(
				badFormat("action", "xyz", "accept", ""),
				badFormat("direction", "both", "xyz", ""),
				[]badValue{tooLong("fromEndpointGroup", long(65))}, badFormat("fromEndpointGroup", "g_1"),
				badFormat("fromIpAddress", "invalid", "10.1.1.1/32"),
				[]badValue{tooLong("fromNetwork", long(65))}, badFormat("fromNetwork", "n 1"),
				[]badValue{tooLong("policyName", long(65))}, badFormat("policyName", "p!1", ""),
				outOfBound("port", 65536, -1),
				outOfBound("priority", 101, -1),
				badFormat("protocol", "xyz", "1234", "TCP"),
				[]badValue{tooLong("ruleId", long(65))}, badFormat("ruleId", "r_1", ""),
				[]badValue{tooLong("tenantName", long(65))}, badFormat("tenantName", "-t", ""),
				[]badValue{tooLong("toEndpointGroup", long(65))}, badFormat("toEndpointGroup", "g@2"),
				badFormat("toIpAddress", "invalid", "1.2.3.4-300"),
				[]badValue{tooLong("toNetwork", long(65))}, badFormat("toNetwork", "n_2"),
			)},
		{plural: "serviceLBs", keyFields: []string{"tenantName", "serviceName"}, controller: true,
			base: map[string]any{"tenantName": "default", "serviceName": "svc1", "networkName": "n1", "ipAddress": "10.1.1.3",
				"ports": []string{"80:8080:TCP"}, "selectors": []string{"key1=value1", "key2=value2"}},
			bad: join(
				[]badValue{tooLong("ipAddress", "100.100.100.1000")}, badFormat("ipAddress", "10.1.1", "10.1.1.300"),
				[]badValue{tooLong("networkName", long(65))}, badFormat("networkName", "n_1", ""),
				[]badValue{tooLong("serviceName", long(257))}, badFormat("serviceName", "svc_1", ""),
				[]badValue{tooLong("tenantName", long(65))}, badFormat("tenantName", "t_1", ""),
			)},
		{plural: "tenants", keyFields: []string{"tenantName"}, controller: true,
			base: map[string]any{"tenantName": "tenant1", "defaultNetwork": "n1"},
			bad: join(
				[]badValue{tooLong("defaultNetwork", long(65))}, badFormat("defaultNetwork", "n_1", "-n"),
				[]badValue{tooLong("tenantName", long(65))},
				badFormat("tenantName", "tenant:invalid", "tenant|invalid", `tenant\invalid`, "tenant#invalid", "-tenant",
					"tenant@invalid", "tenant!invalid", "tenant~invalid", "tenant*invalid", "tenant^invalid", "tenant invalid", "tenant_invalid"),
			)},
		{plural: "volumes", keyFields: []string{"tenantName", "volumeName"},
			base: map[string]any{"tenantName": "default", "volumeName": "v1", "size": "10G"}},
		{plural: "volumeProfiles", keyFields: []string{"tenantName", "volumeProfileName"},
			base: map[string]any{"tenantName": "default", "volumeProfileName": "vp1", "size": "10G"}},
	}
}

func urlKey(body map[string]any, keyFields []string) string {
	parts := make([]string, len(keyFields))
	for i, f := range keyFields {
		parts[i], _ = body[f].(string)
	}
	return strings.Join(parts, ":")
}

func itemPath(plural, key string) string {
	return "/api/v1/" + plural + "/" + url.PathEscape(key) + "/"
}

// expectError checks a refusal: a client-error status (400, 404, 409),
// text/plain and the exact message.
func expectError(t *testing.T, what string, r modeltest.Response, want string) {
	t.Helper()
	switch r.Status {
	case http.StatusBadRequest, http.StatusNotFound, http.StatusConflict:
	default:
		t.Errorf("%s: status %d, want 400, 404 or 409", what, r.Status)
	}
	if r.ContentType != "text/plain; charset=utf-8" || r.Body != want+"\n" {
		t.Errorf("%s: got %d %q %q, want text/plain %q", what, r.Status, r.ContentType, r.Body, want+"\n")
	}
}

// expectInvalidKey checks the refusal of a body whose key fields do not
// make the URL key: 400, the original's "Invalid Key" first, then the key.
func expectInvalidKey(t *testing.T, what string, r modeltest.Response, urlKey string) {
	t.Helper()
	want := fmt.Sprintf("Invalid Key: URL key %q differs from ", urlKey)
	if r.Status != http.StatusBadRequest || !strings.HasPrefix(r.Body, want) {
		t.Errorf("%s: got %d %q, want 400 %q…", what, r.Status, r.Body, want)
	}
}

// expectStatus is expectError with the exact status.
func expectStatus(t *testing.T, what string, r modeltest.Response, status int, want string) {
	t.Helper()
	if r.Status != status || r.ContentType != "text/plain; charset=utf-8" || r.Body != want+"\n" {
		t.Errorf("%s: got %d %q %q, want %d text/plain %q", what, r.Status, r.ContentType, r.Body, status, want+"\n")
	}
}

func expectOK(t *testing.T, what string, r modeltest.Response) {
	t.Helper()
	if r.Status != http.StatusOK || r.ContentType != "application/json" {
		t.Fatalf("%s: got %d %q %q, want 200 application/json", what, r.Status, r.ContentType, r.Body)
	}
}

// TestValidationRefusals sends, for every type, one request per validation
// rule and checks the exact message and that the store did not change.
func testValidationRefusals(t *testing.T, newStore storeFunc) {
	total := 0
	for _, tc := range validationCases() {
		t.Run(tc.plural, func(t *testing.T) {
			kv := newStore(t)
			srv := modeltest.Start(t, kv, cm.NoopControllers())
			baseKey := urlKey(tc.base, tc.keyFields)
			baseBody := mustJSON(t, tc.base)
			r := srv.Do(t, http.MethodPost, itemPath(tc.plural, baseKey), baseBody)
			if tc.controller {
				expectOK(t, "create base", r)
			} else {
				expectError(t, "create base", r, "Invalid object type")
			}
			before := dump(t, kv)
			if tc.controller && len(before) != 1 {
				t.Fatalf("store after base create: %v", before)
			}

			// The key check comes first, even before invalid fields.
			for _, wrong := range []string{baseKey + "x", "x" + baseKey, "other"} {
				r := srv.Do(t, http.MethodPost, itemPath(tc.plural, wrong), baseBody)
				expectInvalidKey(t, "key "+wrong, r, wrong)
			}
			for i, bad := range tc.bad {
				body := maps.Clone(tc.base)
				body[bad.field] = bad.value
				key := urlKey(body, tc.keyFields)
				method := http.MethodPost
				if i%2 == 1 {
					method = http.MethodPut
				}
				r := srv.Do(t, method, itemPath(tc.plural, key), mustJSON(t, body))
				expectError(t, fmt.Sprintf("%s %s=%v", method, bad.field, bad.value), r, bad.want)
				total++
			}
			if after := dump(t, kv); !reflect.DeepEqual(before, after) {
				t.Errorf("store changed by refused requests:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
	if total < 150 {
		t.Errorf("only %d refusals checked", total)
	}
}

// TestValidationOrder checks that the first failing field in table order
// wins and that the key check precedes every field.
func testValidationOrder(t *testing.T, newStore storeFunc) {
	srv := modeltest.Start(t, newStore(t), cm.NoopControllers())
	r := srv.Do(t, http.MethodPost, "/api/v1/networks/t1:n1/",
		`{"tenantName":"t1","networkName":"n1","encap":"bad","subnet":"bad","cfgdTag":"a=b"}`)
	expectError(t, "two bad fields", r, "cfgdTag string invalid format")
	r = srv.Do(t, http.MethodPost, "/api/v1/networks/t1:n1/",
		`{"tenantName":"t1","networkName":"n1","encap":"bad","subnet":"bad"}`)
	expectError(t, "encap before subnet", r, "encap string invalid format")
	r = srv.Do(t, http.MethodPost, "/api/v1/networks/t1:n2/",
		`{"tenantName":"t1","networkName":"n1","encap":"bad"}`)
	expectStatus(t, "key first", r, http.StatusBadRequest, `Invalid Key: URL key "t1:n2" differs from "t1:n1" (tenantName:networkName in the body)`)
	r = srv.Do(t, http.MethodPost, "/api/v1/rules/t:p:1/",
		`{"tenantName":"t","policyName":"p","ruleId":"1","action":"allow","direction":"in","port":70000,"priority":500}`)
	expectError(t, "port before priority", r, "port Value Out of bound")
	// Length is checked before the format.
	r = srv.Do(t, http.MethodPost, "/api/v1/tenants/t1/", `{"tenantName":"t1","defaultNetwork":"`+strings.Repeat("_", 65)+`"}`)
	expectError(t, "length before format", r, "defaultNetwork string too long")
}

// TestValidationDefaults checks the defaults applied by validation (nwType,
// priority) in the answer and in the stored object.
func testValidationDefaults(t *testing.T, newStore storeFunc) {
	kv := newStore(t)
	srv := modeltest.Start(t, kv, cm.NoopControllers())
	r := srv.Do(t, http.MethodPost, "/api/v1/networks/default:n1/",
		`{"tenantName":"default","networkName":"n1","encap":"vxlan","subnet":"10.1.1.0/24"}`)
	expectOK(t, "network", r)
	want := `{"key":"default:n1","encap":"vxlan","networkName":"n1","nwType":"data","subnet":"10.1.1.0/24","tenantName":"default","link-sets":{},"links":{"Tenant":{}}}`
	if r.Body != want+"\n" {
		t.Errorf("network answer %q, want %q", r.Body, want)
	}
	if got := dump(t, kv)["obj/modeldb/network/default:n1"]; got != want {
		t.Errorf("stored network %q, want %q", got, want)
	}
	for _, body := range []string{
		`{"tenantName":"default","policyName":"p","ruleId":"1","action":"allow","direction":"in"}`,
		`{"tenantName":"default","policyName":"p","ruleId":"1","action":"allow","direction":"in","priority":0}`,
	} {
		r = srv.Do(t, http.MethodPost, "/api/v1/rules/default:p:1/", body)
		expectOK(t, "rule", r)
		var rule cm.Rule
		if err := json.Unmarshal([]byte(r.Body), &rule); err != nil || rule.Priority != 1 {
			t.Errorf("rule priority default: %v %+v", err, rule)
		}
	}
	// Range edges are accepted.
	for _, body := range []string{
		`{"tenantName":"default","profileName":"np","DSCP":63,"burst":10486,"bandwidth":"10 1bps"}`,
		`{"tenantName":"default","profileName":"np","DSCP":0,"burst":0,"bandwidth":""}`,
	} {
		expectOK(t, "netprofile "+body, srv.Do(t, http.MethodPost, "/api/v1/netprofiles/default:np/", body))
	}
	expectOK(t, "rule edges", srv.Do(t, http.MethodPost, "/api/v1/rules/default:p:2/",
		`{"tenantName":"default","policyName":"p","ruleId":"2","action":"deny","direction":"out","priority":100,"port":65535,"protocol":"255"}`))
	expectOK(t, "pktTag edge", srv.Do(t, http.MethodPost, "/api/v1/networks/default:n2/",
		`{"tenantName":"default","networkName":"n2","encap":"vlan","subnet":"10.1.1.10-10.1.5.254/16","pktTag":16777216,"ipv6Subnet":"::/64"}`))
}

// testValidationAccepts checks values the spec documents as valid, so the
// patterns are not stricter than the original's.
func testValidationAccepts(t *testing.T, newStore storeFunc) {
	srv := modeltest.Start(t, newStore(t), cm.NoopControllers())
	bases := map[string]typeCase{}
	for _, tc := range validationCases() {
		bases[tc.plural] = tc
	}
	for _, ok := range []struct {
		plural, field string
		values        []any
	}{
		{"networks", "subnet", []any{"10.1.1.10-10.1.1.20/24", "10.1.1.10-10.1.5.254/16", "10.1.1.1/24", "10.0.0.0/8", "1.2.3.4/31"}},
		{"networks", "cfgdTag", []any{"contiv-net", "io.contiv.network.test", ""}},
		{"networks", "networkName", []any{"net-1", "a", "a.b", "A1"}},
		{"networks", "ipv6Subnet", []any{"2016:0617::/120", "::/64", "1::/64", "2001:2000::/32", "2001:2000:1234:4422::/64",
			"2001:db8:77::/64", "fe80:0:0:0:0:0:0:1/99", "::/107", "::/110", ""}},
		{"networks", "ipv6Gateway", []any{"2001:db8:77::1", "::1", "", "1:2:3:4:5:6:7:8"}},
		{"networks", "nwType", []any{"infra", "data", ""}},
		{"networks", "encap", []any{"vxlan", "vlan"}},
		{"networks", "gateway", []any{"", "10.1.1.1", "0.0.0.0", "255.255.255.255"}},
		{"tenants", "tenantName", []any{"tenant1", "tenant-valid", "default", "a.b.c"}},
		{"tenants", "defaultNetwork", []any{"", "n1", "a."}},
		{"netprofiles", "bandwidth", []any{"5Mb", "900Mb", "2gbps", "10 Gbps", "10 Gb", "10 gb", "4G", "4g", "20mb", "13mb", "6gb",
			"3gbps", "3Gbps", "10 mbps", "5gbps", "20mbps", "10 K", "7kb", ""}},
		{"globals", "vlans", []any{"1-4094", "1-5000", "0-4094", "1000-2000", "9-301"}},
		{"globals", "vxlans", []any{"1-10000", "1-100000", "1001-2000"}},
		{"globals", "networkInfraType", []any{"aci", "aci-opflex", "default", ""}},
		{"globals", "arpMode", []any{"flood", "proxy", ""}},
		{"globals", "fwdMode", []any{"routing", "bridge", ""}},
		{"globals", "pvtSubnet", []any{"172.20.0.0/16"}},
		{"rules", "protocol", []any{"", "tcp", "udp", "icmp", "6", "17", "255"}},
		{"rules", "fromIpAddress", []any{"", "10.1.1.1", "10.1.1.1/24", "10.1.1.1-20", "10.1.1.1-20/24"}},
		{"rules", "fromEndpointGroup", []any{"", "g1", "g."}},
		{"rules", "direction", []any{"in", "out"}},
		{"rules", "action", []any{"allow", "deny"}},
		{"aciGws", "pathBindings", []any{"", "topology/pod-1/paths-101/pathep-[eth1/14]",
			"topology/pod-1/paths-101/pathep-[eth1/14],topology/pod-2/paths-202/pathep-[eth12/1]"}},
		{"aciGws", "nodeBindings", []any{"", "topology/pod-1/node-101", "topology/pod-1/node-101,topology/pod-1/node-102"}},
		{"aciGws", "enforcePolicies", []any{"yes", "no"}},
		{"Bgps", "routerip", []any{"65.1.1.1/24", "50.1.1.1-9/24"}},
		{"Bgps", "neighbor", []any{"", "16.1.2.3"}},
		{"endpointGroups", "ipPool", []any{"", "10.36.0.1-10.36.0.10", "10.1.1.5"}},
		{"serviceLBs", "ipAddress", []any{"", "10.1.1.3"}},
	} {
		tc := bases[ok.plural]
		for _, v := range ok.values {
			body := maps.Clone(tc.base)
			body[ok.field] = v
			r := srv.Do(t, http.MethodPost, itemPath(tc.plural, urlKey(body, tc.keyFields)), mustJSON(t, body))
			if r.Status != http.StatusOK {
				t.Errorf("%s %s=%q refused: %d %q", ok.plural, ok.field, v, r.Status, r.Body)
			}
		}
	}
}
