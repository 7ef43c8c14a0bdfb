package contivmodel_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	cm "github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/contivmodel/modeltest"
)

var typeOfPlural = map[string]string{
	"aciGws": "aciGw", "appProfiles": "appProfile", "Bgps": "Bgp", "endpointGroups": "endpointGroup",
	"extContractsGroups": "extContractsGroup", "globals": "global", "netprofiles": "netprofile", "networks": "network",
	"policys": "policy", "rules": "rule", "serviceLBs": "serviceLB", "tenants": "tenant", "volumes": "volume",
	"volumeProfiles": "volumeProfile",
}

var hasOper = map[string]bool{
	"aciGws": true, "Bgps": true, "endpointGroups": true, "globals": true, "networks": true, "policys": true,
	"serviceLBs": true, "tenants": true,
}

// TestCRUDEveryType drives list/get/create/update/inspect/delete for every
// type with the no-op controller and checks bodies, headers and the
// persisted form.
func testCRUDEveryType(t *testing.T, newStore storeFunc) {
	for _, tc := range validationCases() {
		if !tc.controller {
			continue
		}
		t.Run(tc.plural, func(t *testing.T) {
			kv := newStore(t)
			srv := modeltest.Start(t, kv, cm.NoopControllers())
			typ := typeOfPlural[tc.plural]
			key := urlKey(tc.base, tc.keyFields)
			item := itemPath(tc.plural, key)

			r := srv.Do(t, http.MethodGet, "/api/v1/"+tc.plural+"/", "")
			expectOK(t, "empty list", r)
			if r.Body != "[]\n" {
				t.Errorf("empty list body %q", r.Body)
			}
			expectError(t, "get missing", srv.Do(t, http.MethodGet, item, ""), typ+" not found")
			expectError(t, "inspect missing", srv.Do(t, http.MethodGet, "/api/v1/inspect/"+tc.plural+"/"+key+"/", ""), typ+" not found")
			expectError(t, "delete missing", srv.Do(t, http.MethodDelete, item, ""), typ+" not found")

			created := srv.Do(t, http.MethodPost, item, mustJSON(t, tc.base))
			expectOK(t, "create", created)
			if !strings.HasPrefix(created.Body, `{"key":"`+key+`"`) || !strings.HasSuffix(created.Body, "}\n") ||
				strings.Count(created.Body, "\n") != 1 {
				t.Errorf("create body %q", created.Body)
			}
			stored := dump(t, kv)
			if len(stored) != 1 || stored["obj/modeldb/"+typ+"/"+key]+"\n" != created.Body {
				t.Errorf("store after create: %v", stored)
			}
			got := srv.Do(t, http.MethodGet, item, "")
			expectOK(t, "get", got)
			if got.Body != created.Body {
				t.Errorf("get %q, want %q", got.Body, created.Body)
			}
			list := srv.Do(t, http.MethodGet, "/api/v1/"+tc.plural+"/", "")
			expectOK(t, "list", list)
			if list.Body != "["+strings.TrimSuffix(created.Body, "\n")+"]\n" {
				t.Errorf("list %q", list.Body)
			}
			insp := srv.Do(t, http.MethodGet, "/api/v1/inspect/"+tc.plural+"/"+key+"/", "")
			expectOK(t, "inspect", insp)
			want := `{"Config":` + strings.TrimSuffix(created.Body, "\n")
			if hasOper[tc.plural] {
				want += `,"Oper":{}`
			}
			if insp.Body != want+"}\n" {
				t.Errorf("inspect %q, want %q", insp.Body, want+"}\n")
			}

			// Update with PUT: the no-op controller takes the request over.
			upd := srv.Do(t, http.MethodPut, item, mustJSON(t, tc.base))
			expectOK(t, "update", upd)
			if upd.Body != created.Body {
				t.Errorf("update echo %q, want %q", upd.Body, created.Body)
			}

			del := srv.Do(t, http.MethodDelete, item, "")
			expectOK(t, "delete", del)
			if del.Body != `"`+key+`"`+"\n" {
				t.Errorf("delete body %q", del.Body)
			}
			if d := dump(t, kv); len(d) != 0 {
				t.Errorf("store after delete: %v", d)
			}
			expectError(t, "get deleted", srv.Do(t, http.MethodGet, item, ""), typ+" not found")
			expectError(t, "delete again", srv.Do(t, http.MethodDelete, item, ""), typ+" not found")
		})
	}
}

