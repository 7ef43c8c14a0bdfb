package master_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/contiv/netplugin/netmaster/master/mastertest"
)

func svcPath(tenant, name string) string { return "/api/v1/serviceLBs/" + tenant + ":" + name + "/" }

// svcBody is a serviceLB request; ip "" asks for an automatic VIP.
func svcBody(tenant, name, net, ip string, selectors, ports []string) string {
	b, _ := json.Marshal(map[string]any{"tenantName": tenant, "serviceName": name, "networkName": net,
		"ipAddress": ip, "selectors": selectors, "ports": ports})
	return string(b)
}

// svcRecord is the persisted service state (docs/daemons.md §3.12).
type svcRecord struct {
	ID          string            `json:"id"`
	ServiceName string            `json:"servicename"`
	Tenant      string            `json:"tenantname"`
	Network     string            `json:"subnet"`
	Ports       []string          `json:"ports"`
	Selectors   map[string]string `json:"selectors"`
	IPAddress   string            `json:"ipaddress"`
	Providers   map[string]struct {
		IPAddress, ContainerID, Tenant, Network, EpIDKey string
		Labels                                           map[string]string
		Services                                         []string
	} `json:"providers"`
}

// svcState reads state/serviceLB/<id>; ok is false when absent.
func (e *env) svcState(id string) (svcRecord, bool) {
	e.T.Helper()
	raw, ok := e.Dump()["state/serviceLB/"+id]
	var r svcRecord
	if ok {
		if err := json.Unmarshal([]byte(raw), &r); err != nil {
			e.T.Fatalf("decode service state %s: %v", raw, err)
		}
	}
	return r, ok
}

// published returns the provider list of state/provider/<id>, or nil and
// false when absent.
func (e *env) published(id string) ([]string, bool) {
	e.T.Helper()
	raw, ok := e.Dump()["state/provider/"+id]
	if !ok {
		return nil, false
	}
	var sp struct {
		ID, ServiceName string
		Providers       []string
	}
	if err := json.Unmarshal([]byte(raw), &sp); err != nil || sp.ID != id || sp.ServiceName != id {
		e.T.Fatalf("provider list %s: %v", raw, err)
	}
	return sp.Providers, true
}

func (e *env) wantPublished(id string, want ...string) {
	e.T.Helper()
	got, ok := e.published(id)
	if !ok {
		e.T.Fatalf("%s: no provider list, want %v", id, want)
	}
	sort.Strings(want)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		e.T.Fatalf("%s providers %v, want %v", id, got, want)
	}
}

type svcInspect struct {
	Oper struct {
		ServiceVip   string `json:"serviceVip"`
		NumProviders int    `json:"numProviders"`
		Providers    []struct {
			ServiceName string   `json:"serviceName"`
			ContainerID string   `json:"containerID"`
			IPAddress   []string `json:"ipAddress"`
			Labels      string   `json:"labels"`
			Network     string   `json:"network"`
		} `json:"providers"`
	}
}

