package controllers_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/contiv/netplugin/netmaster/master"
	"github.com/contiv/netplugin/netmaster/master/mastertest"
	"github.com/contiv/netplugin/objdb/objdbtest"
)

// restMethods and restRoutes span the netmaster's REST surface; "%k" is
// replaced by the fuzzed key, used as is (it may hold escapes, "/", "..").
var (
	restMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch}
	restRoutes  = []string{
		"/api/v1/tenants/%k/", "/api/v1/networks/%k/", "/api/v1/endpointGroups/%k/", "/api/v1/globals/%k/",
		"/api/v1/netprofiles/%k/", "/api/v1/policys/%k/", "/api/v1/rules/%k/", "/api/v1/appProfiles/%k/",
		"/api/v1/extContractsGroups/%k/", "/api/v1/serviceLBs/%k/", "/api/v1/Bgps/%k/", "/api/v1/aciGws/%k/",
		"/api/v1/volumes/%k/", "/api/v1/inspect/networks/%k/", "/api/v1/inspect/endpoints/%k/",
		"/api/v1/inspect/endpointGroups/%k/", "/api/v1/inspect/tenants/%k/", "/api/v1/inspect/globals/%k/",
		"/api/v1/inspect/serviceLBs/%k/", "/api/v1/%k/",
		"/plugin/allocAddress", "/plugin/releaseAddress", "/plugin/createEndpoint", "/plugin/deleteEndpoint",
		"/plugin/updateEndpoint", "/service/%k", "/services", "/debug/epcleanup/tenant/%k/net/%k", "%k",
	}
)

// FuzzREST sends random requests (method, route, key, body) to one
// netmaster leadership term over the test etcd: no request may panic the
// handlers, and every answer other than 2xx must leave the store
// byte-identical (docs/rest-errors.md). Successful requests change the
// state the next inputs meet.
func FuzzREST(f *testing.F) {
	for _, s := range []struct {
		m, r      uint8
		key, body string
	}{
		{1, 0, "t1", `{"tenantName":"t1"}`},
		{1, 1, "t1:n1", `{"tenantName":"t1","networkName":"n1","encap":"vlan","subnet":"10.1.1.0/24","gateway":"10.1.1.1"}`},
		{1, 1, "default:n2", `{"tenantName":"default","networkName":"n2","encap":"vxlan","subnet":"10.2.1.10-10.2.1.20/24","ipv6Subnet":"2001:db8::/64","ipv6Gateway":"2001:db8::1"}`},
		{1, 2, "default:g1", `{"tenantName":"default","groupName":"g1","networkName":"n2","ipPool":"10.2.1.12-10.2.1.14"}`},
		{1, 22, "", `{"TenantName":"default","NetworkName":"n2","ConfigEP":{"Container":"c1","Host":"h","ServiceName":"g1"}}`},
		{1, 20, "", `{"NetworkID":"n2.default","PreferredIPv4Address":"10.2.1.15"}`},
		{1, 21, "", `{"NetworkID":"n2.default","IPv4Address":"10.2.1.15"}`},
		{1, 23, "", `{"TenantName":"default","NetworkName":"n2","EndpointID":"c1"}`},
		{1, 24, "", `{"Event":"start","Tenant":"default","Network":"n2","EndpointID":"c1","ContainerID":"x"}`},
		{1, 3, "global", `{"name":"global","networkInfraType":"default","vlans":"100-1","vxlans":"1-10000","fwdMode":"bridge"}`},
		{3, 0, "t1%2F..%2Fdefault", ""},
		{3, 0, "..", ""},
		{0, 28, "/api/v1/tenants/x/../default/", ""},
		{1, 0, "t\xff", "{\"tenantName\":\"t\xff\"}"},
		{1, 9, "default:s1", `{"tenantName":"default","serviceName":"s1","networkName":"n2","ports":["80:8080:TCP"],"selectors":["a=b"]}`},
		{1, 6, "default:p:1", `{"tenantName":"default","policyName":"p","ruleId":"1","direction":"in","action":"allow"}`},
		{3, 1, "default:n2", ""},
		{0, 13, "default:n2", ""},
		{2, 27, "default", ""},
	} {
		f.Add(s.m, s.r, s.key, []byte(s.body))
	}
	root := objdbtest.UniqueRoot(f)
	st := mastertest.OpenStore(f, etcdEndpoint, root)
	ctx, cancel := context.WithCancel(context.Background())
	f.Cleanup(cancel)
	cfg := mastertest.DefaultConfig()
	cfg.NetpluginPort = 1 // agents are never reachable: nothing leaves loopback
	h, err := master.New(cfg, mastertest.QuietLog()).Start(ctx, st)
	if err != nil {
		f.Fatalf("start leader: %v", err)
	}
	dump := func(t *testing.T) map[string]string {
		kvs, err := st.List(mastertest.Ctx(t, 10e9), "")
		if err != nil {
			t.Fatalf("dump store: %v", err)
		}
		out := make(map[string]string, len(kvs))
		for _, kv := range kvs {
			out[kv.Key] = string(kv.Value)
		}
		return out
	}
	f.Fuzz(func(t *testing.T, m, r uint8, key string, body []byte) {
		method := restMethods[int(m)%len(restMethods)]
		path := strings.ReplaceAll(restRoutes[int(r)%len(restRoutes)], "%k", key)
		req, err := http.NewRequest(method, "http://netmaster"+path, bytes.NewReader(body))
		if err != nil || !strings.HasPrefix(req.URL.Path, "/") || req.URL.Host != "netmaster" {
			return // not a request a client could send
		}
		if strings.HasPrefix(path, "/plugin/") {
			req.Header.Set("Content-Type", "application/json")
		}
		before := dump(t)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 200 && rec.Code < 300 {
			return
		}
		if d := mastertest.DiffDumps(before, dump(t)); d != "" {
			t.Fatalf("%s %s %q: answered %d %q but changed the store:\n%s", method, path, body, rec.Code, rec.Body.String(), d)
		}
	})
}