// TestListSortedByKey checks list order (Appendix A Q13: sorted by key).
func testListSortedByKey(t *testing.T, newStore storeFunc) {
	srv := modeltest.Start(t, newStore(t), cm.NoopControllers())
	for _, n := range []string{"c", "a", "b"} {
		expectOK(t, "create "+n, srv.Do(t, http.MethodPost, "/api/v1/tenants/"+n+"/", `{"tenantName":"`+n+`"}`))
	}
	r := srv.Do(t, http.MethodGet, "/api/v1/tenants/", "")
	want := `[{"key":"a","tenantName":"a","link-sets":{}},{"key":"b","tenantName":"b","link-sets":{}},{"key":"c","tenantName":"c","link-sets":{}}]` + "\n"
	if r.Body != want {
		t.Errorf("list %q, want %q", r.Body, want)
	}
}

// TestDecoding covers docs/rest-api.md §1.5: case-insensitive names, unknown members
// ignored, first JSON value only, empty body, type mismatch, key and links
// from the body ignored.
func testDecoding(t *testing.T, newStore storeFunc) {
	kv := newStore(t)
	srv := modeltest.Start(t, kv, cm.NoopControllers())

	r := srv.Do(t, http.MethodPost, "/api/v1/tenants/t1/", `{"TENANTNAME":"t1","DefaultNetwork":"n1","unknown":{"a":[1,2]}} trailing garbage {`)
	expectOK(t, "case-insensitive", r)
	if r.Body != `{"key":"t1","defaultNetwork":"n1","tenantName":"t1","link-sets":{}}`+"\n" {
		t.Errorf("case-insensitive body %q", r.Body)
	}
	r = srv.Do(t, http.MethodPost, "/api/v1/netprofiles/t1:p/", `{"tenantName":"t1","profileName":"p","dscp":7}`)
	expectOK(t, "dscp lower case", r)
	if !strings.Contains(r.Body, `"DSCP":7`) {
		t.Errorf("DSCP not decoded: %q", r.Body)
	}

	before := dump(t, kv)
	expectError(t, "empty body", srv.Do(t, http.MethodPost, "/api/v1/tenants/t2/", ""), "EOF")
	expectError(t, "blank body", srv.Do(t, http.MethodPost, "/api/v1/tenants/t2/", "  \n"), "EOF")
	r = srv.Do(t, http.MethodPost, "/api/v1/networks/t1:n1/", `{"tenantName":"t1","networkName":"n1","pktTag":"12"}`)
	if r.Status != 400 || !strings.HasPrefix(r.Body, "json: cannot unmarshal string into Go struct field Network.pktTag of type int") {
		t.Errorf("type mismatch: %d %q", r.Status, r.Body)
	}
	r = srv.Do(t, http.MethodPost, "/api/v1/networks/t1:n1/", `{"tenantName":"t1","networkName":"n1","pktTag":1.5}`)
	if r.Status != 400 || !strings.HasPrefix(r.Body, "json: cannot unmarshal number 1.5") {
		t.Errorf("fraction: %d %q", r.Status, r.Body)
	}
	r = srv.Do(t, http.MethodPost, "/api/v1/tenants/t2/", `{"tenantName":`)
	if r.Status != 400 || r.Body != "unexpected EOF\n" {
		t.Errorf("truncated: %d %q", r.Status, r.Body)
	}
	expectError(t, "null body", srv.Do(t, http.MethodPost, "/api/v1/tenants/t2/", "null"), `Invalid Key: URL key "t2" differs from "" (tenantName in the body)`)
	expectError(t, "body key ignored", srv.Do(t, http.MethodPost, "/api/v1/tenants/t2/", `{"key":"t2","tenantName":"t3"}`), `Invalid Key: URL key "t2" differs from "t3" (tenantName in the body)`)
	if after := dump(t, kv); len(after) != len(before) {
		t.Errorf("refused requests changed the store: %v", after)
	}

	// Client-supplied links and link sets are ignored.
	r = srv.Do(t, http.MethodPost, "/api/v1/networks/t1:n1/", `{"key":"zzz","tenantName":"t1","networkName":"n1","encap":"vlan","subnet":"10.1.1.0/24",`+
		`"link-sets":{"EndpointGroups":{"t1:g":{"type":"endpointGroup","key":"t1:g"}}},"links":{"Tenant":{"type":"tenant","key":"evil"}}}`)
	expectOK(t, "links ignored", r)
	want := `{"key":"t1:n1","encap":"vlan","networkName":"n1","nwType":"data","subnet":"10.1.1.0/24","tenantName":"t1","link-sets":{},"links":{"Tenant":{}}}`
	if r.Body != want+"\n" || dump(t, kv)["obj/modeldb/network/t1:n1"] != want {
		t.Errorf("links not ignored: %q", r.Body)
	}

	// The /api/v1 routes do not look at Content-Type.
	expectOK(t, "form content type", srv.Do(t, http.MethodPost, "/api/v1/tenants/t4/", `{"tenantName":"t4"}`,
		"Content-Type", "application/x-www-form-urlencoded"))
}

