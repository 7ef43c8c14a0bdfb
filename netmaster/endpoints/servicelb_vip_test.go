package endpoints_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/contiv/netplugin/netmaster/master/mastertest"
)

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
	e.OK("POST", mastertest.SvcPath("default", "redis"), mastertest.SvcBody("default", "redis", "yellow", "", []string{"key1=value1", "key2=value2"}, ports))

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
		if b := e.OK("POST", "/plugin/updateEndpoint", mastertest.StartEvent("default", "orange", c, "cid-"+c, ips[c], labels[c])); b != `{"IPAddress":"`+ips[c]+`"}`+"\n" {
			t.Fatalf("start %s: %s", c, b)
		}
	}
	e.OK("POST", "/plugin/updateEndpoint", mastertest.StartEvent("default", "web", "c4", "cid-c4", ips["c4"], labels["c4"]))
	e.OK("POST", "/plugin/updateEndpoint", mastertest.StartEvent("other", "orange", "o1", "cid-o1", oc, both))
	e.WantPublished("redis:default", ips["c1"], ips["c2"], ips["c4"])
	if got := e.Dump()["state/eps/orange.default-c4"]; !strings.Contains(got, `"labels":{"key1":"value1","key2":"value2"}`) ||
		!strings.Contains(got, `"containerId":"cid-c4"`) || !strings.Contains(got, `"epCommonName":"/cid-c4"`) {
		t.Fatalf("endpoint after start: %s", got)
	}
	rec, _ := e.SvcState("redis:default")
	pr, ok := rec.Providers[ips["c1"]+":default"]
	if len(rec.Providers) != 3 || !ok || pr.ContainerID != "cid-c1" || pr.EpIDKey != "orange.default-c1" || pr.Network != "orange" ||
		pr.Tenant != "default" || len(pr.Services) != 1 || pr.Services[0] != "redis:default" {
		t.Fatalf("service state providers: %+v", rec.Providers)
	}
	var si mastertest.SvcInspect
	e.Inspect("serviceLBs/default:redis/", &si)
	if si.Oper.NumProviders != 3 || len(si.Oper.Providers) != 3 || si.Oper.Providers[0].ServiceName != "redis" ||
		si.Oper.Providers[0].ContainerID != "cid-c1" || si.Oper.Providers[0].Network != "orange.default" ||
		si.Oper.Providers[0].Labels != "map[key1:value1 key2:value2]" {
		t.Fatalf("service inspect %+v", si.Oper)
	}

	// Services created after the containers started find them.
	e.OK("POST", mastertest.SvcPath("default", "k1"), mastertest.SvcBody("default", "k1", "yellow", "", []string{"key1=value1"}, ports))
	e.WantPublished("k1:default", ips["c1"], ips["c2"], ips["c3"], ips["c4"])
	e.OK("POST", mastertest.SvcPath("default", "extra"), mastertest.SvcBody("default", "extra", "yellow", "", []string{"extra=x"}, ports))
	e.WantPublished("extra:default", ips["c2"])
	e.OK("POST", mastertest.SvcPath("other", "k1"), mastertest.SvcBody("other", "k1", "orange", "", []string{"key1=value1"}, ports))
	e.WantPublished("k1:other", oc)
	if rec, _ := e.SvcState("redis:default"); len(rec.Providers[ips["c2"]+":default"].Services) != 1 {
		t.Fatalf("record written before k1 and extra: %+v", rec.Providers)
	}
	if rec, _ := e.SvcState("extra:default"); strings.Join(rec.Providers[ips["c2"]+":default"].Services, ",") != "extra:default,k1:default,redis:default" {
		t.Fatalf("provider services: %+v", rec.Providers)
	}
	// Changing a service's selectors re-matches its providers.
	e.OK("POST", mastertest.SvcPath("default", "extra"), mastertest.SvcBody("default", "extra", "yellow", "", []string{"key2=value2"}, ports))
	e.WantPublished("extra:default", ips["c1"], ips["c2"], ips["c4"])

	// A leadership change rebuilds the caches from the store.
	e.Restart()
	e.OK("POST", mastertest.SvcPath("default", "k3"), mastertest.SvcBody("default", "k3", "yellow", "", []string{"key1=value1"}, ports))
	e.WantPublished("k3:default", ips["c1"], ips["c2"], ips["c3"], ips["c4"])

	// die withdraws a provider from every service it is in.
	if b := e.OK("POST", "/plugin/updateEndpoint", mastertest.DieEvent("cid-c2")); b != `{"IPAddress":""}`+"\n" {
		t.Fatalf("die: %q", b)
	}
	e.WantPublished("redis:default", ips["c1"], ips["c4"])
	e.WantPublished("k1:default", ips["c1"], ips["c3"], ips["c4"])
	e.WantPublished("extra:default", ips["c1"], ips["c4"])
	if b := e.OK("POST", "/plugin/updateEndpoint", mastertest.DieEvent("cid-c2")); b != "null\n" {
		t.Fatalf("second die: %q", b)
	}
	if b := e.OK("POST", "/plugin/updateEndpoint", mastertest.DieEvent("cid-never")); b != "null\n" {
		t.Fatalf("die of an unknown container: %q", b)
	}
	for _, c := range []string{"c1", "c3", "c4"} {
		e.OK("POST", "/plugin/updateEndpoint", mastertest.DieEvent("cid-"+c))
	}
	e.WantPublished("redis:default")
	e.WantPublished("k1:default")
	e.WantPublished("k1:other", oc)
	si = mastertest.SvcInspect{}
	e.Inspect("serviceLBs/default:redis/", &si)
	if si.Oper.NumProviders != 0 || len(si.Oper.Providers) != 0 {
		t.Fatalf("inspect after die: %+v", si.Oper)
	}
	// A repeated start is one membership; other events change nothing.
	e.OK("POST", "/plugin/updateEndpoint", mastertest.StartEvent("default", "orange", "c1", "cid-c1", ips["c1"], both))
	e.OK("POST", "/plugin/updateEndpoint", mastertest.StartEvent("default", "orange", "c1", "cid-c1", ips["c1"], both))
	e.WantPublished("redis:default", ips["c1"])
	before := e.Dump()
	e.OK("POST", "/plugin/updateEndpoint", `{"ContainerID":"cid-c1","Event":"pause","Tenant":"default","Network":"orange","EndpointID":"c1"}`)
	if d := mastertest.DiffDumps(before, e.Dump()); d != "" {
		t.Fatalf("other event changed the store:\n%s", d)
	}

	// Refusals (§3.5).
	e.Fail("POST", "/plugin/updateEndpoint", mastertest.StartEvent("default", "nosuch", "c1", "cid-c1", ips["c1"], both), "group nosuch:default not found")
	e.Fail("POST", "/plugin/updateEndpoint", mastertest.StartEvent("default", "orange", "c9", "cid-c9", "", both), "endpoint orange.default-c9 not found")
	e.Fail("POST", "/plugin/updateEndpoint", `{"Event":"die"}`, "invalid containerID in UpdateEndpointRequest:(nil)")
	code, body := e.Do("POST", "/plugin/updateEndpoint", mastertest.StartEvent("default", "orange", "c3", "", ips["c3"], both))
	if code != http.StatusBadRequest || !strings.HasPrefix(body, "invalid ProviderID from providerInfo:{") {
		t.Fatalf("start without container id: %d %q", code, body)
	}

	// Deleting a service withdraws its provider list.
	e.OK("DELETE", mastertest.SvcPath("default", "redis"), "")
	if _, ok := e.Published("redis:default"); ok {
		t.Fatalf("provider list of a deleted service")
	}
}

