package policy_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/contiv/netplugin/netmaster/master/mastertest"
)

func TestRules(t *testing.T) {
	e := newEnv(t)
	e.CreateNet("default", "net", "vlan", "10.1.1.0/24", "", 0)
	e.CreateNet("default", "net2", "vlan", "10.2.1.0/24", "", 0)
	e.OK("POST", "/api/v1/policys/default:p1/", `{"tenantName":"default","policyName":"p1"}`)
	e.CreateEPG("default", "g0", "net", "")

	// 24: rules on an unattached policy.
	e.OK("POST", mastertest.RulePath("default", "p1", "1"), mastertest.RuleBody("default", "p1", "1", "in", `"protocol":"tcp","port":80`))
	e.OK("POST", mastertest.RulePath("default", "p1", "2"), mastertest.RuleBody("default", "p1", "2", "out", `"toNetwork":"net2","priority":10`))
	e.OK("POST", mastertest.RulePath("default", "p1", "3"), mastertest.RuleBody("default", "p1", "3", "in", `"fromEndpointGroup":"g0","protocol":"tcp"`))
	if ks := e.StateKeys("state/policyRule/"); len(ks) != 0 {
		t.Fatalf("rule states without groups: %v", ks)
	}
	if b := e.OK("GET", "/api/v1/policys/default:p1/", ""); !strings.Contains(b, `"Rules":{"default:p1:1"`) {
		t.Fatalf("policy rules: %s", b)
	}
	if b := e.OK("GET", "/api/v1/endpointGroups/default:g0/", ""); !strings.Contains(b, `"MatchRules":{"default:p1:3"`) {
		t.Fatalf("group match rules: %s", b)
	}
	if b := e.OK("GET", mastertest.RulePath("default", "p1", "3"), ""); !strings.Contains(b, `"MatchEndpointGroup":{"type":"endpointGroup","key":"default:g0"}`) || !strings.Contains(b, `"Policies":{"default:p1"`) {
		t.Fatalf("rule links: %s", b)
	}

	// 26: refusals, in spec order.
	e.Fail("POST", mastertest.RulePath("default", "p1", "1"), mastertest.RuleBody("default", "p1", "1", "in", ""), "can not update a rule after its created")
	e.Fail("POST", mastertest.RulePath("default", "p1", "9"), mastertest.RuleBody("default", "p1", "9", "in", `"toNetwork":"net"`), "can not specify 'to' parameters in incoming rule")
	e.Fail("POST", mastertest.RulePath("default", "p1", "9"), mastertest.RuleBody("default", "p1", "9", "in", `"toEndpointGroup":"g0"`), "can not specify 'to' parameters in incoming rule")
	e.Fail("POST", mastertest.RulePath("default", "p1", "9"), mastertest.RuleBody("default", "p1", "9", "in", `"fromNetwork":"net","fromIpAddress":"10.1.1.1"`), "can not specify both from network and from ip address")
	e.Fail("POST", mastertest.RulePath("default", "p1", "9"), mastertest.RuleBody("default", "p1", "9", "in", `"fromNetwork":"net","fromEndpointGroup":"g0"`), "can not specify both from network and from EndpointGroup")
	e.Fail("POST", mastertest.RulePath("default", "p1", "9"), mastertest.RuleBody("default", "p1", "9", "out", `"fromNetwork":"net"`), "can not specify 'from' parameters in outgoing rule")
	e.Fail("POST", mastertest.RulePath("default", "p1", "9"), mastertest.RuleBody("default", "p1", "9", "out", `"fromIpAddress":"10.1.1.1"`), "can not specify 'from' parameters in outgoing rule")
	e.Fail("POST", mastertest.RulePath("default", "p1", "9"), mastertest.RuleBody("default", "p1", "9", "out", `"toNetwork":"net","toIpAddress":"10.1.1.1"`), "can not specify both to-network and to-ip address")
	e.Fail("POST", mastertest.RulePath("default", "p1", "9"), mastertest.RuleBody("default", "p1", "9", "out", `"toNetwork":"net","toEndpointGroup":"g0"`), "can not specify both to-network and to-EndpointGroup")
	e.Fail("POST", mastertest.RulePath("default", "p1", "9"), mastertest.RuleBody("default", "p1", "9", "in", `"fromEndpointGroup":"nosuch"`), "endpoint group default:nosuch not found")
	e.Fail("POST", mastertest.RulePath("default", "p1", "9"), mastertest.RuleBody("default", "p1", "9", "out", `"toEndpointGroup":"nosuch"`), "endpoint group default:nosuch not found")
	e.Fail("POST", mastertest.RulePath("default", "p1", "9"), mastertest.RuleBody("default", "p1", "9", "in", `"fromNetwork":"nosuch"`), "from Network default:nosuch not found")
	e.Fail("POST", mastertest.RulePath("default", "p1", "9"), mastertest.RuleBody("default", "p1", "9", "out", `"toNetwork":"nosuch"`), "to Network default:nosuch not found")
	e.Fail("POST", mastertest.RulePath("default", "nosuch", "9"), mastertest.RuleBody("default", "nosuch", "9", "in", ""), "Policy default:nosuch not found")
	e.Fail("POST", mastertest.RulePath("nosuch", "p1", "9"), mastertest.RuleBody("nosuch", "p1", "9", "in", ""), "Policy nosuch:p1 not found")
	// 25: toIpAddress on an incoming rule.
	e.Fail("POST", mastertest.RulePath("default", "p1", "9"), mastertest.RuleBody("default", "p1", "9", "in", `"toIpAddress":"10.1.1.5"`), "failed to configure 10.1.1.5, 0 endpoint groups linked to policy p1 ")

	// 19: attaching installs every rule of the policy.
	e.CreateEPG("default", "g1", "net", `"policies":["p1"]`)
	if ks := e.StateKeys("state/policy/"); len(ks) != 1 || ks[0] != "default:g1:default:p1" {
		t.Fatalf("epg policies: %v", ks)
	}
	want := []string{
		"default:g1:default:p1:default:p1:1:inRx", "default:g1:default:p1:default:p1:1:inTx",
		"default:g1:default:p1:default:p1:2:outTx",
		"default:g1:default:p1:default:p1:3:inRx",
	}
	if ks := e.StateKeys("state/policyRule/"); fmt.Sprint(ks) != fmt.Sprint(want) {
		t.Fatalf("rule states:\n got %v\nwant %v", ks, want)
	}
	var g1 mastertest.GroupRecord
	if err := json.Unmarshal([]byte(e.Dump()["state/endpointGroups/g1:default"]), &g1); err != nil {
		t.Fatal(err)
	}
	var g0 mastertest.GroupRecord
	if err := json.Unmarshal([]byte(e.Dump()["state/endpointGroups/g0:default"]), &g0); err != nil {
		t.Fatal(err)
	}
	gid, rid := g1.EndpointGroupID, g0.EndpointGroupID
	checks := map[string]mastertest.OfnetRule{
		want[0]: {RuleId: want[0], Priority: 1, DstEndpointGroup: gid, IpProtocol: 6, DstPort: 80, Action: "allow"},
		want[1]: {RuleId: want[1], Priority: 1, SrcEndpointGroup: gid, IpProtocol: 6, SrcPort: 80, Action: "allow"},
		want[2]: {RuleId: want[2], Priority: 10, SrcEndpointGroup: gid, DstIpAddr: "10.2.1.0/24", Action: "allow"},
		want[3]: {RuleId: want[3], Priority: 1, SrcEndpointGroup: rid, DstEndpointGroup: gid, IpProtocol: 6, TcpFlags: "syn,!ack", Action: "allow", SrcEndpointGroupName: "default:g0"},
	}
	for id, w := range checks {
		if got := e.PolicyRule(id); got != w {
			t.Fatalf("rule %s:\n got %+v\nwant %+v", id, got, w)
		}
	}

	// A rule added while attached is installed; deleting it uninstalls.
	e.OK("POST", mastertest.RulePath("default", "p1", "4"), mastertest.RuleBody("default", "p1", "4", "out", `"protocol":"udp","port":53,"toIpAddress":"8.8.8.8"`))
	if r := e.PolicyRule("default:g1:default:p1:default:p1:4:outRx"); r.SrcIpAddr != "8.8.8.8" || r.SrcPort != 53 || r.DstEndpointGroup != gid || r.IpProtocol != 17 {
		t.Fatalf("outRx: %+v", r)
	}
	if !strings.Contains(e.Dump()["state/policy/default:g1:default:p1"], `"default:p1:4"`) {
		t.Fatal("rule map missing in epg policy")
	}
	e.OK("DELETE", mastertest.RulePath("default", "p1", "4"), "")
	if ks := e.StateKeys("state/policyRule/"); fmt.Sprint(ks) != fmt.Sprint(want) {
		t.Fatalf("rule states after delete: %v", ks)
	}
	if strings.Contains(e.Dump()["state/policy/default:g1:default:p1"], `"default:p1:4"`) {
		t.Fatal("rule map left in epg policy")
	}

	// 25 continued: one group, IP not in it / in it.
	e.Fail("POST", mastertest.RulePath("default", "p1", "9"), mastertest.RuleBody("default", "p1", "9", "in", `"toIpAddress":"10.1.1.5"`), "failed to configure 10.1.1.5, unable to read endpoint state")
	ep := e.CreateEndpoint(mastertest.CreateEP("default", "net", "g1", "c1", ""))
	ip := ep.EndpointConfig.IPAddress
	e.Fail("POST", mastertest.RulePath("default", "p1", "9"), mastertest.RuleBody("default", "p1", "9", "in", `"toIpAddress":"10.1.1.200"`), "failed to configure 10.1.1.200, ip address is not in epg g1:default")
	e.OK("POST", mastertest.RulePath("default", "p1", "9"), mastertest.RuleBody("default", "p1", "9", "in", fmt.Sprintf(`"toIpAddress":%q`, ip)))
	if r := e.PolicyRule("default:g1:default:p1:default:p1:9:inRx"); r.DstIpAddr != ip {
		t.Fatalf("inRx with to ip: %+v", r)
	}
	e.OK("DELETE", mastertest.RulePath("default", "p1", "9"), "")

	// Detaching removes the instance and its rules.
	e.CreateEPG("default", "g1", "net", "")
	if ks := e.StateKeys("state/policy"); len(ks) != 0 {
		t.Fatalf("states after detach: %v", ks)
	}
	e.CreateEPG("default", "g1", "net", `"policies":["p1"]`)
	if ks := e.StateKeys("state/policyRule/"); len(ks) != 4 {
		t.Fatalf("rule states after reattach: %v", ks)
	}

	// 27.
	e.Fail("DELETE", mastertest.RulePath("default", "p1", "nosuch"), "", "")
	e.OK("DELETE", mastertest.RulePath("default", "p1", "3"), "")
	if b := e.OK("GET", "/api/v1/endpointGroups/default:g0/", ""); strings.Contains(b, "MatchRules") {
		t.Fatalf("group match rules after delete: %s", b)
	}
	if ks := e.StateKeys("state/policyRule/"); len(ks) != 3 {
		t.Fatalf("rule states after delete: %v", ks)
	}
	e.OK("POST", "/plugin/deleteEndpoint", mastertest.DeleteEP("default", "net", "g1", "c1"))
	e.OK("DELETE", "/api/v1/endpointGroups/default:g1/", "")
	if ks := e.StateKeys("state/policy"); len(ks) != 0 {
		t.Fatalf("states after group delete: %v", ks)
	}
	e.OK("DELETE", mastertest.RulePath("default", "p1", "1"), "")
	e.OK("DELETE", "/api/v1/policys/default:p1/", "")
	e.Fail("DELETE", mastertest.RulePath("default", "p1", "2"), "", "")
}