// TestHTMLEscaping checks the json.Encoder form of answers.
func testHTMLEscaping(t *testing.T, newStore storeFunc) {
	srv := modeltest.Start(t, newStore(t), cm.NoopControllers())
	r := srv.Do(t, http.MethodPost, "/api/v1/Bgps/h1/", `{"hostname":"h1","routerip":"1.1.1.1/24","as":"<&>"}`)
	expectOK(t, "bgp", r)
	if r.Body != `{"key":"h1","as":"\u003c\u0026\u003e","hostname":"h1","routerip":"1.1.1.1/24"}`+"\n" {
		t.Errorf("escaping: %q", r.Body)
	}
}

// TestNoControllerTypes covers volume and volumeProfile (docs/rest-api.md §2.14).
func testNoControllerTypes(t *testing.T, newStore storeFunc) {
	kv := newStore(t)
	srv := modeltest.Start(t, kv, cm.NoopControllers())
	for _, tc := range []struct{ plural, typ, body string }{
		{"volumes", "volume", `{"tenantName":"default","volumeName":"v1"}`},
		{"volumeProfiles", "volumeProfile", `{"tenantName":"default","volumeProfileName":"v1"}`},
	} {
		r := srv.Do(t, http.MethodGet, "/api/v1/"+tc.plural+"/", "")
		if r.Status != 200 || r.Body != "[]\n" {
			t.Errorf("%s list: %d %q", tc.plural, r.Status, r.Body)
		}
		expectError(t, tc.plural+" create", srv.Do(t, http.MethodPost, "/api/v1/"+tc.plural+"/default:v1/", tc.body), "Invalid object type")
		expectError(t, tc.plural+" update", srv.Do(t, http.MethodPut, "/api/v1/"+tc.plural+"/default:v1/", tc.body), "Invalid object type")
		expectError(t, tc.plural+" bad key", srv.Do(t, http.MethodPost, "/api/v1/"+tc.plural+"/default:v2/", tc.body), `Invalid Key: URL key "default:v2" differs from "default:v1" (tenantName:`+tc.typ+`Name in the body)`)
		expectError(t, tc.plural+" get", srv.Do(t, http.MethodGet, "/api/v1/"+tc.plural+"/default:v1/", ""), tc.typ+" not found")
		expectError(t, tc.plural+" delete", srv.Do(t, http.MethodDelete, "/api/v1/"+tc.plural+"/default:v1/", ""), tc.typ+" not found")
		expectError(t, tc.plural+" inspect", srv.Do(t, http.MethodGet, "/api/v1/inspect/"+tc.plural+"/default:v1/", ""), tc.typ+" not found")
	}
	if d := dump(t, kv); len(d) != 0 {
		t.Errorf("store: %v", d)
	}
	// A type registered without a controller also refuses create for a
	// type that normally has one.
	srv2 := modeltest.Start(t, newStore(t), cm.Controllers{})
	expectError(t, "tenant without controller", srv2.Do(t, http.MethodPost, "/api/v1/tenants/t1/", `{"tenantName":"t1"}`), "Invalid object type")
	expectError(t, "endpoint without controller", srv2.Do(t, http.MethodGet, "/api/v1/inspect/endpoints/x/", ""), "Invalid object type")
}

