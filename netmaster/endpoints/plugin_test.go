package endpoints_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/netmaster/ipam"
	"github.com/contiv/netplugin/netmaster/master/mastertest"
)

func TestPluginEndpoints(t *testing.T) {
	e := newEnv(t)
	e.OK("POST", "/api/v1/tenants/t2/", `{"tenantName":"t2"}`)
	e.CreateNet("t2", "net", "vlan", "60.1.1.0/24", "60.1.1.254", 0)
	e.CreateEPG("t2", "t2-epgA", "net", "")

	// 23.
	r := e.CreateEndpoint(mastertest.CreateEP("t2", "net", "t2-epgA", "c1", ""))
	want := mastertest.EPResp{}
	want.EndpointConfig.ID, want.EndpointConfig.NetID = "net.t2-c1", "net.t2"
	want.EndpointConfig.EndpointGroupID, want.EndpointConfig.EndpointGroupKey = 1, "t2-epgA:t2"
	want.EndpointConfig.IPAddress, want.EndpointConfig.MacAddress, want.EndpointConfig.HomingHost = "60.1.1.1", "02:02:3c:01:01:01", "host1"
	if r != want {
		t.Fatalf("createEndpoint:\n got %+v\nwant %+v", r, want)
	}
	ni := e.NetOper("t2", "net")
	if ni.Oper.AllocatedIPAddresses != "60.1.1.1, 60.1.1.254" || ni.Oper.AllocatedAddressesCount != 1 || ni.Oper.NumEndpoints != 1 || len(ni.Oper.Endpoints) != 1 {
		t.Fatalf("network oper: %+v", ni.Oper)
	}
	e.Fail("POST", "/plugin/createEndpoint", mastertest.CreateEP("t2", "net", "nosuch", "c9", ""), "group nosuch:t2 not found")
	e.CreateEndpoint(mastertest.CreateEP("t2", "net", "t2-epgA", "c2", ""))
	if ni := e.NetOper("t2", "net"); ni.Oper.AllocatedIPAddresses != "60.1.1.1-60.1.1.2, 60.1.1.254" || ni.Oper.AllocatedAddressesCount != 2 {
		t.Fatalf("network oper: %+v", ni.Oper)
	}
	e.CreateEPG("t2", "t2-epgB", "net", "")
	if r := e.CreateEndpoint(mastertest.CreateEP("t2", "net", "t2-epgB", "c3", "")); r.EndpointConfig.EndpointGroupID != 2 {
		t.Fatalf("group id %d", r.EndpointConfig.EndpointGroupID)
	}
	if ni := e.NetOper("t2", "net"); ni.Oper.AllocatedIPAddresses != "60.1.1.1-60.1.1.3, 60.1.1.254" || ni.Oper.AllocatedAddressesCount != 3 {
		t.Fatalf("network oper: %+v", ni.Oper)
	}
	// Idempotent for the same endpoint.
	before := e.Dump()
	if r2 := e.CreateEndpoint(mastertest.CreateEP("t2", "net", "t2-epgA", "c1", "")); r2 != want {
		t.Fatalf("repeated create: %+v", r2)
	}
	if d := mastertest.DiffDumps(before, e.Dump()); d != "" {
		t.Fatalf("repeated create changed the store:\n%s", d)
	}
	// Response shape: every member present.
	raw := e.OK("POST", "/plugin/createEndpoint", mastertest.CreateEP("t2", "net", "t2-epgA", "c1", ""))
	if raw != `{"EndpointConfig":{"id":"net.t2-c1","netID":"net.t2","endpointID":"c1","serviceName":"t2-epgA","endpointGroupId":1,"endpointGroupKey":"t2-epgA:t2","ipAddress":"60.1.1.1","ipv6Address":"","macAddress":"02:02:3c:01:01:01","homingHost":"host1","intfName":"","vtepIP":"","labels":null,"containerId":"","epCommonName":"n-c1"}}`+"\n" {
		t.Fatalf("createEndpoint body: %s", raw)
	}
	// Preferred address taken by another endpoint is refused (§10 #6).
	e.Fail("POST", "/plugin/createEndpoint", mastertest.CreateEP("t2", "net", "t2-epgA", "c4", "60.1.1.2"), "ip address 60.1.1.2 is not available")
	e.Fail("POST", "/plugin/createEndpoint", mastertest.CreateEP("t2", "net", "t2-epgA", "c4", "60.2.1.2"), "hostIP 60.2.1.2 is exceeding beyond subnet 60.1.1.0/24, hostID 65538")
	// Endpoint deletes block: group and network deletes.
	e.Fail("DELETE", "/api/v1/endpointGroups/t2:t2-epgB/", "", "Error: EPG t2-epgB has active endpoints")
	// Inspect.
	var ei struct {
		Oper struct {
			Key        string   `json:"key"`
			Network    string   `json:"network"`
			IPAddress  []string `json:"ipAddress"`
			Labels     string   `json:"labels"`
			ServiceKey string   `json:"endpointGroupKey"`
		}
	}
	e.Inspect("endpoints/n-c3/", &ei)
	if ei.Oper.Key != "n-c3" || ei.Oper.Network != "net.t2" || len(ei.Oper.IPAddress) != 2 || ei.Oper.IPAddress[0] != "60.1.1.3" || ei.Oper.Labels != "map[]" || ei.Oper.ServiceKey != "t2-epgB:t2" {
		t.Fatalf("endpoint inspect: %+v", ei.Oper)
	}
	e.Fail("GET", "/api/v1/inspect/endpoints/zzz/", "", "endpoint not found")

	// Delete.
	for _, c := range []struct{ group, id string }{{"t2-epgA", "c1"}, {"t2-epgA", "c2"}, {"t2-epgB", "c3"}} {
		var d mastertest.EPResp
		_ = json.Unmarshal([]byte(e.OK("POST", "/plugin/deleteEndpoint", mastertest.DeleteEP("t2", "net", c.group, c.id))), &d)
		if d.EndpointConfig.ID != "net.t2-"+c.id {
			t.Fatalf("deleteEndpoint answer %+v", d)
		}
	}
	e.Fail("POST", "/plugin/deleteEndpoint", mastertest.DeleteEP("t2", "net", "t2-epgA", "c1"), "endpoint net.t2-c1 not found")
	ni = e.NetOper("t2", "net")
	if ni.Oper.AllocatedIPAddresses != "60.1.1.254" || ni.Oper.AllocatedAddressesCount != 0 || ni.Oper.NumEndpoints != 0 {
		t.Fatalf("network oper after deletes: %+v", ni.Oper)
	}
	for _, g := range []string{"t2-epgA", "t2-epgB"} {
		if gs, _ := e.GroupState("t2", g); gs.EpCount != 0 {
			t.Fatalf("%s epCount %d", g, gs.EpCount)
		}
	}

	// Network delete refused with endpoints (no group).
	e.CreateNet("t2", "plain", "vxlan", "70.1.1.0/24", "", 0)
	e.CreateEndpoint(mastertest.CreateEP("t2", "plain", "", "p1", ""))
	e.Fail("DELETE", "/api/v1/networks/t2:plain/", "", "Error: Network has active endpoints")
	e.OK("POST", "/plugin/deleteEndpoint", mastertest.DeleteEP("t2", "plain", "", "p1"))
	e.DeleteNet("t2", "plain")
}

