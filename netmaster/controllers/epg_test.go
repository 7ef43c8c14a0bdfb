package controllers_test

import (
	"strings"
	"testing"

	"github.com/contiv/netplugin/netmaster/master/mastertest"
)

func TestEndpointGroup(t *testing.T) {
	e := newEnv(t)
	e.CreateNet("default", "net1", "vlan", "10.1.1.0/24", "10.1.1.254", 0)
	e.CreateEPG("default", "g1", "net1", `"cfgdTag":"web"`)
	gs, ok := e.GroupState("default", "g1")
	if !ok || gs.EndpointGroupID != 1 || gs.PktTag != 1 || gs.GroupTag != "web" {
		t.Fatalf("group state %+v %v", gs, ok)
	}
	b := e.OK("GET", "/api/v1/endpointGroups/default:g1/", "")
	if b != `{"key":"default:g1","cfgdTag":"web","groupName":"g1","networkName":"net1","tenantName":"default","link-sets":{},"links":{"AppProfile":{},"NetProfile":{},"Network":{"type":"network","key":"default:net1"},"Tenant":{"type":"tenant","key":"default"}}}`+"\n" {
		t.Fatalf("group GET: %s", b)
	}
	if b := e.OK("GET", "/api/v1/networks/default:net1/", ""); !strings.Contains(b, `"EndpointGroups":{"default:g1":{"type":"endpointGroup","key":"default:g1"}}`) {
		t.Fatalf("network links: %s", b)
	}

	// Refusals (19, 20, 22).
	e.Fail("POST", "/api/v1/endpointGroups/nosuch:g2/", mastertest.EPGBody("nosuch", "g2", "net1", ""), "Tenant nosuch not found")
	e.Fail("POST", "/api/v1/endpointGroups/default:g2/", mastertest.EPGBody("default", "g2", "nonet", ""), "Network nonet not found")
	e.Fail("POST", "/api/v1/endpointGroups/default:g2/", mastertest.EPGBody("default", "g2", "", ""), "")
	e.Fail("POST", "/api/v1/endpointGroups/default:in_valid/", mastertest.EPGBody("default", "in_valid", "net1", ""), "")
	e.Fail("POST", "/api/v1/endpointGroups/default:net1/", mastertest.EPGBody("default", "net1", "net1", ""), "Network net1 conflicts with the endpointGroup name")
	e.Fail("POST", "/api/v1/endpointGroups/default:g2/", mastertest.EPGBody("default", "g2", "net1", `"policies":["p1"]`), "Policy default:p1 not found")
	e.Fail("POST", "/api/v1/endpointGroups/default:g2/", mastertest.EPGBody("default", "g2", "net1", `"netProfile":"np1"`), "netprofile default:np1 not found")
	e.Fail("POST", "/api/v1/endpointGroups/default:g2/", mastertest.EPGBody("default", "g2", "net1", `"extContractsGrps":["c1"]`), "External contracts group c1 not found")
	e.Fail("POST", "/api/v1/endpointGroups/default:g2/", mastertest.EPGBody("default", "g2", "net1", `"ipPool":"10.1.1.10-10.1.1.5"`), "invalid ip-pool 10.1.1.10-10.1.1.5")
	e.Fail("POST", "/api/v1/endpointGroups/default:g2/", mastertest.EPGBody("default", "g2", "net1", `"ipPool":"10.1.2.10-10.1.2.20"`),
		"bad ip-pool 10.1.2.10-10.1.2.20, EPG ip-pool must be a subset of network 10.1.1.0/24")
	e.Fail("POST", "/api/v1/endpointGroups/default:g2/", mastertest.EPGBody("default", "g2", "net1", `"ipPool":"10.1.1.250-10.1.1.254"`), "ip address 10.1.1.254 is not available")
	// A failure after the ip pool was carved out leaves nothing behind.
	e.Fail("POST", "/api/v1/endpointGroups/default:g2/", mastertest.EPGBody("default", "g2", "net1", `"ipPool":"10.1.1.10-10.1.1.20","policies":["p1"]`), "Policy default:p1 not found")
	e.CreateNet("default", "net2", "vlan", "10.1.2.0/24", "", 0)
	e.Fail("POST", "/api/v1/endpointGroups/default:g1/", mastertest.EPGBody("default", "g1", "net2", ""), "Cannot change network association after epg is created.")
	e.Fail("POST", "/api/v1/endpointGroups/default:g1/", mastertest.EPGBody("default", "g1", "net1", `"ipPool":"10.1.1.10-10.1.1.20"`), "Cannot change IP pool after epg is created.")
	e.Fail("POST", "/api/v1/endpointGroups/default:g1/", mastertest.EPGBody("default", "g1", "net1", `"policies":["p1"]`), "Policy default:p1 not found")
	// Update keeps cfgdTag silently.
	e.OK("POST", "/api/v1/endpointGroups/default:g1/", mastertest.EPGBody("default", "g1", "net1", `"cfgdTag":"other"`))
	if b := e.OK("GET", "/api/v1/endpointGroups/default:g1/", ""); !strings.Contains(b, `"cfgdTag":"web"`) {
		t.Fatalf("cfgdTag changed by update: %s", b)
	}

	// Ip pool and ids.
	e.CreateEPG("default", "g2", "net1", `"ipPool":"10.1.1.10-10.1.1.20"`)
	e.CreateEPG("default", "g3", "net2", "")
	if gs, _ := e.GroupState("default", "g3"); gs.EndpointGroupID != 3 {
		t.Fatalf("g3 id %d", gs.EndpointGroupID)
	}
	ni := e.NetOper("default", "net1")
	if ni.Oper.AllocatedIPAddresses != "10.1.1.10-10.1.1.20, 10.1.1.254" {
		t.Fatalf("network with pool: %+v", ni.Oper)
	}
	var gi struct {
		Oper struct {
			AllocatedIPAddresses string `json:"allocatedIPAddresses"`
			AvailableIPAddresses string `json:"availableIPAddresses"`
			GroupTag             string `json:"groupTag"`
			PktTag               int    `json:"pktTag"`
		}
	}
	e.Inspect("endpointGroups/default:g2/", &gi)
	if gi.Oper.AvailableIPAddresses != "10.1.1.10-10.1.1.20" || gi.Oper.GroupTag != "g2.default" || gi.Oper.PktTag != 1 {
		t.Fatalf("group oper: %+v", gi.Oper)
	}
	e.OK("DELETE", "/api/v1/endpointGroups/default:g2/", "")
	if ni := e.NetOper("default", "net1"); ni.Oper.AllocatedIPAddresses != "10.1.1.254" {
		t.Fatalf("pool not given back: %+v", ni.Oper)
	}
	// The lowest free id is reused; ids survive a restart.
	e.CreateEPG("default", "g4", "net1", "")
	if gs, _ := e.GroupState("default", "g4"); gs.EndpointGroupID != 2 {
		t.Fatalf("g4 id %d, want 2", gs.EndpointGroupID)
	}
	e.Restart()
	e.CreateEPG("default", "g5", "net1", "")
	if gs, _ := e.GroupState("default", "g5"); gs.EndpointGroupID != 4 {
		t.Fatalf("g5 id after restart %d, want 4", gs.EndpointGroupID)
	}
	for _, g := range []string{"g1", "g3", "g4", "g5"} {
		e.OK("DELETE", "/api/v1/endpointGroups/default:"+g+"/", "")
	}
	e.Fail("DELETE", "/api/v1/endpointGroups/default:g1/", "", "endpointGroup not found")
	if b := e.OK("GET", "/api/v1/tenants/default/", ""); strings.Contains(b, "EndpointGroups") {
		t.Fatalf("tenant still links groups: %s", b)
	}
	for k := range e.Dump() {
		if strings.HasPrefix(k, "state/epgids/") || strings.HasPrefix(k, "state/endpointGroups/") || strings.Contains(k, "g2:default") {
			t.Fatalf("group delete left %s", k)
		}
	}
}