type endpointCtl struct{ cm.NoopCallbacks[cm.Endpoint] }

func (endpointCtl) Oper(_ context.Context, _ *cm.Tx, ep *cm.Endpoint) (any, error) {
	if !strings.HasPrefix("abcdef0123", ep.Key) {
		return nil, cm.NotFound(cm.TypeEndpoint)
	}
	return &cm.EndpointOper{Key: ep.Key, EndpointID: "abcdef0123", IpAddress: []string{"10.1.1.1", ""}}, nil
}

type operCtl struct {
	cm.NoopCallbacks[cm.Network]
	oper any
	err  error
}

func (c operCtl) Oper(context.Context, *cm.Tx, *cm.Network) (any, error) { return c.oper, c.err }

// TestInspect covers the endpoint inspect-only type and oper results.
func testInspect(t *testing.T, newStore storeFunc) {
	ctl := cm.NoopControllers()
	ctl.Endpoint = endpointCtl{}
	srv := modeltest.Start(t, newStore(t), ctl)
	r := srv.Do(t, http.MethodGet, "/api/v1/inspect/endpoints/abc/", "")
	expectOK(t, "endpoint", r)
	if r.Body != `{"Oper":{"key":"abc","endpointID":"abcdef0123","ipAddress":["10.1.1.1",""]}}`+"\n" {
		t.Errorf("endpoint inspect %q", r.Body)
	}
	expectError(t, "endpoint missing", srv.Do(t, http.MethodGet, "/api/v1/inspect/endpoints/zzz/", ""), "endpoint not found")
	for _, p := range []string{"/api/v1/endpoints/", "/api/v1/endpoints/abc/", "/api/v1/inspect/endpoints/"} {
		if r := srv.Do(t, http.MethodGet, p, ""); r.Status != 404 {
			t.Errorf("GET %s: %d", p, r.Status)
		}
	}

	net := `{"tenantName":"t","networkName":"n","encap":"vlan","subnet":"10.1.1.0/24"}`
	for _, tc := range []struct {
		ctl  operCtl
		want string
		err  bool
	}{
		{operCtl{oper: &cm.NetworkOper{PktTag: 7, NetworkTag: "n.t"}}, `"Oper":{"networkTag":"n.t","pktTag":7}}`, false},
		{operCtl{oper: (*cm.NetworkOper)(nil)}, `"Oper":{}}`, false},
		{operCtl{err: cm.Errorf("key not found")}, "key not found\n", true},
	} {
		c := cm.NoopControllers()
		c.Network = tc.ctl
		srv := modeltest.Start(t, newStore(t), c)
		expectOK(t, "create", srv.Do(t, http.MethodPost, "/api/v1/networks/t:n/", net))
		r := srv.Do(t, http.MethodGet, "/api/v1/inspect/networks/t:n/", "")
		if tc.err {
			expectError(t, "oper error", r, strings.TrimSuffix(tc.want, "\n"))
		} else if !strings.HasSuffix(r.Body, tc.want+"\n") || !strings.HasPrefix(r.Body, `{"Config":{"key":"t:n"`) {
			t.Errorf("inspect %q, want suffix %q", r.Body, tc.want)
		}
	}
}
