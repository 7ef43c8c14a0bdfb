package controllers_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/netmaster/master/mastertest"
	"github.com/contiv/netplugin/ofnet/ofrpc"
)

// Fail closed (docs/security.md): a rule whose group cannot be resolved is
// refused, never installed as "any group"; a group named by rules cannot
// be deleted; the persisted rules name their group so agents can check.
func TestRulesFailClosed(t *testing.T) {
	e := newEnv(t)
	ctx := mastertest.Ctx(t, time.Minute)
	e.CreateNet("default", "net", "vlan", "198.18.60.0/24", "", 0)
	e.OK("POST", "/api/v1/policys/default:p1/", `{"tenantName":"default","policyName":"p1"}`)
	e.OK("POST", "/api/v1/policys/default:p2/", `{"tenantName":"default","policyName":"p2"}`)
	e.CreateEPG("default", "g0", "net", "")
	e.CreateEPG("default", "g1", "net", `"policies":["p1"]`)

	// The group exists in the model but its state (and so its id) cannot
	// be read: refused, attached policy or not, nothing written.
	g0State := "state/endpointGroups/g0:default"
	saved := e.Dump()[g0State]
	if err := e.St.Delete(ctx, g0State); err != nil {
		t.Fatal(err)
	}
	before := e.Dump()
	for _, pol := range []string{"p1", "p2"} {
		for _, dir := range []string{`"in","action":"allow","fromEndpointGroup":"g0"`, `"out","action":"deny","toEndpointGroup":"g0"`} {
			body := `{"tenantName":"default","policyName":"` + pol + `","ruleId":"9","direction":` + dir + `}`
			e.FailStatus("POST", mastertest.RulePath("default", pol, "9"), body, http.StatusNotFound,
				"rule default:"+pol+":9: endpoint group default:g0 has no state: its id cannot be resolved, rule refused")
		}
	}
	if d := mastertest.DiffDumps(before, e.Dump()); d != "" {
		t.Fatalf("refused rules changed the store:\n%s", d)
	}
	if _, err := e.St.Put(ctx, g0State, []byte(saved)); err != nil {
		t.Fatal(err)
	}

	// Resolved: the persisted rule carries the group's id and name.
	e.OK("POST", mastertest.RulePath("default", "p1", "1"), mastertest.RuleBody("default", "p1", "1", "in", `"fromEndpointGroup":"g0","protocol":"tcp","port":80`))
	g0, _ := e.GroupState("default", "g0")
	for _, id := range []string{"default:g1:default:p1:default:p1:1:inRx", "default:g1:default:p1:default:p1:1:inTx"} {
		r := e.PolicyRule(id)
		if err := ofrpc.OfnetPolicyRule(r).CheckGroups(); err != nil {
			t.Fatalf("rule %s: %v", id, err)
		}
		if (r.SrcEndpointGroupName == "default:g0") == (r.DstEndpointGroupName == "default:g0") ||
			(r.SrcEndpointGroupName == "default:g0" && r.SrcEndpointGroup != g0.EndpointGroupID) ||
			(r.DstEndpointGroupName == "default:g0" && r.DstEndpointGroup != g0.EndpointGroupID) {
			t.Fatalf("rule %s does not name g0 (id %d) on its remote side: %+v", id, g0.EndpointGroupID, r)
		}
	}

	// A group named by a rule is not deleted; once the rule is gone it is.
	e.FailStatus("DELETE", "/api/v1/endpointGroups/default:g0/", "", http.StatusConflict, "Cannot delete g0, rules default:p1:1 match it: delete them first")
	if _, ok := e.GroupState("default", "g0"); !ok {
		t.Fatal("group state gone after a refused delete")
	}
	e.OK("DELETE", mastertest.RulePath("default", "p1", "1"), "")
	e.OK("DELETE", "/api/v1/endpointGroups/default:g0/", "")
}

// A netprofile update whose group write fails is refused and leaves the
// profile and every group as they were (docs/security.md, "Fail closed").
func TestNetprofileUpdateFailsClosed(t *testing.T) {
	e := newEnv(t)
	ctx := mastertest.Ctx(t, time.Minute)
	np := "/api/v1/netprofiles/default:np1/"
	e.OK("POST", np, npBody("default", "np1", 5, 1500, "2gbps"))
	e.CreateNet("default", "net", "vlan", "198.18.61.0/24", "", 0)
	e.CreateEPG("default", "ga", "net", `"netProfile":"np1"`)
	e.CreateEPG("default", "gb", "net", `"netProfile":"np1"`)

	// gb's state is gone: ga (written first) must be restored.
	if err := e.St.Delete(ctx, "state/endpointGroups/gb:default"); err != nil {
		t.Fatal(err)
	}
	before := e.Dump()
	code, body := e.Do("POST", np, npBody("default", "np1", 7, 1650, "10mbps"))
	if code == http.StatusOK || !strings.Contains(body, "gb:default") {
		t.Fatalf("update with a failing group write: %d %q", code, body)
	}
	if d := mastertest.DiffDumps(before, e.Dump()); d != "" {
		t.Fatalf("failed update changed the store:\n%s", d)
	}
	if q := e.groupQoS("default", "ga"); q != "5/2gbps/1500" {
		t.Fatalf("group ga qos after failed update %s", q)
	}
	if b := e.OK("GET", np, ""); !strings.Contains(b, `"bandwidth":"2gbps"`) {
		t.Fatalf("profile after failed update: %s", b)
	}
}
