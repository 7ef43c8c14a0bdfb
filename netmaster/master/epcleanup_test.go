package master_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contiv/netplugin/netmaster/master/mastertest"
	"github.com/contiv/netplugin/objdb"
)

// fakeNetplugins serves netplugin's DELETE /debug/reclaimEndpoint/{id} and
// GET /inspect/bgp on one port of several loopback addresses (one per
// simulated host) and records "<ip> <path>" of every request. Paths in
// fail answer 500.
type fakeNetplugins struct {
	port int
	fail map[string]bool
	// bgp is the /inspect/bgp answer of each address (absent: 404).
	bgp map[string]fakeAnswer

	mu   sync.Mutex
	reqs []string
}

func startFakeNetplugins(t *testing.T, ips ...string) *fakeNetplugins {
	t.Helper()
	var lns []net.Listener
	for attempt := 0; ; attempt++ {
		var err error
		if lns, err = listenAll(ips, 0); err == nil {
			break
		}
		if attempt == 20 {
			t.Fatalf("listen on %v: %v", ips, err)
		}
	}
	f := &fakeNetplugins{port: lns[0].Addr().(*net.TCPAddr).Port, fail: map[string]bool{}, bgp: map[string]fakeAnswer{}}
	srv := &http.Server{Handler: http.HandlerFunc(f.serve), ReadHeaderTimeout: 10 * time.Second}
	var wg sync.WaitGroup
	for _, ln := range lns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				t.Errorf("fake netplugin: %v", err)
			}
		}()
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		wg.Wait()
	})
	return f
}

func (f *fakeNetplugins) serve(w http.ResponseWriter, r *http.Request) {
	host, _, _ := net.SplitHostPort(r.Host)
	f.mu.Lock()
	f.reqs = append(f.reqs, r.Method+" "+host+" "+r.URL.EscapedPath())
	fail := f.fail[r.URL.Path]
	bgp, bgpOK := f.bgp[host]
	f.mu.Unlock()
	if r.Method == http.MethodGet && r.URL.Path == "/inspect/bgp" {
		if !bgpOK {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(bgp.code)
		_, _ = w.Write([]byte(bgp.body))
		return
	}
	if fail || r.Method != http.MethodDelete || !strings.HasPrefix(r.URL.Path, "/debug/reclaimEndpoint/") {
		http.Error(w, "Error deleting endpoint: no such endpoint", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte("null\n"))
}

// fakeAnswer is a canned HTTP answer.
type fakeAnswer struct {
	code int
	body string
}

// setBgp sets the /inspect/bgp answer of the host at ip.
func (f *fakeNetplugins) setBgp(ip string, a fakeAnswer) {
	f.mu.Lock()
	f.bgp[ip] = a
	f.mu.Unlock()
}

func (f *fakeNetplugins) failPath(p string) {
	f.mu.Lock()
	f.fail[p] = true
	f.mu.Unlock()
}

// take returns the recorded requests, sorted, and forgets them.
func (f *fakeNetplugins) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.reqs
	f.reqs = nil
	slices.Sort(out)
	return out
}

// registerVtep registers a host's netplugin.vtep service.
func (e *env) registerVtep(ip, hostname string) {
	e.T.Helper()
	e.register(objdb.ServiceInfo{ServiceName: "netplugin.vtep", Role: "netplugin", TTL: 10, HostAddr: ip, Port: 4789, Hostname: hostname})
}

// cleanup sends a /debug/epcleanup request; it must answer 200 text/plain.
func (e *env) cleanup(tenant, category, id string) string {
	e.T.Helper()
	code, body, hdr := mastertest.DoReq(e.T, e.Srv.URL, "DELETE", "/debug/epcleanup/tenant/"+tenant+"/"+category+"/"+id, "")
	if code != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain") {
		e.T.Fatalf("epcleanup %s/%s/%s: %d %q %q", tenant, category, id, code, hdr.Get("Content-Type"), body)
	}
	return body
}

