package controllers_test

// Checks of docs/rest-api.md §4 items that had no test of their own in this
// package when the service LB was added (17, and the single-type cases of
// 22; 30 is covered by TestExtContractsGroups). They live here because
// they came with the same piece of work.

import (
	"strings"
	"testing"

	"github.com/contiv/netplugin/netmaster/master/mastertest"
)

// 17: in ACI mode networks are created, inspected and deleted the same way.
func TestACIModeNetworks(t *testing.T) {
	e := newEnv(t)
	e.SetGlobal(mastertest.GlobalBody("aci", "1-4094", "1-10000", "bridge", "proxy", "172.19.0.0/16"))
	e.CreateNet("default", "aciv", "vlan", "10.1.1.0/24", "10.1.1.254", 0)
	e.CreateNet("default", "acix", "vxlan", "10.1.2.0/24", "", 0)
	if ni := e.NetOper("default", "aciv"); ni.Oper.PktTag != 1 || ni.Oper.AllocatedIPAddresses != "10.1.1.254" || ni.Oper.NetworkTag != "aciv.default" {
		t.Fatalf("aci vlan network oper: %+v", ni.Oper)
	}
	if ni := e.NetOper("default", "acix"); ni.Oper.PktTag != 1 || ni.Oper.ExternalPktTag != 1 {
		t.Fatalf("aci vxlan network oper: %+v", ni.Oper)
	}
	if b := e.OK("GET", "/api/v1/networks/default:aciv/", ""); !strings.Contains(b, `"encap":"vlan"`) || !strings.Contains(b, `"nwType":"data"`) {
		t.Fatalf("aci network GET: %s", b)
	}
	e.Fail("POST", "/api/v1/networks/default:dup/", mastertest.NetBody("default", "dup", "vlan", "10.1.1.0/24", "", 0), "network aciv conflicts with subnet 10.1.1.0/24")
	e.DeleteNet("default", "aciv")
	e.DeleteNet("default", "acix")
	for k := range e.Dump() {
		if strings.HasPrefix(k, "state/nets/") {
			t.Fatalf("aci network delete left %s", k)
		}
	}
	e.Fail("DELETE", "/api/v1/networks/default:aciv/", "", "network not found")
}

// 22: a group may provide only, consume only, or both; an unknown
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