func TestPluginAddresses(t *testing.T) {
	e := newEnv(t)
	e.CreateNet("default", "web", "vlan", "10.1.1.0/24", "10.1.1.1", 0)
	e.CreateEPG("default", "pool", "web", `"ipPool":"10.1.1.100-10.1.1.102"`)
	alloc := func(body string) string {
		var r struct{ NetworkID, IPv4Address string }
		if err := json.Unmarshal([]byte(e.OK("POST", "/plugin/allocAddress", body)), &r); err != nil {
			t.Fatal(err)
		}
		return r.NetworkID + " " + r.IPv4Address
	}
	if got := alloc(`{"NetworkID":"web.default","AddressPool":"10.1.1.0/24"}`); got != "web.default 10.1.1.2/24" {
		t.Fatalf("alloc: %s", got)
	}
	if got := alloc(`{"networkid":"","addresspool":"10.1.1.0/24:default"}`); got != " 10.1.1.3/24" {
		t.Fatalf("alloc by pool: %s", got)
	}
	if got := alloc(`{"NetworkID":"web:pool.default"}`); got != "web:pool.default 10.1.1.100/24" {
		t.Fatalf("alloc in group pool: %s", got)
	}
	if got := alloc(`{"NetworkID":"web.default","PreferredIPv4Address":"10.1.1.50"}`); got != "web.default 10.1.1.50/24" {
		t.Fatalf("alloc preferred: %s", got)
	}
	e.Fail("POST", "/plugin/allocAddress", `{"NetworkID":"web.default","PreferredIPv4Address":"10.1.1.50"}`, "ip address 10.1.1.50 is not available")
	e.FailStatus("POST", "/plugin/allocAddress", `{"NetworkID":"","AddressPool":"10.9.9.0/24"}`, 404, "AddressPool 10.9.9.0/24: no network has subnet 10.9.9.0/24")
	e.FailStatus("POST", "/plugin/allocAddress", `{"NetworkID":"","AddressPool":"10.9.9.0"}`, 400, `AddressPool "10.9.9.0" is not <subnet>/<length> or <subnet>/<length>:<tenant>`)
	e.Fail("POST", "/plugin/allocAddress", `{"NetworkID":"nonet.default"}`, "network nonet.default not found")
	if ni := e.NetOper("default", "web"); ni.Oper.AllocatedAddressesCount != 4 {
		t.Fatalf("count %d", ni.Oper.AllocatedAddressesCount)
	}
	// createEndpoint may take the address allocAddress handed out for it.
	if r := e.CreateEndpoint(mastertest.CreateEP("default", "web", "", "d1", "10.1.1.50")); r.EndpointConfig.IPAddress != "10.1.1.50" {
		t.Fatalf("createEndpoint with allocated address: %+v", r)
	}
	e.Fail("POST", "/plugin/createEndpoint", mastertest.CreateEP("default", "web", "", "d2", "10.1.1.50"), "ip address 10.1.1.50 is not available")
	// releaseAddress answers an object (§10 #5) and strips a pool suffix.
	if b := e.OK("POST", "/plugin/releaseAddress", `{"NetworkID":"web.default","IPv4Address":"10.1.1.2"}`); b != `{"Status":"success"}`+"\n" {
		t.Fatalf("release answer %q", b)
	}
	e.OK("POST", "/plugin/releaseAddress", `{"NetworkID":"web.default|10.1.1.0/24","IPv4Address":"10.1.1.3"}`)
	e.OK("POST", "/plugin/releaseAddress", `{"NetworkID":"web:pool.default","IPv4Address":"10.1.1.100"}`)
	e.Fail("POST", "/plugin/releaseAddress", `{"NetworkID":"web.default","IPv4Address":"10.1.2.3"}`, "hostIP 10.1.2.3 is exceeding beyond subnet 10.1.1.0/24, hostID 259")
	e.Fail("POST", "/plugin/releaseAddress", `{"NetworkID":"web.default","IPv4Address":"bogus"}`, "unable to convert hostIP bogus to uint32")
	ni := e.NetOper("default", "web")
	if ni.Oper.AllocatedIPAddresses != "10.1.1.1, 10.1.1.50, 10.1.1.100-10.1.1.102" || ni.Oper.AllocatedAddressesCount != 1 {
		t.Fatalf("after releases: %+v", ni.Oper)
	}
	// Content-Type rule and method: anything else is 404.
	if code, _, _ := mastertest.DoReq(t, e.Srv.URL, "POST", "/plugin/allocAddress", `{}`, "application/json; charset=utf-8"); code != http.StatusNotFound {
		t.Fatalf("wrong content type: %d", code)
	}
	if code, _, _ := mastertest.DoReq(t, e.Srv.URL, "GET", "/plugin/allocAddress", ""); code != http.StatusNotFound {
		t.Fatalf("GET: %d", code)
	}
	// Errors are text/plain.
	_, _, h := mastertest.DoReq(t, e.Srv.URL, "POST", "/plugin/allocAddress", `{"NetworkID":"nonet.default"}`)
	if !strings.HasPrefix(h.Get("Content-Type"), "text/plain") {
		t.Fatalf("error content type %q", h.Get("Content-Type"))
	}
	// updateEndpoint.
	upd := `{"IPAddress":"10.1.1.50","ContainerID":"cid1","Labels":{"app":"redis"},"Tenant":"default","Network":"web","Event":"start","EndpointID":"d1","EPCommonName":"redis1"}`
	if b := e.OK("POST", "/plugin/updateEndpoint", upd); b != `{"IPAddress":"10.1.1.50"}`+"\n" {
		t.Fatalf("update start: %s", b)
	}
	if got := e.Dump()["state/eps/web.default-d1"]; !strings.Contains(got, `"labels":{"app":"redis"}`) || !strings.Contains(got, `"containerId":"cid1"`) {
		t.Fatalf("endpoint after start: %s", got)
	}
	if b := e.OK("POST", "/plugin/updateEndpoint", `{"ContainerID":"cid1","Event":"die"}`); b != `{"IPAddress":""}`+"\n" {
		t.Fatalf("die: %q", b)
	}
	e.Fail("POST", "/plugin/updateEndpoint", `{"Event":"die"}`, "invalid containerID in UpdateEndpointRequest:(nil)")
	var ei struct {
		Oper struct{ Labels, ContainerID string }
	}
	e.Inspect("endpoints/cid1/", &ei)
	if ei.Oper.Labels != "map[app:redis]" {
		t.Fatalf("labels %q", ei.Oper.Labels)
	}
}

