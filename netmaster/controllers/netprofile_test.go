package controllers_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func npBody(tenant, name string, dscp, burst int, bw string) string {
	return fmt.Sprintf(`{"tenantName":%q,"profileName":%q,"DSCP":%d,"burst":%d,"bandwidth":%q}`, tenant, name, dscp, burst, bw)
}

type qos struct {
	DSCP      int    `json:"DSCP"`
	Bandwidth string `json:"Bandwidth"`
	Burst     int    `json:"Burst"`
}

func (e *env) groupQoS(tenant, group string) string {
	e.T.Helper()
	raw := e.Dump()["state/endpointGroups/"+group+":"+tenant]
	var q qos
	if err := jsonUnmarshal(raw, &q); err != nil {
		e.T.Fatalf("group state %q: %v", raw, err)
	}
	return fmt.Sprintf("%d/%s/%d", q.DSCP, q.Bandwidth, q.Burst)
}

func TestNetprofileAndPolicy(t *testing.T) {
	e := newEnv(t)
	np := "/api/v1/netprofiles/default:np1/"
	// 31.
	e.OK("POST", np, npBody("default", "np1", 5, 1500, "2gbps"))
	e.OK("POST", np, npBody("default", "np1", 6, 1500, "5gbps"))
	e.OK("POST", np, npBody("default", "np1", 0, 1500, ""))
	for _, bw := range []string{"10 Gbps", "10 Gb", "10 gb", "5Gb", "6gb", "3gbps", "3Gbps", "4g", "4G"} {
		e.OK("POST", np, npBody("default", "np1", 22, 450, bw))
	}
	// 32.
	for _, bw := range []string{"invalid", "10 Gkms", "10 G12ms", "10 ms", "10 bms", "Gkms", "Gbps", "0 Gbps", " 10 Gbps"} {
		e.Fail("POST", np, npBody("default", "np1", 5, 1500, bw), "bandwidth string invalid format")
	}
	e.Fail("POST", np, npBody("default", "np1", 72, 1500, ""), "DSCP Value Out of bound")
	e.Fail("POST", np, npBody("default", "np1", 1, 1, ""), "Invalid Burst size. burst size must be > 1500 bytes")
	e.Fail("POST", "/api/v1/netprofiles/default:np9/", npBody("default", "np9", 1, 1, ""), "Invalid Burst size. burst size > 1500 bytes")
	e.Fail("POST", "/api/v1/netprofiles/nosuch:np9/", npBody("nosuch", "np9", 1, 0, ""), "Tenant nosuch not found")
	e.Fail("DELETE", "/api/v1/netprofiles/default:nosuch/", "", "netprofile not found")

	// 20.
	e.CreateNet("default", "net", "vlan", "10.1.1.0/24", "", 0)
	e.CreateEPG("default", "g1", "net", `"netProfile":"np1"`)
	if q := e.groupQoS("default", "g1"); q != "22/4G/450" {
		t.Fatalf("group qos %s", q)
	}
	e.OK("POST", np, npBody("default", "np1", 7, 1650, "10mbps"))
	if q := e.groupQoS("default", "g1"); q != "7/10mbps/1650" {
		t.Fatalf("group qos after profile update %s", q)
	}
	// Refused updates of a profile in use change neither the profile nor
	// its group's state (e.fail compares the whole store).
	e.Fail("POST", np, npBody("default", "np1", 64, 1650, "20mbps"), "")
	e.Fail("POST", np, npBody("default", "np1", -1, 1650, "20mbps"), "")
	e.Fail("POST", np, npBody("default", "np1", 7, 10487, "20mbps"), "")
	e.Fail("POST", np, npBody("default", "np1", 7, -5, "20mbps"), "")
	e.Fail("POST", np, npBody("default", "np1", 7, 1, "20mbps"), "Invalid Burst size. burst size must be > 1500 bytes")
	e.Fail("POST", np, npBody("default", "np1", 7, 1650, "20 parsecs"), "bandwidth string invalid format")
	if q := e.groupQoS("default", "g1"); q != "7/10mbps/1650" {
		t.Fatalf("group qos after refused updates %s", q)
	}
	e.OK("POST", "/api/v1/netprofiles/default:np2/", npBody("default", "np2", 3, 0, "1g"))
	e.CreateEPG("default", "g1", "net", `"netProfile":"np2"`)
	if q := e.groupQoS("default", "g1"); q != "3/1g/0" {
		t.Fatalf("group qos after switch %s", q)
	}
	e.Fail("DELETE", "/api/v1/netprofiles/default:np2/", "", "NetProfile is being used")
	e.CreateEPG("default", "g1", "net", "")
	if q := e.groupQoS("default", "g1"); q != "0//0" {
		t.Fatalf("group qos after detach %s", q)
	}
	if b := e.OK("GET", "/api/v1/endpointGroups/default:g1/", ""); strings.Contains(b, "netProfile") || !strings.Contains(b, `"NetProfile":{}`) {
		t.Fatalf("group after detach: %s", b)
	}
	e.OK("DELETE", "/api/v1/netprofiles/default:np2/", "")

	// Policies (19, without rules).
	e.OK("POST", "/api/v1/policys/default:p1/", `{"tenantName":"default","policyName":"p1"}`)
	e.OK("POST", "/api/v1/policys/default:p2/", `{"tenantName":"default","policyName":"p2"}`)
	e.Fail("POST", "/api/v1/policys/nosuch:p1/", `{"tenantName":"nosuch","policyName":"p1"}`, "Tenant nosuch not found")
	e.CreateEPG("default", "g1", "net", `"policies":["p1"]`)
	if b := e.OK("GET", "/api/v1/policys/default:p1/", ""); !strings.Contains(b, `"EndpointGroups":{"default:g1"`) {
		t.Fatalf("policy links: %s", b)
	}
	e.Fail("DELETE", "/api/v1/policys/default:p1/", "", "Policy is being used")
	e.CreateEPG("default", "g1", "net", `"policies":["p2"]`)
	if b := e.OK("GET", "/api/v1/endpointGroups/default:g1/", ""); !strings.Contains(b, `"Policies":{"default:p2"`) || strings.Contains(b, "default:p1") {
		t.Fatalf("group policies: %s", b)
	}
	e.OK("DELETE", "/api/v1/policys/default:p1/", "")
	e.OK("DELETE", "/api/v1/endpointGroups/default:g1/", "")
	if b := e.OK("GET", "/api/v1/policys/default:p2/", ""); strings.Contains(b, "EndpointGroups") {
		t.Fatalf("policy still linked: %s", b)
	}

	// 10: a netprofile (or policy) alone blocks the tenant's deletion.
	e.OK("POST", "/api/v1/tenants/t3/", `{"tenantName":"t3"}`)
	e.OK("POST", "/api/v1/netprofiles/t3:np/", npBody("t3", "np", 0, 0, ""))
	e.Fail("DELETE", "/api/v1/tenants/t3/", "", "Cannot delete t3 has 1 netprofiles")
	e.OK("POST", "/api/v1/policys/t3:p/", `{"tenantName":"t3","policyName":"p"}`)
	e.Fail("DELETE", "/api/v1/tenants/t3/", "", "cannot delete t3 has 1 policies")
	e.OK("DELETE", "/api/v1/policys/t3:p/", "")
	e.OK("DELETE", "/api/v1/netprofiles/t3:np/", "")
	e.OK("DELETE", "/api/v1/tenants/t3/", "")
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
