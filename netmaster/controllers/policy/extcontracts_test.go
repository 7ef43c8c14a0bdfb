package policy_test

import (
	"strings"
	"testing"

	"github.com/contiv/netplugin/netmaster/master/mastertest"
)

func ecPath(tenant, name string) string {
	return "/api/v1/extContractsGroups/" + tenant + ":" + name + "/"
}

func ecBody(tenant, name, typ string) string {
	return `{"tenantName":"` + tenant + `","contractsGroupName":"` + name + `","contractsType":"` + typ +
		`","contracts":["uni/tn-common/brc-default","uni/tn-common/brc-icmp"]}`
}

func TestExtContractsGroups(t *testing.T) {
	e := newEnv(t)
	e.CreateNet("default", "net1", "vlan", "10.1.1.0/24", "", 0)

	// 30: type and tenant refusals.
	e.Fail("POST", ecPath("default", "c1"), ecBody("default", "c1", "something"), "Contracts group need to be either 'provided' or 'consumed'")
	e.Fail("POST", ecPath("nosuch", "c1"), ecBody("nosuch", "c1", "provided"), "Tenant nosuch not found")

	e.OK("POST", ecPath("default", "c1"), ecBody("default", "c1", "provided"))
	e.OK("POST", ecPath("default", "c2"), ecBody("default", "c2", "consumed"))
	if b := e.OK("GET", ecPath("default", "c1"), ""); !strings.Contains(b, `"contracts":["uni/tn-common/brc-default","uni/tn-common/brc-icmp"]`) ||
		!strings.Contains(b, `"contractsType":"provided"`) || strings.Contains(b, `"links"`) {
		t.Fatalf("contracts group: %s", b)
	}
	e.Fail("POST", ecPath("default", "c1"), ecBody("default", "c1", "consumed"), "external contracts update not supported")

	// Groups link to it both ways; unknown names are still refused.
	e.Fail("POST", "/api/v1/endpointGroups/default:g1/", mastertest.EPGBody("default", "g1", "net1", `"extContractsGrps":["c1","c9"]`), "External contracts group c9 not found")
	e.CreateEPG("default", "g1", "net1", `"extContractsGrps":["c1","c2"]`)
	if b := e.OK("GET", "/api/v1/endpointGroups/default:g1/", ""); !strings.Contains(b, `"ExtContractsGrps":{"default:c1"`) {
		t.Fatalf("group links: %s", b)
	}
	if b := e.OK("GET", ecPath("default", "c1"), ""); !strings.Contains(b, `"EndpointGroups":{"default:g1"`) {
		t.Fatalf("contracts group links: %s", b)
	}
	e.Fail("DELETE", ecPath("default", "c1"), "", "External contracts group is in-use")
	e.Fail("DELETE", ecPath("default", "c2"), "", "External contracts group is in-use")

	// Dropping c1 from the group frees it.
	e.OK("POST", "/api/v1/endpointGroups/default:g1/", mastertest.EPGBody("default", "g1", "net1", `"extContractsGrps":["c2"]`))
	if b := e.OK("GET", ecPath("default", "c1"), ""); strings.Contains(b, "default:g1") {
		t.Fatalf("c1 still linked: %s", b)
	}
	e.OK("DELETE", ecPath("default", "c1"), "")
	e.Fail("DELETE", ecPath("default", "c2"), "", "External contracts group is in-use")
	e.OK("DELETE", "/api/v1/endpointGroups/default:g1/", "")
	e.OK("DELETE", ecPath("default", "c2"), "")
}

// docs/rest-api.md §4 item 22: a group may provide only, consume only, or both; an unknown
// contracts group is refused.
func TestGroupExtContractsKinds(t *testing.T) {
	e := newEnv(t)
	e.CreateNet("default", "net1", "vlan", "10.1.1.0/24", "", 0)
	e.OK("POST", ecPath("default", "prov"), ecBody("default", "prov", "provided"))
	e.OK("POST", ecPath("default", "cons"), ecBody("default", "cons", "consumed"))
	for group, list := range map[string]string{"gp": `["prov"]`, "gc": `["cons"]`, "gb": `["prov","cons"]`} {
		e.CreateEPG("default", group, "net1", `"extContractsGrps":`+list)
	}
	e.Fail("POST", "/api/v1/endpointGroups/default:gx/", mastertest.EPGBody("default", "gx", "net1", `"extContractsGrps":["nosuch"]`),
		"External contracts group nosuch not found")
	if b := e.OK("GET", ecPath("default", "prov"), ""); !strings.Contains(b, `"default:gp"`) || !strings.Contains(b, `"default:gb"`) || strings.Contains(b, `"default:gc"`) {
		t.Fatalf("provided group links: %s", b)
	}
	for _, g := range []string{"gp", "gc", "gb"} {
		e.OK("DELETE", "/api/v1/endpointGroups/default:"+g+"/", "")
	}
	e.OK("DELETE", ecPath("default", "prov"), "")
	e.OK("DELETE", ecPath("default", "cons"), "")
}