// epKeys lists the endpoint state ids.
func (e *env) epKeys() []string {
	e.T.Helper()
	var out []string
	for k := range e.Dump() {
		if id, ok := strings.CutPrefix(k, "state/eps/"); ok {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// DELETE /debug/epcleanup/tenant/{tenant}/{category}/{id} (docs/daemons.md
// §4.10.4, docs/rest-api.md §3.10): the selected endpoints are deleted as by
// /plugin/deleteEndpoint and their hosts' netplugins asked to reclaim them;
// every failure answers 200 with an empty body.
func TestEpCleanup(t *testing.T) {
	np := startFakeNetplugins(t, "127.0.0.1", "127.0.0.2")
	cfg := mastertest.DefaultConfig()
	cfg.NetpluginPort = np.port
	e := newEnvCfg(t, cfg)
	e.registerVtep("127.0.0.1", "host1")
	e.registerVtep("127.0.0.2", "host2")
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
		if body := e.cleanup(c[0], c[1], c[2]); body != "" {
			t.Fatalf("epcleanup %v: body %q", c, body)
		}
	}
	if d := mastertest.DiffDumps(before, e.Dump()); d != "" {
		t.Fatalf("refused cleanups changed the store:\n%s", d)
	}
	if got := np.take(); len(got) != 0 {
		t.Fatalf("refused cleanups asked netplugins: %v", got)
	}

	// group: by the group name in every tenant; addresses and counts given
	// back (the group pool's address too).
	if body := e.cleanup("default", "group", "g1"); body != "Received request to cleanup EPG with ID: g1\n" {
		t.Fatalf("group cleanup body %q", body)
	}
	if got, want := np.take(), []string{
		"DELETE 127.0.0.1 /debug/reclaimEndpoint/n1.default-e1", "DELETE 127.0.0.2 /debug/reclaimEndpoint/n3.t2-web-5",
	}; !slices.Equal(got, want) {
		t.Fatalf("reclaims %v, want %v", got, want)
	}
	if got, want := e.epKeys(), []string{"n1.default-e2", "n2.default-e3", "n2.default-web-4"}; !slices.Equal(got, want) {
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
	if body := e.cleanup("default", "group", "g1"); body != "" || len(np.take()) != 0 {
		t.Fatalf("cleanup of an empty group: %q", body)
	}

	// net: the network's endpoints only.
	if body := e.cleanup("default", "net", "n2"); body != "Received request to cleanup Network with ID: n2\n" {
		t.Fatalf("net cleanup body %q", body)
	}
	if got, want := np.take(), []string{
		"DELETE 127.0.0.1 /debug/reclaimEndpoint/n2.default-web-4", "DELETE 127.0.0.2 /debug/reclaimEndpoint/n2.default-e3",
	}; !slices.Equal(got, want) {
		t.Fatalf("reclaims %v, want %v", got, want)
	}
	if ni := e.NetOper("default", "n2"); ni.Oper.NumEndpoints != 0 || ni.Oper.AllocatedAddressesCount != 0 || ni.Oper.AllocatedIPAddresses != "" {
		t.Fatalf("network n2 after cleanup: %+v", ni.Oper)
	}
	if body := e.cleanup("default", "net", "n2"); body != "" {
		t.Fatalf("cleanup of an empty network: %q", body)
	}

	// ep: endpoint ids containing the id, in any tenant.
	e.CreateEndpoint(mastertest.EPBody("t2", "n3", "", "web-6", "host2", "", ""))
	if body := e.cleanup("default", "ep", "web-"); body != "Received request to cleanup Endpoint with ID: web-\n" {
		t.Fatalf("ep cleanup body %q", body)
	}
	if got, want := np.take(), []string{"DELETE 127.0.0.2 /debug/reclaimEndpoint/n3.t2-web-6"}; !slices.Equal(got, want) {
		t.Fatalf("reclaims %v, want %v", got, want)
	}

	// A failed reclaim (netplugin error, host without netplugin.vtep): the
	// endpoint is deleted all the same, the answer is an empty 200.
	np.failPath("/debug/reclaimEndpoint/n1.default-e7")
	e.CreateEndpoint(mastertest.EPBody("default", "n1", "", "e7", "host1", "", ""))
	e.CreateEndpoint(mastertest.EPBody("default", "n1", "", "e8", "host3", "", ""))
	if body := e.cleanup("default", "net", "n1"); body != "" {
		t.Fatalf("cleanup with failed reclaims: body %q", body)
	}
	if got, want := np.take(), []string{
		"DELETE 127.0.0.1 /debug/reclaimEndpoint/n1.default-e2", "DELETE 127.0.0.1 /debug/reclaimEndpoint/n1.default-e7",
	}; !slices.Equal(got, want) {
		t.Fatalf("reclaims %v, want %v", got, want)
	}
	if got := e.epKeys(); len(got) != 0 {
		t.Fatalf("endpoints left: %v", got)
	}
	if ni := e.NetOper("default", "n1"); ni.Oper.NumEndpoints != 0 || ni.Oper.AllocatedAddressesCount != 0 ||
		ni.Oper.AllocatedIPAddresses != "198.18.50.10-198.18.50.19, 198.18.50.254" {
		t.Fatalf("network n1 after cleanup: %+v", ni.Oper)
	}
}