func TestAppProfiles(t *testing.T) {
	e := newEnv(t)
	e.CreateNet("default", "net", "vlan", "10.1.1.0/24", "", 0)
	for _, g := range []string{"group1", "group2", "group3"} {
		e.CreateEPG("default", g, "net", "")
	}
	ap := func(name, groups string) (string, string) {
		return "/api/v1/appProfiles/default:" + name + "/",
			fmt.Sprintf(`{"tenantName":"default","appProfileName":%q,"endpointGroups":%s}`, name, groups)
	}
	// 28.
	p, b := ap("a0", `[]`)
	e.OK("POST", p, b)
	p, b = ap("a1", `["group1"]`)
	e.OK("POST", p, b)
	p, b = ap("a2", `["group1","group3"]`)
	e.OK("POST", p, b)
	if g := e.OK("GET", "/api/v1/endpointGroups/default:group3/", ""); !strings.Contains(g, `"AppProfile":{"type":"appProfile","key":"default:a2"}`) {
		t.Fatalf("group link: %s", g)
	}
	if tb := e.OK("GET", "/api/v1/tenants/default/", ""); !strings.Contains(tb, `"AppProfiles":{"default:a0"`) {
		t.Fatalf("tenant link: %s", tb)
	}
	p, b = ap("a2", `["group1","group2","group3"]`)
	e.OK("POST", p, b)
	if g := e.OK("GET", p, ""); !strings.Contains(g, `"endpointGroups":["group1","group2","group3"]`) || !strings.Contains(g, `"default:group2"`) {
		t.Fatalf("updated profile: %s", g)
	}
	p, b = ap("a2", `["group2"]`)
	e.OK("POST", p, b)
	if g := e.OK("GET", "/api/v1/endpointGroups/default:group3/", ""); !strings.Contains(g, `"AppProfile":{}`) {
		t.Fatalf("dropped group still linked: %s", g)
	}
	p, b = ap("a3", `["group1","nosuch"]`)
	e.Fail("POST", p, b, "EndpointGroup default:nosuch not found")
	e.Fail("GET", p, "", "")
	p, b = ap("a2", `["nosuch"]`)
	e.Fail("POST", p, b, "EndpointGroup default:nosuch not found")
	e.Fail("POST", "/api/v1/appProfiles/nosuch:a9/", `{"tenantName":"nosuch","appProfileName":"a9"}`, "Tenant nosuch not found")
	// 21.
	e.Fail("DELETE", "/api/v1/endpointGroups/default:group2/", "", "Cannot delete group2, associated to appProfile default:a2")
	e.Fail("DELETE", "/api/v1/tenants/default/", "", "")
	for _, n := range []string{"a0", "a1", "a2"} {
		e.OK("DELETE", "/api/v1/appProfiles/default:"+n+"/", "")
	}
	if g := e.OK("GET", "/api/v1/endpointGroups/default:group2/", ""); !strings.Contains(g, `"AppProfile":{}`) {
		t.Fatalf("group link after delete: %s", g)
	}
	if tb := e.OK("GET", "/api/v1/tenants/default/", ""); strings.Contains(tb, "AppProfiles") {
		t.Fatalf("tenant link after delete: %s", tb)
	}
	e.OK("DELETE", "/api/v1/endpointGroups/default:group2/", "")
}

