package endpoints_test

import (
	"slices"
	"testing"

	"github.com/contiv/netplugin/netmaster/master/mastertest"
)

// DELETE /debug/epcleanup/tenant/{tenant}/{category}/{id} (docs/daemons.md
// §4.10.4, docs/rest-api.md §3.10): the selected endpoints are deleted as by
// /plugin/deleteEndpoint and their hosts' netplugins asked to reclaim them;
// every failure answers 200 with an empty body.
func TestEpCleanup(t *testing.T) {
	np := mastertest.StartFakeNetplugins(t, "127.0.0.1", "127.0.0.2")
	cfg := mastertest.DefaultConfig()
	cfg.NetpluginPort = np.Port
	e := newEnvCfg(t, cfg)
	e.RegisterVtep("127.0.0.1", "host1")
	e.RegisterVtep("127.0.0.2", "host2")
	e.OK("POST", "/api/v1/tenants/t2/", `{"tenantName":"t2"}`)
	e.CreateNet("default", "n1", "vlan", "198.18.50.0/24", "198.18.50.254", 0)
	e.CreateNet("default", "n2", "vxlan", "198.18.51.0/24", "", 0)
	e.CreateNet("t2", "n3", "vxlan", "198.18.52.0/24", "", 0)
	e.CreateEPG("default", "g1", "n1", `"ipPool":"198.18.50.10-198.18.50.19"`)
	e.CreateEPG("t2", "g1", "n3", "")
	for _, ep := range [][4]string{
		{"default", "n1", "g1", "e1"}, {"default", "n1", "", "e2"},
		{"default", "n2", "", "e3"}, {"default", "n2", "", "web-4"}, {"t2", "n3", "g1", "web-5"},
	} {
		host := "host1"
		if ep[3] == "e3" || ep[3] == "web-5" {
			host = "host2"
		}
		e.CreateEndpoint(mastertest.EPBody(ep[0], ep[1], ep[2], ep[3], host, "", ""))
	}

	// Refusals: 200, empty body, nothing changed, nobody asked.
	before := e.Dump()
	for _, c := range [][3]string{
		{"default", "bogus", "n1"}, {"default", "net", "nosuch"}, {"nosuch", "net", "n1"}, {"default", "group", "nosuch"},
	} {
		if body := e.EpCleanup(c[0], c[1], c[2]); body != "" {
			t.Fatalf("epcleanup %v: body %q", c, body)
		}
	}
	if d := mastertest.DiffDumps(before, e.Dump()); d != "" {
		t.Fatalf("refused cleanups changed the store:\n%s", d)
	}
	if got := np.Take(); len(got) != 0 {
		t.Fatalf("refused cleanups asked netplugins: %v", got)
	}

	// group: by the group name in every tenant; addresses and counts given
	// back (the group pool's address too).
	if body := e.EpCleanup("default", "group", "g1"); body != "Received request to cleanup EPG with ID: g1\n" {
		t.Fatalf("group cleanup body %q", body)
	}
	if got, want := np.Take(), []string{
		"DELETE 127.0.0.1 /debug/reclaimEndpoint/n1.default-e1", "DELETE 127.0.0.2 /debug/reclaimEndpoint/n3.t2-web-5",
	}; !slices.Equal(got, want) {
		t.Fatalf("reclaims %v, want %v", got, want)
	}
	if got, want := e.EpKeys(), []string{"n1.default-e2", "n2.default-e3", "n2.default-web-4"}; !slices.Equal(got, want) {
		t.Fatalf("endpoints %v, want %v", got, want)
	}
	if gs, _ := e.GroupState("default", "g1"); gs.EpCount != 0 {
		t.Fatalf("group epCount %d", gs.EpCount)
	}
	var gi struct {
		Oper struct{ AllocatedIPAddresses string }
	}
	e.Inspect("endpointGroups/default:g1/", &gi)
	if gi.Oper.AllocatedIPAddresses != "" {
		t.Fatalf("group pool after cleanup: %q", gi.Oper.AllocatedIPAddresses)
	}
	// A group without endpoints: empty 200.
	if body := e.EpCleanup("default", "group", "g1"); body != "" || len(np.Take()) != 0 {
		t.Fatalf("cleanup of an empty group: %q", body)
	}

	// net: the network's endpoints only.
	if body := e.EpCleanup("default", "net", "n2"); body != "Received request to cleanup Network with ID: n2\n" {
		t.Fatalf("net cleanup body %q", body)
	}
	if got, want := np.Take(), []string{
		"DELETE 127.0.0.1 /debug/reclaimEndpoint/n2.default-web-4", "DELETE 127.0.0.2 /debug/reclaimEndpoint/n2.default-e3",
	}; !slices.Equal(got, want) {
		t.Fatalf("reclaims %v, want %v", got, want)
	}
	if ni := e.NetOper("default", "n2"); ni.Oper.NumEndpoints != 0 || ni.Oper.AllocatedAddressesCount != 0 || ni.Oper.AllocatedIPAddresses != "" {
		t.Fatalf("network n2 after cleanup: %+v", ni.Oper)
	}
	if body := e.EpCleanup("default", "net", "n2"); body != "" {
		t.Fatalf("cleanup of an empty network: %q", body)
	}

	// ep: endpoint ids containing the id, in any tenant.
	e.CreateEndpoint(mastertest.EPBody("t2", "n3", "", "web-6", "host2", "", ""))
	if body := e.EpCleanup("default", "ep", "web-"); body != "Received request to cleanup Endpoint with ID: web-\n" {
		t.Fatalf("ep cleanup body %q", body)
	}
	if got, want := np.Take(), []string{"DELETE 127.0.0.2 /debug/reclaimEndpoint/n3.t2-web-6"}; !slices.Equal(got, want) {
		t.Fatalf("reclaims %v, want %v", got, want)
	}

	// A failed reclaim (netplugin error, host without netplugin.vtep): the
	// endpoint is deleted all the same, the answer is an empty 200.
	np.FailPath("/debug/reclaimEndpoint/n1.default-e7")
	e.CreateEndpoint(mastertest.EPBody("default", "n1", "", "e7", "host1", "", ""))
	e.CreateEndpoint(mastertest.EPBody("default", "n1", "", "e8", "host3", "", ""))
	if body := e.EpCleanup("default", "net", "n1"); body != "" {
		t.Fatalf("cleanup with failed reclaims: body %q", body)
	}
	if got, want := np.Take(), []string{
		"DELETE 127.0.0.1 /debug/reclaimEndpoint/n1.default-e2", "DELETE 127.0.0.1 /debug/reclaimEndpoint/n1.default-e7",
	}; !slices.Equal(got, want) {
		t.Fatalf("reclaims %v, want %v", got, want)
	}
	if got := e.EpKeys(); len(got) != 0 {
		t.Fatalf("endpoints left: %v", got)
	}
	if ni := e.NetOper("default", "n1"); ni.Oper.NumEndpoints != 0 || ni.Oper.AllocatedAddressesCount != 0 ||
		ni.Oper.AllocatedIPAddresses != "198.18.50.10-198.18.50.19, 198.18.50.254" {
		t.Fatalf("network n1 after cleanup: %+v", ni.Oper)
	}
}
