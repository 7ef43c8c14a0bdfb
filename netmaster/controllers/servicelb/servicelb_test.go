package servicelb_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/contiv/netplugin/netmaster/master/mastertest"
)

// Spec docs/rest-api.md §4 item 33 and the §2.11 create/update/delete rules.
func TestServiceLB(t *testing.T) {
	e := newEnv(t)
	e.CreateNet("default", "yellow", "vxlan", "10.1.1.0/24", "10.1.1.254", 0)
	sel, ports := []string{"key1=value1", "key2=value2"}, []string{"80:8080:TCP"}

	// Refusals, in the spec's order; each leaves the store unchanged.
	p := mastertest.SvcPath("default", "svc1")
	e.Fail("POST", p, mastertest.SvcBody("default", "svc1", "yellow", "", nil, ports), "Invalid selector options")
	const badPorts = "Invalid Port maping . Port format is - Port:TargetPort:Protocol"
	e.Fail("POST", p, mastertest.SvcBody("default", "svc1", "yellow", "", sel, nil), badPorts)
	for _, bad := range [][]string{{"80"}, {"80:8080"}, {"80:8080:SCTP"}, {"x:8080:TCP"}, {"80:-1:TCP"}, {"80:8080:TCP:1"},
		{"80:8080:TCP", "81"}, {"80:8080:TCP", "81:90:tcpx"}, {"0:8080:TCP"}, {"80:65536:udp"}} {
		e.Fail("POST", p, mastertest.SvcBody("default", "svc1", "yellow", "", sel, bad), badPorts)
	}
	e.Fail("POST", mastertest.SvcPath("nosuch", "svc1"), mastertest.SvcBody("nosuch", "svc1", "yellow", "", sel, ports), "Tenant nosuch not found")
	e.Fail("POST", p, mastertest.SvcBody("default", "svc1", "green", "", sel, ports), "Network green not found")
	e.Fail("POST", p, mastertest.SvcBody("default", "svc1", "yellow", "", []string{"key1=value1", "key2"}, ports),
		"Invalid selector key2. selector format is key1=value1")
	e.Fail("POST", p, mastertest.SvcBody("default", "svc1", "yellow", "", []string{"a=b=c"}, ports), "Invalid selector a=b=c. selector format is key1=value1")
	e.Fail("POST", p, mastertest.SvcBody("default", "svc1", "yellow", "10.1.2.3", sel, ports), "hostIP 10.1.2.3 is exceeding beyond subnet 10.1.1.0/24, hostID 259")
	e.Fail("POST", p, mastertest.SvcBody("default", "svc1", "yellow", "10.1.1.254", sel, ports), "ip address 10.1.1.254 is not available")
	e.Fail("DELETE", p, "", "serviceLB not found")

	// 33: create with an automatic VIP.
	e.OK("POST", p, mastertest.SvcBody("default", "svc1", "yellow", "", sel, ports))
	b := e.OK("GET", p, "")
	want := `{"key":"default:svc1","networkName":"yellow","ports":["80:8080:TCP"],"selectors":["key1=value1","key2=value2"],"serviceName":"svc1","tenantName":"default","links":{"Network":{"type":"network","key":"default:yellow"},"Tenant":{"type":"tenant","key":"default"}}}` + "\n"
	if b != want {
		t.Fatalf("service GET:\n got %s\nwant %s", b, want)
	}
	for _, path := range []string{"/api/v1/tenants/default/", "/api/v1/networks/default:yellow/"} {
		if b := e.OK("GET", path, ""); !strings.Contains(b, `"Servicelbs":{"default:svc1":{"type":"serviceLB","key":"default:svc1"}}`) {
			t.Fatalf("%s lacks the service link: %s", path, b)
		}
	}
	rec, ok := e.SvcState("svc1:default")
	if !ok || rec.ID != "svc1:default" || rec.ServiceName != "svc1" || rec.Tenant != "default" || rec.Network != "yellow" ||
		rec.IPAddress != "10.1.1.1" || len(rec.Providers) != 0 || rec.Selectors["key1"] != "value1" || rec.Selectors["key2"] != "value2" ||
		len(rec.Ports) != 1 || rec.Ports[0] != "80:8080:TCP" {
		t.Fatalf("service state %+v %v", rec, ok)
	}
	if _, ok := e.Published("svc1:default"); ok {
		t.Fatalf("provider list published for a service without providers")
	}
	var si mastertest.SvcInspect
	e.Inspect("serviceLBs/default:svc1/", &si)
	if si.Oper.ServiceVip != "10.1.1.1" || si.Oper.NumProviders != 0 {
		t.Fatalf("service inspect %+v", si.Oper)
	}
	// The VIP is an address handed out by the network.
	if ni := e.NetOper("default", "yellow"); ni.Oper.AllocatedIPAddresses != "10.1.1.1, 10.1.1.254" || ni.Oper.AllocatedAddressesCount != 1 {
		t.Fatalf("network oper with a VIP: %+v", ni.Oper)
	}
	e.Fail("DELETE", "/api/v1/networks/default:yellow/", "", "cannot delete yellow has 1 services ")

	// Identical re-create: nothing changes.
	before := e.Dump()
	e.OK("POST", p, mastertest.SvcBody("default", "svc1", "yellow", "", sel, ports))
	if d := mastertest.DiffDumps(before, e.Dump()); d != "" {
		t.Fatalf("identical re-create changed the store:\n%s", d)
	}
	// Reordered selectors and ports are the same service: only the stored
	// request changes.
	e.OK("PUT", p, mastertest.SvcBody("default", "svc1", "yellow", "", []string{"key2=value2", "key1=value1"}, ports))
	if d := mastertest.DiffDumps(before, e.Dump()); !strings.HasPrefix(d, "~ obj/modeldb/serviceLB/default:svc1\n") || strings.Count(d, "~") != 1 {
		t.Fatalf("reordered selectors changed:\n%s", d)
	}
	e.OK("PUT", p, mastertest.SvcBody("default", "svc1", "yellow", "", sel, ports))
	// Refused updates change nothing either.
	e.Fail("POST", p, mastertest.SvcBody("default", "svc1", "yellow", "", sel, []string{"80"}), badPorts)
	e.Fail("POST", p, mastertest.SvcBody("default", "svc1", "yellow", "", nil, ports), "Invalid selector options")

	// 33: a requested VIP is taken exactly.
	e.OK("POST", mastertest.SvcPath("default", "svc2"), mastertest.SvcBody("default", "svc2", "yellow", "10.1.1.3", []string{"app=db"}, []string{"5432:5432:tcp", "53:53:UDP"}))
	if rec, _ := e.SvcState("svc2:default"); rec.IPAddress != "10.1.1.3" {
		t.Fatalf("requested VIP: %+v", rec)
	}
	e.Fail("POST", mastertest.SvcPath("default", "svc3"), mastertest.SvcBody("default", "svc3", "yellow", "10.1.1.3", sel, ports), "ip address 10.1.1.3 is not available")

	// A changed spec is set up anew, keeping the VIP.
	e.OK("POST", p, mastertest.SvcBody("default", "svc1", "yellow", "", []string{"key1=value1"}, []string{"80:8080:TCP", "443:8443:TCP"}))
	if rec, _ := e.SvcState("svc1:default"); rec.IPAddress != "10.1.1.1" || len(rec.Selectors) != 1 || len(rec.Ports) != 2 {
		t.Fatalf("changed service: %+v", rec)
	}
	if b := e.OK("GET", p, ""); !strings.Contains(b, `"selectors":["key1=value1"]`) || !strings.Contains(b, `"ports":["80:8080:TCP","443:8443:TCP"]`) {
		t.Fatalf("changed service GET: %s", b)
	}
	// A newly requested VIP replaces the old one, which is released.
	e.OK("POST", p, mastertest.SvcBody("default", "svc1", "yellow", "10.1.1.7", []string{"key1=value1"}, []string{"80:8080:TCP", "443:8443:TCP"}))
	if rec, _ := e.SvcState("svc1:default"); rec.IPAddress != "10.1.1.7" {
		t.Fatalf("moved VIP: %+v", rec)
	}
	if ni := e.NetOper("default", "yellow"); ni.Oper.AllocatedIPAddresses != "10.1.1.3, 10.1.1.7, 10.1.1.254" || ni.Oper.AllocatedAddressesCount != 2 {
		t.Fatalf("network oper after the VIP moved: %+v", ni.Oper)
	}
	// A changed network moves the VIP and the links.
	e.CreateNet("default", "blue", "vlan", "10.2.1.0/24", "", 0)
	e.OK("POST", p, mastertest.SvcBody("default", "svc1", "blue", "", sel, ports))
	if rec, _ := e.SvcState("svc1:default"); rec.IPAddress != "10.2.1.1" || rec.Network != "blue" {
		t.Fatalf("service moved to blue: %+v", rec)
	}
	if b := e.OK("GET", "/api/v1/networks/default:yellow/", ""); strings.Contains(b, "default:svc1") {
		t.Fatalf("old network keeps the link: %s", b)
	}
	if b := e.OK("GET", p, ""); !strings.Contains(b, `"Network":{"type":"network","key":"default:blue"}`) {
		t.Fatalf("service network link: %s", b)
	}
	if ni := e.NetOper("default", "yellow"); ni.Oper.AllocatedIPAddresses != "10.1.1.3, 10.1.1.254" {
		t.Fatalf("old VIP kept: %+v", ni.Oper)
	}

	// /services and /service/{id} (§3.8).
	code, body, h := mastertest.DoReq(t, e.Srv.URL, "GET", "/services", "")
	var all []mastertest.SvcRecord
	if code != http.StatusOK || strings.HasSuffix(body, "\n") || !strings.HasPrefix(h.Get("Content-Type"), "text/plain") {
		t.Fatalf("/services: %d %q %q", code, h.Get("Content-Type"), body)
	}
	if err := json.Unmarshal([]byte(body), &all); err != nil || len(all) != 2 || all[0].ID != "svc1:default" || all[1].ID != "svc2:default" {
		t.Fatalf("/services: %v %s", err, body)
	}
	if !strings.Contains(body, `"providers":{}`) || !strings.Contains(body, `"subnet":"blue"`) {
		t.Fatalf("/services record shape: %s", body)
	}
	_, body, _ = mastertest.DoReq(t, e.Srv.URL, "GET", "/service/svc2:default", "")
	if err := json.Unmarshal([]byte(body), &all); err != nil || len(all) != 1 || all[0].IPAddress != "10.1.1.3" {
		t.Fatalf("/service/svc2:default: %v %s", err, body)
	}
	if code, body, _ := mastertest.DoReq(t, e.Srv.URL, "GET", "/service/nosuch:default", ""); code != http.StatusOK || body != "null" {
		t.Fatalf("unknown service: %d %q", code, body)
	}
	if code, _, _ := mastertest.DoReq(t, e.Srv.URL, "POST", "/services", ""); code != http.StatusNotFound {
		t.Fatalf("POST /services: %d", code)
	}

	// 33: delete removes the state, the VIP and the links.
	e.OK("DELETE", p, "")
	e.OK("DELETE", mastertest.SvcPath("default", "svc2"), "")
	for k := range e.Dump() {
		if strings.HasPrefix(k, "state/serviceLB/") || strings.HasPrefix(k, "state/provider/") || strings.HasPrefix(k, "state/ipalloc/") {
			t.Fatalf("service delete left %s", k)
		}
	}
	if ni := e.NetOper("default", "yellow"); ni.Oper.AllocatedIPAddresses != "10.1.1.254" || ni.Oper.AllocatedAddressesCount != 0 {
		t.Fatalf("network oper after deletes: %+v", ni.Oper)
	}
	if b := e.OK("GET", "/api/v1/tenants/default/", ""); strings.Contains(b, "Servicelbs") {
		t.Fatalf("tenant keeps service links: %s", b)
	}
	if _, body, _ := mastertest.DoReq(t, e.Srv.URL, "GET", "/services", ""); body != "[]" {
		t.Fatalf("/services without services: %q", body)
	}
	e.Fail("DELETE", p, "", "serviceLB not found")
	e.DeleteNet("default", "yellow")
	e.DeleteNet("default", "blue")
}