// Service VIPs survive a new term's sweep of leaked addresses and count as
// handed-out addresses in the reconciled counters.
func TestServiceVIPSurvivesSweep(t *testing.T) {
	e := newEnv(t) // LeaderTTL 0: every start sweeps at once
	e.CreateNet("default", "yellow", "vlan", "10.1.1.0/24", "", 0)
	e.OK("POST", mastertest.SvcPath("default", "s"), mastertest.SvcBody("default", "s", "yellow", "", []string{"a=b"}, []string{"80:80:TCP"}))
	e.OK("POST", mastertest.SvcPath("default", "t"), mastertest.SvcBody("default", "t", "yellow", "10.1.1.9", []string{"a=b"}, []string{"80:80:TCP"}))
	before := e.NetOper("default", "yellow")
	e.Restart()
	after := e.NetOper("default", "yellow")
	if after.Oper.AllocatedIPAddresses != "10.1.1.1, 10.1.1.9" || after.Oper.AllocatedAddressesCount != 2 ||
		before.Oper.AllocatedIPAddresses != after.Oper.AllocatedIPAddresses || before.Oper.AllocatedAddressesCount != 2 {
		t.Fatalf("network oper before %+v after %+v", before.Oper, after.Oper)
	}
	var si mastertest.SvcInspect
	e.Inspect("serviceLBs/default:t/", &si)
	if si.Oper.ServiceVip != "10.1.1.9" {
		t.Fatalf("inspect after restart: %+v", si.Oper)
	}
	// The running service is known again: an identical request is a no-op.
	snap := e.Dump()
	e.OK("POST", mastertest.SvcPath("default", "t"), mastertest.SvcBody("default", "t", "yellow", "10.1.1.9", []string{"a=b"}, []string{"80:80:TCP"}))
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
			b := mastertest.StartEvent("default", "orange", fmt.Sprintf("c%d", i), fmt.Sprintf("cid%d", i), want[i], map[string]string{"app": "x", "n": fmt.Sprint(i)})
			if code, _, _ := mastertest.DoReq(t, e.Srv.URL, "POST", "/plugin/updateEndpoint", b); code != http.StatusOK {
				t.Errorf("start %d: %d", i, code)
			}
		}
	}()
	for i := 0; i < 4; i++ {
		name := fmt.Sprintf("s%d", i)
		e.OK("POST", mastertest.SvcPath("default", name), mastertest.SvcBody("default", name, "orange", "", []string{"app=x"}, []string{"80:80:TCP"}))
		e.OK("POST", mastertest.SvcPath("default", name), mastertest.SvcBody("default", name, "orange", "", []string{"app=x"}, []string{"81:81:TCP"}))
	}
	<-done
	for i := 0; i < 4; i++ {
		e.WantPublished(fmt.Sprintf("s%d:default", i), want...)
	}
}

// A container cannot take a service VIP or the gateway as its preferred
// address; an address allocAddress handed out is still accepted.
func TestPreferredAddressCannotTakeVIPOrGateway(t *testing.T) {
	e := newEnv(t)
	e.CreateNet("default", "teal", "vlan", "10.5.1.0/24", "10.5.1.254", 0)
	e.OK("POST", mastertest.SvcPath("default", "s"), mastertest.SvcBody("default", "s", "teal", "10.5.1.9", []string{"a=b"}, []string{"80:80:TCP"}))
	e.Fail("POST", "/plugin/createEndpoint", mastertest.CreateEP("default", "teal", "", "c1", "10.5.1.9"), "")
	e.Fail("POST", "/plugin/createEndpoint", mastertest.CreateEP("default", "teal", "", "c2", "10.5.1.254"), "")
	e.OK("POST", "/plugin/allocAddress", `{"NetworkID":"teal.default","AddressPool":"","PreferredIPv4Address":"10.5.1.20"}`)
	if got := e.CreateEndpoint(mastertest.CreateEP("default", "teal", "", "c3", "10.5.1.20")).EndpointConfig.IPAddress; got != "10.5.1.20" {
		t.Fatalf("allocated address not taken over: %q", got)
	}
}