// A netmaster killed between an endpoint's record and its counters leaves
// them off; the next leadership term recomputes them from the records.
func TestCountersReconciledAtStart(t *testing.T) {
	e := newEnv(t)
	e.CreateNet("default", "n", "vlan", "10.1.1.0/24", "10.1.1.254", 0)
	e.CreateEPG("default", "g", "n", `"ipPool":"10.1.1.10-10.1.1.19"`)
	e.CreateEndpoint(mastertest.CreateEP("default", "n", "g", "c1", ""))
	e.CreateEndpoint(mastertest.CreateEP("default", "n", "", "c2", ""))
	e.OK("POST", "/plugin/allocAddress", `{"NetworkID":"n.default"}`)
	before := e.Dump()
	ctx := mastertest.Ctx(t, 10*time.Second)
	for key, from := range map[string]string{"state/nets/n.default": `"epCount":2`, "state/endpointGroups/g:default": `"epCount":1`} {
		bad := strings.Replace(before[key], from, `"epCount":7`, 1)
		if bad == before[key] {
			t.Fatalf("%s has no %s: %s", key, from, before[key])
		}
		if _, err := e.St.Put(ctx, key, []byte(bad)); err != nil {
			t.Fatal(err)
		}
	}
	e.Restart()
	if d := mastertest.DiffDumps(before, e.Dump()); d != "" {
		t.Fatalf("counters not restored:\n%s", d)
	}
	if ni := e.NetOper("default", "n"); ni.Oper.NumEndpoints != 2 || ni.Oper.AllocatedAddressesCount != 3 {
		t.Fatalf("network oper: %+v", ni.Oper)
	}
}

