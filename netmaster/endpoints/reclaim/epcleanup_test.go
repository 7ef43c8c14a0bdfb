package reclaim_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/contiv/netplugin/netmaster/master/mastertest"
)

// DELETE /debug/epcleanup/tenant/{tenant}/{category}/{id} (docs/daemons.md
// §4.10.4, docs/rest-api.md §3.10, docs/security.md "Debug endpoints"):
// exact ids scoped by the tenant; the selected endpoints are deleted as by
// /plugin/deleteEndpoint and their hosts' netplugins asked to reclaim them;
// dryRun=true lists them and changes nothing; nothing matched is a 409.
func TestEpCleanup(t *testing.T) {
	np := mastertest.StartFakeNetplugins(t, "127.0.0.1", "127.0.0.2")
	cfg := mastertest.DefaultConfig()
	cfg.NetpluginPort = np.Port
	e := pkgEtcd.NewCfg(t, cfg)
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

	// Refusals: an error status, nothing changed, nobody asked. "-" and
	// "web-" were substrings of every id; web-5 lives in tenant t2.
	before := e.Dump()
	for _, c := range []struct {
		tenant, cat, id, query string
		code                   int
		msg                    string
	}{
		{"default", "bogus", "n1", "", http.StatusBadRequest, `unknown cleanup category "bogus"`},
		{"default", "net", "nosuch", "", http.StatusNotFound, "not found"},
		{"nosuch", "net", "n1", "", http.StatusNotFound, "not found"},
		{"default", "group", "nosuch", "", http.StatusNotFound, "not found"},
		{"default", "ep", "-", "", http.StatusConflict, `no endpoint matched endpoint "-" in tenant "default": nothing removed`},
		{"default", "ep", "-", "dryRun=true", http.StatusConflict, "nothing removed"},
		{"default", "ep", "web-", "", http.StatusConflict, "nothing removed"},
		{"default", "ep", "web-5", "", http.StatusConflict, "nothing removed"},
		{"default", "ep", "n3.t2-web-5", "", http.StatusConflict, "nothing removed"},
		{"default", "ep", "e1", "dryRun=maybe", http.StatusBadRequest, `dryRun "maybe"`},
		{"default", "ep", "e1", "dryRun=true&dryRun=false", http.StatusBadRequest, "dryRun given 2 times"},
	} {
		code, body := e.EpCleanup(c.tenant, c.cat, c.id, c.query)
		if code != c.code || !strings.Contains(body, c.msg) {
			t.Fatalf("epcleanup %+v: %d %q", c, code, body)
		}
	}
	if d := mastertest.DiffDumps(before, e.Dump()); d != "" {
		t.Fatalf("refused cleanups changed the store:\n%s", d)
	}
	if got := np.Take(); len(got) != 0 {
		t.Fatalf("refused cleanups asked netplugins: %v", got)
	}

	// Dry run: the exact selection (not t2's group g1), nothing changed.
	code, body := e.EpCleanup("default", "group", "g1", "dryRun=true")
	if want := "Dry run: would clean up EPG with ID: g1 (1 endpoints)\nn1.default-e1 host1\n"; code != http.StatusOK || body != want {
		t.Fatalf("dry run: %d %q, want %q", code, body, want)
	}
	code, body = e.EpCleanup("default", "ep", "e2", "dryRun=1")
	if want := "Dry run: would clean up Endpoint with ID: e2 (1 endpoints)\nn1.default-e2 host1\n"; code != http.StatusOK || body != want {
		t.Fatalf("dry run: %d %q, want %q", code, body, want)
	}
	if d := mastertest.DiffDumps(before, e.Dump()); d != "" {
		t.Fatalf("dry runs changed the store:\n%s", d)
	}
	if got := np.Take(); len(got) != 0 {
		t.Fatalf("dry runs asked netplugins: %v", got)
	}

	// group: the tenant's group only; addresses and counts given back (the
	// group pool's address too).
	code, body = e.EpCleanup("default", "group", "g1", "dryRun=false")
	if want := "Received request to cleanup EPG with ID: g1\nn1.default-e1 host1\n"; code != http.StatusOK || body != want {
		t.Fatalf("group cleanup: %d %q", code, body)
	}
	if got, want := np.Take(), []string{"DELETE 127.0.0.1 /debug/reclaimEndpoint/n1.default-e1"}; !slices.Equal(got, want) {
		t.Fatalf("reclaims %v, want %v", got, want)
	}
	if got, want := e.EpKeys(), []string{"n1.default-e2", "n2.default-e3", "n2.default-web-4", "n3.t2-web-5"}; !slices.Equal(got, want) {
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
	// A group without endpoints: 409.
	if code, body := e.EpCleanup("default", "group", "g1", ""); code != http.StatusConflict || len(np.Take()) != 0 {
		t.Fatalf("cleanup of an empty group: %d %q", code, body)
	}

	// net: the network's endpoints only.
	code, body = e.EpCleanup("default", "net", "n2", "")
	if want := "Received request to cleanup Network with ID: n2\nn2.default-e3 host2\nn2.default-web-4 host1\n"; code != http.StatusOK || body != want {
		t.Fatalf("net cleanup: %d %q", code, body)
	}
	if got, want := np.Take(), []string{
		"DELETE 127.0.0.1 /debug/reclaimEndpoint/n2.default-web-4", "DELETE 127.0.0.2 /debug/reclaimEndpoint/n2.default-e3",
	}; !slices.Equal(got, want) {
		t.Fatalf("reclaims %v, want %v", got, want)
	}
	if ni := e.NetOper("default", "n2"); ni.Oper.NumEndpoints != 0 || ni.Oper.AllocatedAddressesCount != 0 || ni.Oper.AllocatedIPAddresses != "" {
		t.Fatalf("network n2 after cleanup: %+v", ni.Oper)
	}
	if code, _ := e.EpCleanup("default", "net", "n2", ""); code != http.StatusConflict {
		t.Fatalf("cleanup of an empty network: %d", code)
	}

	// ep: the exact endpoint id, or the exact state id, in the tenant.
	e.CreateEndpoint(mastertest.EPBody("t2", "n3", "", "web-6", "host2", "", ""))
	if code, body := e.EpCleanup("t2", "ep", "web-5", ""); code != http.StatusOK || body != "Received request to cleanup Endpoint with ID: web-5\nn3.t2-web-5 host2\n" {
		t.Fatalf("ep cleanup: %d %q", code, body)
	}
	if code, _ := e.EpCleanup("t2", "ep", "n3.t2-web-6", ""); code != http.StatusOK {
		t.Fatalf("ep cleanup by state id: %d", code)
	}
	if got, want := np.Take(), []string{
		"DELETE 127.0.0.2 /debug/reclaimEndpoint/n3.t2-web-5", "DELETE 127.0.0.2 /debug/reclaimEndpoint/n3.t2-web-6",
	}; !slices.Equal(got, want) {
		t.Fatalf("reclaims %v, want %v", got, want)
	}

	// A failed reclaim (netplugin error, host without netplugin.vtep): the
	// endpoint is deleted all the same, the answer is a 500 naming them.
	np.FailPath("/debug/reclaimEndpoint/n1.default-e7")
	e.CreateEndpoint(mastertest.EPBody("default", "n1", "", "e7", "host1", "", ""))
	e.CreateEndpoint(mastertest.EPBody("default", "n1", "", "e8", "host3", "", ""))
	code, body = e.EpCleanup("default", "net", "n1", "")
	if code != http.StatusInternalServerError || !strings.Contains(body, `reclaim endpoint "n1.default-e7"`) || !strings.Contains(body, `reclaim endpoint "n1.default-e8"`) {
		t.Fatalf("cleanup with failed reclaims: %d %q", code, body)
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