// Spec docs/rest-api.md §4 item 33 and the §2.11 create/update/delete rules.
func TestServiceLB(t *testing.T) {
	e := newEnv(t)
	e.CreateNet("default", "yellow", "vxlan", "10.1.1.0/24", "10.1.1.254", 0)
	sel, ports := []string{"key1=value1", "key2=value2"}, []string{"80:8080:TCP"}

	// Refusals, in the spec's order; each leaves the store unchanged.
	p := svcPath("default", "svc1")
	e.Fail("POST", p, svcBody("default", "svc1", "yellow", "", nil, ports), "Invalid selector options")
	const badPorts = "Invalid Port maping . Port format is - Port:TargetPort:Protocol"
	e.Fail("POST", p, svcBody("default", "svc1", "yellow", "", sel, nil), badPorts)
	for _, bad := range [][]string{{"80"}, {"80:8080"}, {"80:8080:SCTP"}, {"x:8080:TCP"}, {"80:-1:TCP"}, {"80:8080:TCP:1"},
		{"80:8080:TCP", "81"}, {"80:8080:TCP", "81:90:tcpx"}, {"0:8080:TCP"}, {"80:65536:udp"}} {
		e.Fail("POST", p, svcBody("default", "svc1", "yellow", "", sel, bad), badPorts)
	}
	e.Fail("POST", svcPath("nosuch", "svc1"), svcBody("nosuch", "svc1", "yellow", "", sel, ports), "Tenant nosuch not found")
	e.Fail("POST", p, svcBody("default", "svc1", "green", "", sel, ports), "Network green not found")
	e.Fail("POST", p, svcBody("default", "svc1", "yellow", "", []string{"key1=value1", "key2"}, ports),
		"Invalid selector key2. selector format is key1=value1")
	e.Fail("POST", p, svcBody("default", "svc1", "yellow", "", []string{"a=b=c"}, ports), "Invalid selector a=b=c. selector format is key1=value1")
	e.Fail("POST", p, svcBody("default", "svc1", "yellow", "10.1.2.3", sel, ports), "hostIP 10.1.2.3 is exceeding beyond subnet 10.1.1.0/24, hostID 259")
	e.Fail("POST", p, svcBody("default", "svc1", "yellow", "10.1.1.254", sel, ports), "ip address 10.1.1.254 is not available")
	e.Fail("DELETE", p, "", "serviceLB not found")

	// 33: create with an automatic VIP.
	e.OK("POST", p, svcBody("default", "svc1", "yellow", "", sel, ports))
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
	rec, ok := e.svcState("svc1:default")
	if !ok || rec.ID != "svc1:default" || rec.ServiceName != "svc1" || rec.Tenant != "default" || rec.Network != "yellow" ||
		rec.IPAddress != "10.1.1.1" || len(rec.Providers) != 0 || rec.Selectors["key1"] != "value1" || rec.Selectors["key2"] != "value2" ||
		len(rec.Ports) != 1 || rec.Ports[0] != "80:8080:TCP" {
		t.Fatalf("service state %+v %v", rec, ok)
	}
	if _, ok := e.published("svc1:default"); ok {
		t.Fatalf("provider list published for a service without providers")
	}
	var si svcInspect
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
	e.OK("POST", p, svcBody("default", "svc1", "yellow", "", sel, ports))
	if d := mastertest.DiffDumps(before, e.Dump()); d != "" {
		t.Fatalf("identical re-create changed the store:\n%s", d)
	}
	// Reordered selectors and ports are the same service: only the stored
	// request changes.
	e.OK("PUT", p, svcBody("default", "svc1", "yellow", "", []string{"key2=value2", "key1=value1"}, ports))
	if d := mastertest.DiffDumps(before, e.Dump()); !strings.HasPrefix(d, "~ obj/modeldb/serviceLB/default:svc1\n") || strings.Count(d, "~") != 1 {
		t.Fatalf("reordered selectors changed:\n%s", d)
	}
	e.OK("PUT", p, svcBody("default", "svc1", "yellow", "", sel, ports))
	// Refused updates change nothing either.
	e.Fail("POST", p, svcBody("default", "svc1", "yellow", "", sel, []string{"80"}), badPorts)
	e.Fail("POST", p, svcBody("default", "svc1", "yellow", "", nil, ports), "Invalid selector options")

	// 33: a requested VIP is taken exactly.
	e.OK("POST", svcPath("default", "svc2"), svcBody("default", "svc2", "yellow", "10.1.1.3", []string{"app=db"}, []string{"5432:5432:tcp", "53:53:UDP"}))
	if rec, _ := e.svcState("svc2:default"); rec.IPAddress != "10.1.1.3" {
		t.Fatalf("requested VIP: %+v", rec)
	}
	e.Fail("POST", svcPath("default", "svc3"), svcBody("default", "svc3", "yellow", "10.1.1.3", sel, ports), "ip address 10.1.1.3 is not available")

	// A changed spec is set up anew, keeping the VIP.
	e.OK("POST", p, svcBody("default", "svc1", "yellow", "", []string{"key1=value1"}, []string{"80:8080:TCP", "443:8443:TCP"}))
	if rec, _ := e.svcState("svc1:default"); rec.IPAddress != "10.1.1.1" || len(rec.Selectors) != 1 || len(rec.Ports) != 2 {
		t.Fatalf("changed service: %+v", rec)
	}
	if b := e.OK("GET", p, ""); !strings.Contains(b, `"selectors":["key1=value1"]`) || !strings.Contains(b, `"ports":["80:8080:TCP","443:8443:TCP"]`) {
		t.Fatalf("changed service GET: %s", b)
	}
	// A newly requested VIP replaces the old one, which is released.
	e.OK("POST", p, svcBody("default", "svc1", "yellow", "10.1.1.7", []string{"key1=value1"}, []string{"80:8080:TCP", "443:8443:TCP"}))
	if rec, _ := e.svcState("svc1:default"); rec.IPAddress != "10.1.1.7" {
		t.Fatalf("moved VIP: %+v", rec)
	}
	if ni := e.NetOper("default", "yellow"); ni.Oper.AllocatedIPAddresses != "10.1.1.3, 10.1.1.7, 10.1.1.254" || ni.Oper.AllocatedAddressesCount != 2 {
		t.Fatalf("network oper after the VIP moved: %+v", ni.Oper)
	}
	// A changed network moves the VIP and the links.
	e.CreateNet("default", "blue", "vlan", "10.2.1.0/24", "", 0)
	e.OK("POST", p, svcBody("default", "svc1", "blue", "", sel, ports))
	if rec, _ := e.svcState("svc1:default"); rec.IPAddress != "10.2.1.1" || rec.Network != "blue" {
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
	var all []svcRecord
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
	e.OK("DELETE", svcPath("default", "svc2"), "")
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

func startEvent(tenant, network, endpointID, container, ip string, labels map[string]string) string {
	b, _ := json.Marshal(map[string]any{"IPAddress": ip, "ContainerID": container, "Labels": labels, "Tenant": tenant,
		"Network": network, "Event": "start", "EndpointID": endpointID, "EPCommonName": "/" + container})
	return string(b)
}

func dieEvent(container string) string {
	return fmt.Sprintf(`{"ContainerID":%q,"Event":"die"}`, container)
}

// Spec docs/rest-api.md §4 item 34, §3.5 and docs/daemons.md §4.12: containers
// become providers of the services whose selectors their labels satisfy,
// whether the service exists before or after they start.
func TestServiceProviders(t *testing.T) {
	e := newEnv(t)
	e.CreateNet("default", "orange", "vlan", "20.1.1.0/24", "", 0)
	e.CreateEPG("default", "web", "orange", "")
	e.OK("POST", "/api/v1/tenants/other/", `{"tenantName":"other"}`)
	e.CreateNet("other", "orange", "vlan", "20.1.1.0/24", "", 0)
	e.CreateNet("default", "yellow", "vlan", "10.1.1.0/24", "", 0)
	ports := []string{"80:8080:TCP"}
	// redis is created before the containers start.
	e.OK("POST", svcPath("default", "redis"), svcBody("default", "redis", "yellow", "", []string{"key1=value1", "key2=value2"}, ports))

	ips := map[string]string{}
	for i, c := range []string{"c1", "c2", "c3", "c4"} {
		ips[c] = e.CreateEndpoint(mastertest.CreateEP("default", "orange", "web", c, "")).EndpointConfig.IPAddress
		if ips[c] != fmt.Sprintf("20.1.1.%d", i+1) {
			t.Fatalf("endpoint %s address %s", c, ips[c])
		}
	}
	oc := e.CreateEndpoint(mastertest.CreateEP("other", "orange", "", "o1", "")).EndpointConfig.IPAddress
	both := map[string]string{"key1": "value1", "key2": "value2"}
	labels := map[string]map[string]string{
		"c1": both,
		"c2": {"key1": "value1", "key2": "value2", "extra": "x"}, // a superset matches
		"c3": {"key1": "value1"},
		"c4": both,
	}
	// c1..c3 name the network, c4 its group (§3.5 step 1).
	for _, c := range []string{"c1", "c2", "c3"} {
		if b := e.OK("POST", "/plugin/updateEndpoint", startEvent("default", "orange", c, "cid-"+c, ips[c], labels[c])); b != `{"IPAddress":"`+ips[c]+`"}`+"\n" {
			t.Fatalf("start %s: %s", c, b)
		}
	}
	e.OK("POST", "/plugin/updateEndpoint", startEvent("default", "web", "c4", "cid-c4", ips["c4"], labels["c4"]))
	e.OK("POST", "/plugin/updateEndpoint", startEvent("other", "orange", "o1", "cid-o1", oc, both))
	e.wantPublished("redis:default", ips["c1"], ips["c2"], ips["c4"])
	if got := e.Dump()["state/eps/orange.default-c4"]; !strings.Contains(got, `"labels":{"key1":"value1","key2":"value2"}`) ||
		!strings.Contains(got, `"containerId":"cid-c4"`) || !strings.Contains(got, `"epCommonName":"/cid-c4"`) {
		t.Fatalf("endpoint after start: %s", got)
	}
	rec, _ := e.svcState("redis:default")
	pr, ok := rec.Providers[ips["c1"]+":default"]
	if len(rec.Providers) != 3 || !ok || pr.ContainerID != "cid-c1" || pr.EpIDKey != "orange.default-c1" || pr.Network != "orange" ||
		pr.Tenant != "default" || len(pr.Services) != 1 || pr.Services[0] != "redis:default" {
		t.Fatalf("service state providers: %+v", rec.Providers)
	}
	var si svcInspect
	e.Inspect("serviceLBs/default:redis/", &si)
	if si.Oper.NumProviders != 3 || len(si.Oper.Providers) != 3 || si.Oper.Providers[0].ServiceName != "redis" ||
		si.Oper.Providers[0].ContainerID != "cid-c1" || si.Oper.Providers[0].Network != "orange.default" ||
		si.Oper.Providers[0].Labels != "map[key1:value1 key2:value2]" {
		t.Fatalf("service inspect %+v", si.Oper)
	}

	// Services created after the containers started find them.
	e.OK("POST", svcPath("default", "k1"), svcBody("default", "k1", "yellow", "", []string{"key1=value1"}, ports))
	e.wantPublished("k1:default", ips["c1"], ips["c2"], ips["c3"], ips["c4"])
	e.OK("POST", svcPath("default", "extra"), svcBody("default", "extra", "yellow", "", []string{"extra=x"}, ports))
	e.wantPublished("extra:default", ips["c2"])
	e.OK("POST", svcPath("other", "k1"), svcBody("other", "k1", "orange", "", []string{"key1=value1"}, ports))
	e.wantPublished("k1:other", oc)
	if rec, _ := e.svcState("redis:default"); len(rec.Providers[ips["c2"]+":default"].Services) != 1 {
		t.Fatalf("record written before k1 and extra: %+v", rec.Providers)
	}
	if rec, _ := e.svcState("extra:default"); strings.Join(rec.Providers[ips["c2"]+":default"].Services, ",") != "extra:default,k1:default,redis:default" {
		t.Fatalf("provider services: %+v", rec.Providers)
	}
	// Changing a service's selectors re-matches its providers.
	e.OK("POST", svcPath("default", "extra"), svcBody("default", "extra", "yellow", "", []string{"key2=value2"}, ports))
	e.wantPublished("extra:default", ips["c1"], ips["c2"], ips["c4"])

	// A leadership change rebuilds the caches from the store.
	e.Restart()
	e.OK("POST", svcPath("default", "k3"), svcBody("default", "k3", "yellow", "", []string{"key1=value1"}, ports))
	e.wantPublished("k3:default", ips["c1"], ips["c2"], ips["c3"], ips["c4"])

	// die withdraws a provider from every service it is in.
	if b := e.OK("POST", "/plugin/updateEndpoint", dieEvent("cid-c2")); b != `{"IPAddress":""}`+"\n" {
		t.Fatalf("die: %q", b)
	}
	e.wantPublished("redis:default", ips["c1"], ips["c4"])
	e.wantPublished("k1:default", ips["c1"], ips["c3"], ips["c4"])
	e.wantPublished("extra:default", ips["c1"], ips["c4"])
	if b := e.OK("POST", "/plugin/updateEndpoint", dieEvent("cid-c2")); b != "null\n" {
		t.Fatalf("second die: %q", b)
	}
	if b := e.OK("POST", "/plugin/updateEndpoint", dieEvent("cid-never")); b != "null\n" {
		t.Fatalf("die of an unknown container: %q", b)
	}
	for _, c := range []string{"c1", "c3", "c4"} {
		e.OK("POST", "/plugin/updateEndpoint", dieEvent("cid-"+c))
	}
	e.wantPublished("redis:default")
	e.wantPublished("k1:default")
	e.wantPublished("k1:other", oc)
	si = svcInspect{}
	e.Inspect("serviceLBs/default:redis/", &si)
	if si.Oper.NumProviders != 0 || len(si.Oper.Providers) != 0 {
		t.Fatalf("inspect after die: %+v", si.Oper)
	}
	// A repeated start is one membership; other events change nothing.
	e.OK("POST", "/plugin/updateEndpoint", startEvent("default", "orange", "c1", "cid-c1", ips["c1"], both))
	e.OK("POST", "/plugin/updateEndpoint", startEvent("default", "orange", "c1", "cid-c1", ips["c1"], both))
	e.wantPublished("redis:default", ips["c1"])
	before := e.Dump()
	e.OK("POST", "/plugin/updateEndpoint", `{"ContainerID":"cid-c1","Event":"pause","Tenant":"default","Network":"orange","EndpointID":"c1"}`)
	if d := mastertest.DiffDumps(before, e.Dump()); d != "" {
		t.Fatalf("other event changed the store:\n%s", d)
	}

	// Refusals (§3.5).
	e.Fail("POST", "/plugin/updateEndpoint", startEvent("default", "nosuch", "c1", "cid-c1", ips["c1"], both), "group nosuch:default not found")
	e.Fail("POST", "/plugin/updateEndpoint", startEvent("default", "orange", "c9", "cid-c9", "", both), "endpoint orange.default-c9 not found")
	e.Fail("POST", "/plugin/updateEndpoint", `{"Event":"die"}`, "invalid containerID in UpdateEndpointRequest:(nil)")
	code, body := e.Do("POST", "/plugin/updateEndpoint", startEvent("default", "orange", "c3", "", ips["c3"], both))
	if code != http.StatusBadRequest || !strings.HasPrefix(body, "invalid ProviderID from providerInfo:{") {
		t.Fatalf("start without container id: %d %q", code, body)
	}

	// Deleting a service withdraws its provider list.
	e.OK("DELETE", svcPath("default", "redis"), "")
	if _, ok := e.published("redis:default"); ok {
		t.Fatalf("provider list of a deleted service")
	}
}

// Service VIPs survive a new term's sweep of leaked addresses and count as
// handed-out addresses in the reconciled counters.
func TestServiceVIPSurvivesSweep(t *testing.T) {
	e := newEnv(t) // LeaderTTL 0: every start sweeps at once
	e.CreateNet("default", "yellow", "vlan", "10.1.1.0/24", "", 0)
	e.OK("POST", svcPath("default", "s"), svcBody("default", "s", "yellow", "", []string{"a=b"}, []string{"80:80:TCP"}))
	e.OK("POST", svcPath("default", "t"), svcBody("default", "t", "yellow", "10.1.1.9", []string{"a=b"}, []string{"80:80:TCP"}))
	before := e.NetOper("default", "yellow")
	e.Restart()
	after := e.NetOper("default", "yellow")
	if after.Oper.AllocatedIPAddresses != "10.1.1.1, 10.1.1.9" || after.Oper.AllocatedAddressesCount != 2 ||
		before.Oper.AllocatedIPAddresses != after.Oper.AllocatedIPAddresses || before.Oper.AllocatedAddressesCount != 2 {
		t.Fatalf("network oper before %+v after %+v", before.Oper, after.Oper)
	}
	var si svcInspect
	e.Inspect("serviceLBs/default:t/", &si)
	if si.Oper.ServiceVip != "10.1.1.9" {
		t.Fatalf("inspect after restart: %+v", si.Oper)
	}
	// The running service is known again: an identical request is a no-op.
	snap := e.Dump()
	e.OK("POST", svcPath("default", "t"), svcBody("default", "t", "yellow", "10.1.1.9", []string{"a=b"}, []string{"80:80:TCP"}))
	if d := mastertest.DiffDumps(snap, e.Dump()); d != "" {
		t.Fatalf("identical request after restart changed the store:\n%s", d)
	}
}

// Start events racing service creates and updates end with every matching
// container a provider of every service (no lost update, no deadlock).
func TestServiceProvidersConcurrent(t *testing.T) {
	e := newEnv(t)
	e.CreateNet("default", "orange", "vlan", "20.1.1.0/24", "", 0)
	const n = 12
	var want []string
	for i := 0; i < n; i++ {
		want = append(want, e.CreateEndpoint(mastertest.CreateEP("default", "orange", "", fmt.Sprintf("c%d", i), "")).EndpointConfig.IPAddress)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < n; i++ {
			b := startEvent("default", "orange", fmt.Sprintf("c%d", i), fmt.Sprintf("cid%d", i), want[i], map[string]string{"app": "x", "n": fmt.Sprint(i)})
			if code, _, _ := mastertest.DoReq(t, e.Srv.URL, "POST", "/plugin/updateEndpoint", b); code != http.StatusOK {
				t.Errorf("start %d: %d", i, code)
			}
		}
	}()
	for i := 0; i < 4; i++ {
		name := fmt.Sprintf("s%d", i)
		e.OK("POST", svcPath("default", name), svcBody("default", name, "orange", "", []string{"app=x"}, []string{"80:80:TCP"}))
		e.OK("POST", svcPath("default", name), svcBody("default", name, "orange", "", []string{"app=x"}, []string{"81:81:TCP"}))
	}
	<-done
	for i := 0; i < 4; i++ {
		e.wantPublished(fmt.Sprintf("s%d:default", i), want...)
	}
}

// A container cannot take a service VIP or the gateway as its preferred
// address; an address allocAddress handed out is still accepted.
func TestPreferredAddressCannotTakeVIPOrGateway(t *testing.T) {
	e := newEnv(t)
	e.CreateNet("default", "teal", "vlan", "10.5.1.0/24", "10.5.1.254", 0)
	e.OK("POST", svcPath("default", "s"), svcBody("default", "s", "teal", "10.5.1.9", []string{"a=b"}, []string{"80:80:TCP"}))
	e.Fail("POST", "/plugin/createEndpoint", mastertest.CreateEP("default", "teal", "", "c1", "10.5.1.9"), "")
	e.Fail("POST", "/plugin/createEndpoint", mastertest.CreateEP("default", "teal", "", "c2", "10.5.1.254"), "")
	e.OK("POST", "/plugin/allocAddress", `{"NetworkID":"teal.default","AddressPool":"","PreferredIPv4Address":"10.5.1.20"}`)
	if got := e.CreateEndpoint(mastertest.CreateEP("default", "teal", "", "c3", "10.5.1.20")).EndpointConfig.IPAddress; got != "10.5.1.20" {
		t.Fatalf("allocated address not taken over: %q", got)
	}
}
