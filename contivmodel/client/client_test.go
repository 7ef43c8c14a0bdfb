package client_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	cm "github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/contivmodel/client"
	"github.com/contiv/netplugin/contivmodel/modeltest"
	"github.com/contiv/netplugin/objdb/objdbtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, modeltest.LeakOptions()...) }

func newClient(t *testing.T, url string) *client.ContivClient {
	t.Helper()
	c, err := client.NewContivClient(url)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func js(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// ops are one type's client methods, bound to the test object's key.
type ops[T, I any] struct {
	post    func(*T) error
	get     func() (*T, error)
	list    func() (*[]*T, error)
	inspect func() (*I, error)
	del     func() error
}

// roundTrip posts obj, reads it back by get, list and inspect, deletes it
// and checks that it is gone.
func roundTrip[T, I any](t *testing.T, typ, key string, obj *T, o ops[T, I]) {
	t.Helper()
	if err := o.post(obj); err != nil {
		t.Fatalf("%s post: %v", typ, err)
	}
	want := *obj
	reflect.ValueOf(&want).Elem().FieldByName("Key").SetString(key)
	got, err := o.get()
	if err != nil || js(t, got) != js(t, &want) {
		t.Fatalf("%s get: %v\n got %s\nwant %s", typ, err, js(t, got), js(t, &want))
	}
	all, err := o.list()
	if err != nil || len(*all) != 1 || js(t, (*all)[0]) != js(t, &want) {
		t.Fatalf("%s list: %v %s", typ, err, js(t, all))
	}
	insp, err := o.inspect()
	if err != nil {
		t.Fatalf("%s inspect: %v", typ, err)
	}
	if cfg := reflect.ValueOf(insp).Elem().FieldByName("Config").Interface(); js(t, cfg) != js(t, &want) {
		t.Fatalf("%s inspect config %s", typ, js(t, cfg))
	}
	if err := o.del(); err != nil {
		t.Fatalf("%s delete: %v", typ, err)
	}
	if _, err := o.get(); err == nil || err.Error() != typ+" not found\n" {
		t.Fatalf("%s get after delete: %v", typ, err)
	}
	if err := o.del(); err == nil || err.Error() != typ+" not found\n" {
		t.Fatalf("%s delete twice: %v", typ, err)
	}
}

// TestClientRoundTrips drives every type's methods against the real
// router with the no-op controller.
func TestClientRoundTrips(t *testing.T) {
	srv := modeltest.Start(t, modeltest.EtcdStore(t, objdbtest.StartEmbeddedEtcd(t)), cm.NoopControllers())
	c := newClient(t, srv.URL)

	roundTrip(t, "aciGw", "aciGw", &client.AciGw{Name: "aciGw", EnforcePolicies: "yes", IncludeCommonTenant: "no", PhysicalDomain: "dom"},
		ops[client.AciGw, client.AciGwInspect]{c.AciGwPost, func() (*client.AciGw, error) { return c.AciGwGet("aciGw") }, c.AciGwList,
			func() (*client.AciGwInspect, error) { return c.AciGwInspect("aciGw") }, func() error { return c.AciGwDelete("aciGw") }})
	roundTrip(t, "appProfile", "t:ap", &client.AppProfile{TenantName: "t", AppProfileName: "ap", EndpointGroups: []string{"g1", "g2"}},
		ops[client.AppProfile, client.AppProfileInspect]{c.AppProfilePost, func() (*client.AppProfile, error) { return c.AppProfileGet("t", "ap") },
			c.AppProfileList, func() (*client.AppProfileInspect, error) { return c.AppProfileInspect("t", "ap") },
			func() error { return c.AppProfileDelete("t", "ap") }})
	roundTrip(t, "Bgp", "hostA", &client.Bgp{Hostname: "hostA", As: "65001", Neighbor: "16.1.2.3", NeighborAs: "65002", Routerip: "65.1.1.1/24"},
		ops[client.Bgp, client.BgpInspect]{c.BgpPost, func() (*client.Bgp, error) { return c.BgpGet("hostA") }, c.BgpList,
			func() (*client.BgpInspect, error) { return c.BgpInspect("hostA") }, func() error { return c.BgpDelete("hostA") }})
	roundTrip(t, "endpointGroup", "t:g", &client.EndpointGroup{TenantName: "t", GroupName: "g", NetworkName: "n", Policies: []string{"p"}},
		ops[client.EndpointGroup, client.EndpointGroupInspect]{c.EndpointGroupPost,
			func() (*client.EndpointGroup, error) { return c.EndpointGroupGet("t", "g") }, c.EndpointGroupList,
			func() (*client.EndpointGroupInspect, error) { return c.EndpointGroupInspect("t", "g") },
			func() error { return c.EndpointGroupDelete("t", "g") }})
	roundTrip(t, "extContractsGroup", "t:ec", &client.ExtContractsGroup{TenantName: "t", ContractsGroupName: "ec", ContractsType: "provided", Contracts: []string{"a", "b"}},
		ops[client.ExtContractsGroup, client.ExtContractsGroupInspect]{c.ExtContractsGroupPost,
			func() (*client.ExtContractsGroup, error) { return c.ExtContractsGroupGet("t", "ec") }, c.ExtContractsGroupList,
			func() (*client.ExtContractsGroupInspect, error) { return c.ExtContractsGroupInspect("t", "ec") },
			func() error { return c.ExtContractsGroupDelete("t", "ec") }})
	roundTrip(t, "global", "global", &client.Global{Name: "global", FwdMode: "bridge", PvtSubnet: "172.19.0.0/16", Vlans: "1-4094", Vxlans: "1-10000"},
		ops[client.Global, client.GlobalInspect]{c.GlobalPost, func() (*client.Global, error) { return c.GlobalGet("global") }, c.GlobalList,
			func() (*client.GlobalInspect, error) { return c.GlobalInspect("global") }, func() error { return c.GlobalDelete("global") }})
	roundTrip(t, "netprofile", "t:np", &client.Netprofile{TenantName: "t", ProfileName: "np", DSCP: 5, Bandwidth: "2gbps", Burst: 1500},
		ops[client.Netprofile, client.NetprofileInspect]{c.NetprofilePost, func() (*client.Netprofile, error) { return c.NetprofileGet("t", "np") },
			c.NetprofileList, func() (*client.NetprofileInspect, error) { return c.NetprofileInspect("t", "np") },
			func() error { return c.NetprofileDelete("t", "np") }})
	roundTrip(t, "network", "t:n", &client.Network{TenantName: "t", NetworkName: "n", Encap: "vlan", Subnet: "10.1.1.0/24", NwType: "data", PktTag: 10},
		ops[client.Network, client.NetworkInspect]{c.NetworkPost, func() (*client.Network, error) { return c.NetworkGet("t", "n") },
			c.NetworkList, func() (*client.NetworkInspect, error) { return c.NetworkInspect("t", "n") },
			func() error { return c.NetworkDelete("t", "n") }})
	roundTrip(t, "policy", "t:p", &client.Policy{TenantName: "t", PolicyName: "p"},
		ops[client.Policy, client.PolicyInspect]{c.PolicyPost, func() (*client.Policy, error) { return c.PolicyGet("t", "p") },
			c.PolicyList, func() (*client.PolicyInspect, error) { return c.PolicyInspect("t", "p") },
			func() error { return c.PolicyDelete("t", "p") }})
	roundTrip(t, "rule", "t:p:1", &client.Rule{TenantName: "t", PolicyName: "p", RuleID: "1", Action: "allow", Direction: "in", Priority: 1, Port: 80, Protocol: "tcp"},
		ops[client.Rule, client.RuleInspect]{c.RulePost, func() (*client.Rule, error) { return c.RuleGet("t", "p", "1") },
			c.RuleList, func() (*client.RuleInspect, error) { return c.RuleInspect("t", "p", "1") },
			func() error { return c.RuleDelete("t", "p", "1") }})
	roundTrip(t, "serviceLB", "t:s", &client.ServiceLB{TenantName: "t", ServiceName: "s", NetworkName: "n", Ports: []string{"80:8080:TCP"}, Selectors: []string{"a=b"}},
		ops[client.ServiceLB, client.ServiceLBInspect]{c.ServiceLBPost, func() (*client.ServiceLB, error) { return c.ServiceLBGet("t", "s") },
			c.ServiceLBList, func() (*client.ServiceLBInspect, error) { return c.ServiceLBInspect("t", "s") },
			func() error { return c.ServiceLBDelete("t", "s") }})
	roundTrip(t, "tenant", "t", &client.Tenant{TenantName: "t", DefaultNetwork: "n"},
		ops[client.Tenant, client.TenantInspect]{c.TenantPost, func() (*client.Tenant, error) { return c.TenantGet("t") },
			c.TenantList, func() (*client.TenantInspect, error) { return c.TenantInspect("t") },
			func() error { return c.TenantDelete("t") }})

	// volume and volumeProfile have no controller.
	if err := c.VolumePost(&client.Volume{TenantName: "t", VolumeName: "v"}); err == nil || err.Error() != "Invalid object type\n" {
		t.Errorf("volume post: %v", err)
	}
	if err := c.VolumeProfilePost(&client.VolumeProfile{TenantName: "t", VolumeProfileName: "v"}); err == nil || err.Error() != "Invalid object type\n" {
		t.Errorf("volumeProfile post: %v", err)
	}
	if l, err := c.VolumeList(); err != nil || len(*l) != 0 {
		t.Errorf("volume list: %v %v", l, err)
	}
	if l, err := c.VolumeProfileList(); err != nil || len(*l) != 0 {
		t.Errorf("volumeProfile list: %v %v", l, err)
	}
	for name, err := range map[string]error{
		"volume get":            second(c.VolumeGet("t", "v")),
		"volume inspect":        second(c.VolumeInspect("t", "v")),
		"volume delete":         c.VolumeDelete("t", "v"),
		"volumeProfile get":     second(c.VolumeProfileGet("t", "v")),
		"volumeProfile inspect": second(c.VolumeProfileInspect("t", "v")),
		"volumeProfile delete":  c.VolumeProfileDelete("t", "v"),
	} {
		typ, _, _ := strings.Cut(name, " ")
		if err == nil || err.Error() != typ+" not found\n" {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := c.EndpointInspect("abc"); err == nil || err.Error() != "endpoint not found\n" {
		t.Errorf("endpoint inspect: %v", err)
	}
	if _, err := c.TenantGet("bad/name"); err == nil || err.Error() != "Page not found!" {
		t.Errorf("unroutable get: %v", err)
	}
	if err := c.TenantPost(&client.Tenant{TenantName: "-bad"}); err == nil || err.Error() != "tenantName string invalid format\n" {
		t.Errorf("invalid post: %v", err)
	}
}

func second[T any](_ T, err error) error { return err }

// recorded is one request seen by the fake server.
type recorded struct {
	method, path, contentType, token, body string
}

type fakeServer struct {
	mu     sync.Mutex
	reqs   []recorded
	status int
	body   string
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.reqs = append(f.reqs, recorded{r.Method, r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get("X-Auth-Token"), string(b)})
	status, body := f.status, f.body
	f.mu.Unlock()
	w.WriteHeader(status)
	io.WriteString(w, body)
}

func (f *fakeServer) last() recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reqs[len(f.reqs)-1]
}

// TestClientRequests checks paths and bodies against the original client's
// (docs/netctl.md §3, §6).
func TestClientRequests(t *testing.T) {
	f := &fakeServer{status: 200, body: "{}"}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c := newClient(t, srv.URL)
	for _, tc := range []struct {
		call func() error
		want recorded
	}{
		{func() error { return c.TenantPost(&client.Tenant{TenantName: "t"}) },
			recorded{"POST", "/api/v1/tenants/t/", "", "", `{"tenantName":"t","link-sets":{}}`}},
		{func() error {
			return c.NetworkPost(&client.Network{TenantName: "spectest", NetworkName: "n1", Encap: "vxlan", NwType: "data", Subnet: "10.1.1.0/24"})
		}, recorded{"POST", "/api/v1/networks/spectest:n1/", "", "",
			`{"encap":"vxlan","networkName":"n1","nwType":"data","subnet":"10.1.1.0/24","tenantName":"spectest","link-sets":{},"links":{"Tenant":{}}}`}},
		{func() error {
			return c.BgpPost(&client.Bgp{As: "65002", Hostname: "h1", Neighbor: "50.1.1.2", NeighborAs: "500", Routerip: "50.1.1.1/24"})
		}, recorded{"POST", "/api/v1/Bgps/h1/", "", "", `{"as":"65002","hostname":"h1","neighbor":"50.1.1.2","neighbor-as":"500","routerip":"50.1.1.1/24"}`}},
		{func() error {
			return c.RulePost(&client.Rule{Action: "allow", Direction: "in", PolicyName: "p1", Priority: 1, RuleID: "r1", TenantName: "spectest"})
		}, recorded{"POST", "/api/v1/rules/spectest:p1:r1/", "", "",
			`{"action":"allow","direction":"in","policyName":"p1","priority":1,"ruleId":"r1","tenantName":"spectest","link-sets":{},"links":{"MatchEndpointGroup":{}}}`}},
		{func() error { return c.NetworkDelete("t", "n") }, recorded{"DELETE", "/api/v1/networks/t:n/", "", "", ""}},
		{func() error { _, _ = c.TenantList(); return nil }, recorded{"GET", "/api/v1/tenants/", "", "", ""}},
		{func() error { return second(c.RuleGet("t", "p", "1")) }, recorded{"GET", "/api/v1/rules/t:p:1/", "", "", ""}},
		{func() error { return second(c.ServiceLBInspect("t", "s")) }, recorded{"GET", "/api/v1/inspect/serviceLBs/t:s/", "", "", ""}},
		{func() error { return second(c.EndpointInspect("abc")) }, recorded{"GET", "/api/v1/inspect/endpoints/abc/", "", "", ""}},
		{func() error { return second(c.GlobalGet("global")) }, recorded{"GET", "/api/v1/globals/global/", "", "", ""}},
	} {
		if err := tc.call(); err != nil {
			t.Errorf("%+v: %v", tc.want, err)
			continue
		}
		if got := f.last(); got != tc.want {
			t.Errorf("request\n got %+v\nwant %+v", got, tc.want)
		}
	}
}

// TestClientErrors checks the status mapping of docs/rest-api.md §1.7.
func TestClientErrors(t *testing.T) {
	f := &fakeServer{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c := newClient(t, srv.URL)
	for _, tc := range []struct {
		status            int
		body              string
		get, post, delete string // expected error texts; "" = success
	}{
		{500, "network not found\n", "network not found\n", "network not found\n", "network not found\n"},
		{500, "", "", "", ""}, // an empty 500 body is an error with empty text
		{404, notFound, "Page not found!", "Page not found!", ""},
		{403, "denied", "Access denied!", "Access denied!", "Access denied!"},
		{400, "x", "x", "x", "x"},
		{400, "", "400 Bad Request", "400 Bad Request", "400 Bad Request"},
		{409, "network not found\n", "network not found\n", "network not found\n", "network not found\n"},
		{404, "network not found\n", "network not found\n", "network not found\n", ""},
		{413, "request body exceeds 4194304 bytes\n", "request body exceeds 4194304 bytes\n", "request body exceeds 4194304 bytes\n", "request body exceeds 4194304 bytes\n"},
		{201, "{}", "201 Created", "201 Created", "201 Created"},
		{503, "", "503 Service Unavailable", "503 Service Unavailable", "503 Service Unavailable"},
		{200, "nope", "invalid character 'o' in literal null (expecting 'u')", "", ""},
	} {
		f.mu.Lock()
		f.status, f.body = tc.status, tc.body
		f.mu.Unlock()
		check := func(op string, err error, want string) {
			t.Helper()
			if tc.status == 500 && tc.body == "" {
				if err == nil {
					t.Errorf("%d %s: no error", tc.status, op)
				}
				return
			}
			switch {
			case want == "" && err != nil:
				t.Errorf("%d %s: unexpected error %v", tc.status, op, err)
			case want != "" && (err == nil || err.Error() != want):
				t.Errorf("%d %s: error %v, want %q", tc.status, op, err, want)
			}
		}
		check("get", second(c.NetworkGet("t", "n")), tc.get)
		check("post", c.NetworkPost(&client.Network{TenantName: "t", NetworkName: "n"}), tc.post)
		check("delete", c.NetworkDelete("t", "n"), tc.delete)
	}
	var he *client.HTTPError
	f.mu.Lock()
	f.status, f.body = 500, "boom\n"
	f.mu.Unlock()
	if err := c.TenantDelete("t"); !asHTTPError(err, &he) || he.StatusCode != 500 || string(he.Body) != "boom\n" {
		t.Errorf("HTTPError: %#v", err)
	}

	dead := newClient(t, "http://127.0.0.1:1")
	_, err := dead.TenantList()
	if err == nil || !strings.HasPrefix(err.Error(), `Get "http://127.0.0.1:1/api/v1/tenants/": dial tcp 127.0.0.1:1: connect: connection refused`) {
		t.Errorf("transport error: %v", err)
	}
}

const notFound = "404 page not found\n"

func asHTTPError(err error, target **client.HTTPError) bool {
	e, ok := err.(*client.HTTPError)
	*target = e
	return ok
}

func TestClientSetup(t *testing.T) {
	for _, u := range []string{"127.0.0.1:9999", "netmaster:9999", "ftp://x", ""} {
		if _, err := client.NewContivClient(u); err == nil {
			t.Errorf("NewContivClient(%q) accepted", u)
		}
	}
	c := newClient(t, "http://netmaster:9999")
	if err := c.SetAuthToken("tok"); err == nil || err.Error() != "setting auth token requires a https auth_proxy URL" {
		t.Errorf("SetAuthToken on http: %v", err)
	}

	f := &fakeServer{status: 200, body: `{"token":"TOKEN123"}`}
	srv := httptest.NewTLSServer(f)
	t.Cleanup(srv.Close)
	c = newClient(t, srv.URL)
	if err := c.SetHttpClient(srv.Client()); err != nil {
		t.Fatal(err)
	}
	if err := c.SetAuthToken("TOKEN123"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TenantList(); err == nil {
		t.Error("decoding an object into a list succeeded")
	}
	if got := f.last(); got.token != "TOKEN123" {
		t.Errorf("token header %+v", got)
	}
	resp, body, err := c.Login("admin", "secret")
	if err != nil || resp.StatusCode != 200 || string(body) != `{"token":"TOKEN123"}` {
		t.Fatalf("login: %v %v %q", resp, err, body)
	}
	if got := f.last(); got.method != "POST" || got.path != "/api/v1/auth_proxy/login/" || got.contentType != "application/json" ||
		got.body != `{"username":"admin","password":"secret"}` {
		t.Errorf("login request %+v", got)
	}
}