// Deleting a policy deletes its rules through the rule controller: the
// groups a rule matched lose it from their MatchRules.
func TestPolicyDeleteCascadesRules(t *testing.T) {
	e := newEnv(t)
	e.CreateNet("default", "net", "vlan", "10.1.1.0/24", "", 0)
	e.CreateEPG("default", "g0", "net", "")
	e.OK("POST", "/api/v1/policys/default:p1/", `{"tenantName":"default","policyName":"p1"}`)
	e.OK("POST", mastertest.RulePath("default", "p1", "1"), mastertest.RuleBody("default", "p1", "1", "in", `"fromEndpointGroup":"g0"`))
	if b := e.OK("GET", "/api/v1/endpointGroups/default:g0/", ""); !strings.Contains(b, `"MatchRules":{"default:p1:1"`) {
		t.Fatalf("group does not list the rule: %s", b)
	}
	e.OK("DELETE", "/api/v1/policys/default:p1/", "")
	if b := e.OK("GET", "/api/v1/endpointGroups/default:g0/", ""); strings.Contains(b, "default:p1:1") {
		t.Fatalf("deleted policy's rule still linked from the group: %s", b)
	}
	if code, _ := e.Do("GET", mastertest.RulePath("default", "p1", "1"), ""); code != 404 {
		t.Fatalf("rule of the deleted policy still exists (%d)", code)
	}
}