// An address allocated by a netmaster killed before it recorded the owner
// is given back by the next leadership term; owned ones are kept.
func TestLeakedAddressesSwept(t *testing.T) {
	e := newEnv(t)
	e.CreateNet("default", "n", "vlan", "10.1.1.0/24", "10.1.1.254", 0)
	e.CreateEPG("default", "g", "n", `"ipPool":"10.1.1.10-10.1.1.19"`)
	e.CreateEndpoint(mastertest.CreateEP("default", "n", "g", "c1", ""))
	e.CreateEndpoint(mastertest.CreateEP("default", "n", "", "c2", ""))
	e.OK("POST", "/plugin/allocAddress", `{"NetworkID":"n.default"}`)
	e.OK("POST", "/plugin/allocAddress", `{"NetworkID":"n:g.default"}`)
	want := e.NetOper("default", "n").Oper
	a := ipam.NewV4(e.St)
	defer a.Close()
	ctx := mastertest.Ctx(t, 10*time.Second)
	for _, pool := range []string{"n.default", "g:default"} {
		if _, err := a.Allocate(ctx, pool); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.NetOper("default", "n").Oper.AllocatedIPAddresses; got == want.AllocatedIPAddresses {
		t.Fatalf("leak not visible: %s", got)
	}
	e.Restart()
	got := e.NetOper("default", "n").Oper
	if got.AllocatedIPAddresses != want.AllocatedIPAddresses || got.AllocatedAddressesCount != want.AllocatedAddressesCount {
		t.Fatalf("after sweep: %+v, want %+v", got, want)
	}
	var gi struct {
		Oper struct{ AllocatedIPAddresses string }
	}
	e.Inspect("endpointGroups/default:g/", &gi)
	if gi.Oper.AllocatedIPAddresses != "10.1.1.10-10.1.1.11" {
		t.Fatalf("group pool after sweep: %q", gi.Oper.AllocatedIPAddresses)
	}
}
