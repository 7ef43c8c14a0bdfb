package contivmodel_test

import (
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/gorilla/mux"

	cm "github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/contivmodel/modeltest"
)

const notFoundBody = "404 page not found\n"

func pluginSetup(router *mux.Router) {
	cm.HandlePlugin(router, "/plugin/allocAddress", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "%q\n", b)
	}))
	router.Handle("/version", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, `{"Version":"test"}`)
	})).Methods(http.MethodGet)
}

// TestPathRules covers docs/rest-api.md §1.3.
func testPathRules(t *testing.T, newStore storeFunc) {
	srv := modeltest.StartWith(t, newStore(t), cm.NoopControllers(), pluginSetup)
	expectOK(t, "tenant", srv.Do(t, http.MethodPost, "/api/v1/tenants/t1/", `{"tenantName":"t1"}`))
	expectOK(t, "network", srv.Do(t, http.MethodPost, "/api/v1/networks/t1:n1/",
		`{"tenantName":"t1","networkName":"n1","encap":"vlan","subnet":"10.1.1.0/24"}`))

	for _, tc := range []struct {
		method, path, body string
		header             []string
		status             int
		body400            string
	}{
		// Trailing slash mandatory, no redirect.
		{method: "GET", path: "/api/v1/networks", status: 404},
		{method: "GET", path: "/api/v1/networks/t1:n1", status: 404},
		{method: "GET", path: "/api/v1/inspect/networks/t1:n1", status: 404},
		{method: "POST", path: "/api/v1/tenants/t2", body: `{"tenantName":"t2"}`, status: 404},
		{method: "DELETE", path: "/api/v1/tenants/t1", status: 404},
		{method: "GET", path: "/api/v1/networks/t1:n1/", status: 200},
		{method: "GET", path: "/api/v1/networks/?x=1", status: 200},
		// The key segment is percent-decoded; it may not hold a "/" or
		// be a relative path element (docs/rest-errors.md).
		{method: "GET", path: "/api/v1/tenants/t%31/", status: 200},
		{method: "GET", path: "/api/v1/networks/t1%3An1/", status: 200},
		{method: "GET", path: "/api/v1/tenants/a%2Fb/", status: 400, body400: "invalid key \"a/b\" in URL: contains \"/\"\n"},
		{method: "DELETE", path: "/api/v1/tenants/t1%2F..%2Fvictim/", status: 400, body400: "invalid key \"t1/../victim\" in URL: contains \"/\"\n"},
		{method: "GET", path: "/api/v1/tenants/%2E%2E/", status: 400, body400: "invalid key \"..\" in URL: a relative path element\n"},
		{method: "DELETE", path: "/api/v1/tenants/../", status: 400, body400: "invalid key \"..\" in URL: a relative path element\n"},
		{method: "GET", path: "/api/v1/tenants/./", status: 400, body400: "invalid key \".\" in URL: a relative path element\n"},
		{method: "GET", path: "/api/v1/tenants/a%00b/", status: 400, body400: "invalid key \"a\\x00b\" in URL: contains a control character\n"},
		{method: "GET", path: "/api/v1/tenants/a%FFb/", status: 400, body400: "key \"a\\xffb\" in URL is not valid UTF-8\n"},
		// Paths are case-sensitive; plurals are irregular.
		{method: "GET", path: "/api/v1/Tenants/", status: 404},
		{method: "GET", path: "/api/v1/bgps/", status: 404},
		{method: "GET", path: "/api/v1/Bgps/", status: 200},
		{method: "GET", path: "/api/v1/policies/", status: 404},
		{method: "GET", path: "/api/v1/policys/", status: 200},
		{method: "GET", path: "/API/v1/tenants/", status: 404},
		// Keys are one segment.
		{method: "GET", path: "/api/v1/tenants/t1/x/", status: 404},
		{method: "GET", path: "/api/v1/inspect/tenants/", status: 404},
		// Non-canonical paths are not cleaned or redirected: they match
		// no route.
		{method: "GET", path: "/api/v1//tenants/", status: 404},
		{method: "GET", path: "/api/v1/tenants/./t1/?a=b&c", status: 404},
		{method: "DELETE", path: "/api/v1/tenants/x/../t1/", status: 404},
		{method: "POST", path: "/api/v1/tenants/t1/.", status: 404},
		// Unregistered methods are 404, not 405.
		{method: "PATCH", path: "/api/v1/tenants/t1/", body: `{"tenantName":"t1"}`, status: 404},
		{method: "HEAD", path: "/api/v1/tenants/t1/", status: 404},
		{method: "OPTIONS", path: "/api/v1/tenants/", status: 404},
		{method: "POST", path: "/api/v1/tenants/", body: `{}`, status: 404},
		{method: "DELETE", path: "/api/v1/tenants/", status: 404},
		{method: "POST", path: "/api/v1/inspect/tenants/t1/", status: 404},
		{method: "GET", path: "/nowhere", status: 404},
		// /plugin/* needs POST and Content-Type exactly application/json.
		{method: "POST", path: "/plugin/allocAddress", body: `{}`, header: []string{"Content-Type", "application/json"}, status: 200},
		{method: "POST", path: "/plugin/allocAddress", body: `{}`, header: []string{"Content-Type", "application/json; charset=utf-8"}, status: 404},
		{method: "POST", path: "/plugin/allocAddress", body: `{}`, header: []string{"Content-Type", "text/plain"}, status: 404},
		{method: "POST", path: "/plugin/allocAddress", body: `{}`, status: 404},
		{method: "GET", path: "/plugin/allocAddress", header: []string{"Content-Type", "application/json"}, status: 404},
		{method: "POST", path: "/plugin/allocAddress/", body: `{}`, header: []string{"Content-Type", "application/json"}, status: 404},
		// Extra netmaster routes: no trailing slash.
		{method: "GET", path: "/version", status: 200},
		{method: "GET", path: "/version/", status: 404},
		{method: "POST", path: "/version", status: 404},
	} {
		r := srv.Do(t, tc.method, tc.path, tc.body, tc.header...)
		what := tc.method + " " + tc.path
		if r.Status != tc.status {
			t.Errorf("%s: status %d (%q), want %d", what, r.Status, r.Body, tc.status)
			continue
		}
		switch tc.status {
		case 404:
			if tc.method != "HEAD" && r.Body != notFoundBody {
				t.Errorf("%s: 404 body %q", what, r.Body)
			}
		case 400:
			if r.Body != tc.body400 || r.Location != "" {
				t.Errorf("%s: 400 body %q location %q, want %q", what, r.Body, r.Location, tc.body400)
			}
		}
	}
	if d := dump(t, srv.KV); len(d) != 2 {
		t.Errorf("store changed by routing tests: %v", d)
	}
}
