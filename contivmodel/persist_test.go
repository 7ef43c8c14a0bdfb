package contivmodel_test

import (
	"net/http"
	"sync/atomic"
	"testing"

	cm "github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/contivmodel/modeltest"
)

// TestPersistenceAcrossRegistries creates objects through one registry and
// reads them back through a new registry loaded from the same store.
func testPersistenceAcrossRegistries(t *testing.T, newStore storeFunc) {
	var aborted atomic.Int32
	kv := newStore(t)
	a := modeltest.Start(t, kv, linkingControllers(&aborted))
	expectOK(t, "tenant", a.Do(t, http.MethodPost, "/api/v1/tenants/default/", `{"tenantName":"default"}`))
	expectOK(t, "network", a.Do(t, http.MethodPost, "/api/v1/networks/default:net1/",
		`{"tenantName":"default","networkName":"net1","encap":"vxlan","subnet":"10.1.1.0/24","pktTag":1000}`))
	for _, tc := range validationCases() {
		if tc.controller && tc.plural != "tenants" && tc.plural != "networks" {
			expectOK(t, tc.plural, a.Do(t, http.MethodPost, itemPath(tc.plural, urlKey(tc.base, tc.keyFields)), mustJSON(t, tc.base)))
		}
	}
	stored := dump(t, kv)
	for _, key := range []string{"obj/modeldb/network/default:net1", "obj/modeldb/tenant/default", "obj/modeldb/Bgp/hostA",
		"obj/modeldb/rule/default:p1:1", "obj/modeldb/global/global", "obj/modeldb/aciGw/aciGw"} {
		if _, ok := stored[key]; !ok {
			t.Errorf("store has no %s: %v", key, stored)
		}
	}
	if len(stored) != 12 {
		t.Errorf("store has %d keys, want 12: %v", len(stored), stored)
	}

	b := modeltest.Start(t, kv, linkingControllers(&aborted))
	for plural := range typeOfPlural {
		ra := a.Do(t, http.MethodGet, "/api/v1/"+plural+"/", "")
		rb := b.Do(t, http.MethodGet, "/api/v1/"+plural+"/", "")
		if ra.Body != rb.Body || rb.Status != 200 {
			t.Errorf("%s after reload: %q, want %q", plural, rb.Body, ra.Body)
		}
	}
	r := b.Do(t, http.MethodGet, "/api/v1/tenants/default/", "")
	if r.Body != `{"key":"default","tenantName":"default","link-sets":{"Networks":{"default:net1":{"type":"network","key":"default:net1"}}}}`+"\n" {
		t.Errorf("tenant after reload %q", r.Body)
	}
	// The new registry keeps working on the loaded state.
	expectError(t, "tenant delete", b.Do(t, http.MethodDelete, "/api/v1/tenants/default/", ""), "cannot delete default has 1 networks")
	expectOK(t, "network delete", b.Do(t, http.MethodDelete, "/api/v1/networks/default:net1/", ""))
	expectOK(t, "tenant delete", b.Do(t, http.MethodDelete, "/api/v1/tenants/default/", ""))
	if d := dump(t, kv); len(d) != 10 {
		t.Errorf("store after deletes: %v", d)
	}
}

// TestLoadNormalises checks Load on values written by someone else: the
// key comes from the store key, values are re-encoded canonically, and
// values that do not decode are skipped. Load also drops objects removed
// from the store since the last load.
func testLoadNormalises(t *testing.T, newStore storeFunc) {
	ctx := testCtx(t)
	kv := newStore(t)
	put := func(key, value string) {
		t.Helper()
		if _, err := kv.Put(ctx, key, []byte(value)); err != nil {
			t.Fatal(err)
		}
	}
	put("obj/modeldb/tenant/x", `{"link-sets":{"Networks":{}},"tenantName":"x","key":"wrong","extra":1}`)
	put("obj/modeldb/tenant/junk", `not json`)
	put("obj/modeldb/tenant/a/b", `{"tenantName":"a"}`)
	put("obj/modeldb/unknownType/k", `{}`)
	put("state/nets/n.t", `{}`)
	srv := modeltest.Start(t, kv, cm.NoopControllers())
	r := srv.Do(t, http.MethodGet, "/api/v1/tenants/", "")
	if r.Body != `[{"key":"x","tenantName":"x","link-sets":{}}]`+"\n" {
		t.Errorf("tenants after load %q", r.Body)
	}
	if err := kv.Delete(ctx, "obj/modeldb/tenant/x"); err != nil {
		t.Fatal(err)
	}
	if err := srv.Registry.Load(ctx); err != nil {
		t.Fatal(err)
	}
	expectError(t, "reloaded", srv.Do(t, http.MethodGet, "/api/v1/tenants/x/", ""), "tenant not found")
}
