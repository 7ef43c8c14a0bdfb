package controllers_test

// Checks of docs/rest-api.md §4 item 17, which had no test of its own in
// this package when the service LB was added (the single-type cases of 22
// are in netmaster/controllers/policy).

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
