package contivmodel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	cm "github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/contivmodel/modeltest"
)

// A small linking controller in the style of docs/rest-api.md §2.3/§2.4/§2.7/§2.8, to
// exercise callbacks that change other objects through the Tx.

type tenantCtl struct{ cm.NoopCallbacks[cm.Tenant] }

func (tenantCtl) Update(context.Context, *cm.Tx, *cm.Tenant, *cm.Tenant) error {
	return cm.Errorf("Cant change tenant parameters after its created")
}

func (tenantCtl) Delete(_ context.Context, _ *cm.Tx, t *cm.Tenant) error {
	if n := len(t.LinkSets.Networks); n > 0 {
		return cm.Errorf("cannot delete %s has %d networks", t.TenantName, n)
	}
	return nil
}

func (tenantCtl) Oper(_ context.Context, tx *cm.Tx, t *cm.Tenant) (any, error) {
	nets, err := cm.List[cm.Network](tx)
	if err != nil {
		return nil, err
	}
	n := 0
	for _, nw := range nets {
		if nw.TenantName == t.TenantName {
			n++
		}
	}
	return &cm.TenantOper{TotalNetworks: n}, nil
}

type networkCtl struct {
	cm.NoopCallbacks[cm.Network]
	aborted *atomic.Int32
}

func (c networkCtl) Create(_ context.Context, tx *cm.Tx, n *cm.Network) error {
	ok, err := cm.Exists[cm.Tenant](tx, n.TenantName)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("network %s: check tenant: %w", n.Key, cm.Errorf("Tenant not found"))
	}
	tx.OnAbort(func() { c.aborted.Add(1) })
	n.Links.Tenant = cm.NewLink(cm.TypeTenant, n.TenantName)
	err = cm.Modify(tx, n.TenantName, func(t *cm.Tenant) error {
		t.LinkSets.Networks.Add(cm.NewLink(cm.TypeNetwork, n.Key))
		return nil
	})
	if err != nil {
		return err
	}
	if n.PktTag == 99 { // fail after the tenant was changed
		return cm.Errorf("requested vlan not available - vlan:%d", n.PktTag)
	}
	return nil
}

func (networkCtl) Update(context.Context, *cm.Tx, *cm.Network, *cm.Network) error {
	return cm.Errorf("Cant change network parameters after its created")
}

func (networkCtl) Delete(_ context.Context, tx *cm.Tx, n *cm.Network) error {
	return cm.Modify(tx, n.TenantName, func(t *cm.Tenant) error {
		t.LinkSets.Networks.Remove(n.Key)
		return nil
	})
}

func (networkCtl) Oper(_ context.Context, tx *cm.Tx, n *cm.Network) (any, error) {
	if err := cm.Put(tx, n); !errors.Is(err, cm.ErrReadOnly) {
		return nil, fmt.Errorf("put in a read-only tx: %v", err)
	}
	return &cm.NetworkOper{NetworkTag: n.NetworkName + "." + n.TenantName}, nil
}

type policyCtl struct{ cm.NoopCallbacks[cm.Policy] }

func (policyCtl) Delete(ctx context.Context, tx *cm.Tx, p *cm.Policy) error {
	for key := range p.LinkSets.Rules {
		if err := cm.RemoveIn[cm.Rule](ctx, tx, key); err != nil {
			return err
		}
	}
	return nil
}

type ruleCtl struct{ cm.NoopCallbacks[cm.Rule] }

func (ruleCtl) Create(_ context.Context, tx *cm.Tx, r *cm.Rule) error {
	pkey := r.TenantName + ":" + r.PolicyName
	r.LinkSets.Policies.Add(cm.NewLink(cm.TypePolicy, pkey))
	return cm.Modify(tx, pkey, func(p *cm.Policy) error {
		p.LinkSets.Rules.Add(cm.NewLink(cm.TypeRule, r.Key))
		return nil
	})
}

func (ruleCtl) Update(context.Context, *cm.Tx, *cm.Rule, *cm.Rule) error {
	return cm.Errorf("can not update a rule after its created")
}

func (ruleCtl) Delete(_ context.Context, tx *cm.Tx, r *cm.Rule) error {
	return cm.Modify(tx, r.TenantName+":"+r.PolicyName, func(p *cm.Policy) error {
		p.LinkSets.Rules.Remove(r.Key)
		return nil
	})
}

func linkingControllers(aborted *atomic.Int32) cm.Controllers {
	c := cm.NoopControllers()
	c.Tenant = tenantCtl{}
	c.Network = networkCtl{aborted: aborted}
	c.Policy = policyCtl{}
	c.Rule = ruleCtl{}
	return c
}

const net1 = `{"tenantName":"t1","networkName":"n1","encap":"vlan","subnet":"10.1.1.0/24"}`

func testCallbacksLinkObjects(t *testing.T, newStore storeFunc) {
	var aborted atomic.Int32
	kv := newStore(t)
	srv := modeltest.Start(t, kv, linkingControllers(&aborted))

	expectError(t, "network without tenant", srv.Do(t, http.MethodPost, "/api/v1/networks/t1:n1/", net1), "Tenant not found")
	if d := dump(t, kv); len(d) != 0 {
		t.Fatalf("store after refused create: %v", d)
	}
	expectOK(t, "tenant", srv.Do(t, http.MethodPost, "/api/v1/tenants/t1/", `{"tenantName":"t1"}`))
	expectError(t, "tenant update", srv.Do(t, http.MethodPost, "/api/v1/tenants/t1/", `{"tenantName":"t1"}`),
		"Cant change tenant parameters after its created")

	r := srv.Do(t, http.MethodPost, "/api/v1/networks/t1:n1/", net1)
	expectOK(t, "network", r)
	want := `{"key":"t1:n1","encap":"vlan","networkName":"n1","nwType":"data","subnet":"10.1.1.0/24","tenantName":"t1","link-sets":{},"links":{"Tenant":{"type":"tenant","key":"t1"}}}`
	if r.Body != want+"\n" {
		t.Errorf("network create answer %q", r.Body)
	}
	wantTenant := `{"key":"t1","tenantName":"t1","link-sets":{"Networks":{"t1:n1":{"type":"network","key":"t1:n1"}}}}`
	if r := srv.Do(t, http.MethodGet, "/api/v1/tenants/t1/", ""); r.Body != wantTenant+"\n" {
		t.Errorf("tenant after network create %q", r.Body)
	}
	if d := dump(t, kv); d["obj/modeldb/tenant/t1"] != wantTenant || d["obj/modeldb/network/t1:n1"] != want {
		t.Errorf("store after network create: %v", d)
	}
	if r := srv.Do(t, http.MethodGet, "/api/v1/inspect/tenants/t1/", ""); r.Body != `{"Config":`+wantTenant+`,"Oper":{"totalNetworks":1}}`+"\n" {
		t.Errorf("tenant inspect %q", r.Body)
	}
	if r := srv.Do(t, http.MethodGet, "/api/v1/inspect/networks/t1:n1/", ""); r.Body != `{"Config":`+want+`,"Oper":{"networkTag":"n1.t1"}}`+"\n" {
		t.Errorf("network inspect %q", r.Body)
	}

	before := dump(t, kv)
	expectError(t, "network update", srv.Do(t, http.MethodPut, "/api/v1/networks/t1:n1/", net1), "Cant change network parameters after its created")
	expectError(t, "tenant delete", srv.Do(t, http.MethodDelete, "/api/v1/tenants/t1/", ""), "cannot delete t1 has 1 networks")
	// A create that changed the tenant and then failed leaves nothing behind.
	expectError(t, "failing create", srv.Do(t, http.MethodPost, "/api/v1/networks/t1:n2/",
		`{"tenantName":"t1","networkName":"n2","encap":"vlan","subnet":"10.1.2.0/24","pktTag":99}`), "requested vlan not available - vlan:99")
	if got := aborted.Load(); got != 1 {
		t.Errorf("OnAbort ran %d times, want 1", got)
	}
	if after := dump(t, kv); !reflect.DeepEqual(before, after) {
		t.Errorf("refused operations changed the store:\nbefore %v\nafter  %v", before, after)
	}
	if r := srv.Do(t, http.MethodGet, "/api/v1/tenants/t1/", ""); r.Body != wantTenant+"\n" {
		t.Errorf("tenant cache after failed create %q", r.Body)
	}

	expectOK(t, "network delete", srv.Do(t, http.MethodDelete, "/api/v1/networks/t1:n1/", ""))
	if r := srv.Do(t, http.MethodGet, "/api/v1/tenants/t1/", ""); r.Body != `{"key":"t1","tenantName":"t1","link-sets":{}}`+"\n" {
		t.Errorf("tenant after network delete %q", r.Body)
	}
	expectOK(t, "tenant delete", srv.Do(t, http.MethodDelete, "/api/v1/tenants/t1/", ""))
	if d := dump(t, kv); len(d) != 0 {
		t.Errorf("store at the end: %v", d)
	}
}

func testCascadeDelete(t *testing.T, newStore storeFunc) {
	var aborted atomic.Int32
	kv := newStore(t)
	srv := modeltest.Start(t, kv, linkingControllers(&aborted))
	expectOK(t, "policy", srv.Do(t, http.MethodPost, "/api/v1/policys/t:p/", `{"tenantName":"t","policyName":"p"}`))
	for _, id := range []string{"1", "2"} {
		expectOK(t, "rule "+id, srv.Do(t, http.MethodPost, "/api/v1/rules/t:p:"+id+"/",
			`{"tenantName":"t","policyName":"p","ruleId":"`+id+`","action":"allow","direction":"in"}`))
	}
	expectError(t, "duplicate rule", srv.Do(t, http.MethodPost, "/api/v1/rules/t:p:1/",
		`{"tenantName":"t","policyName":"p","ruleId":"1","action":"allow","direction":"in"}`), "can not update a rule after its created")
	if r := srv.Do(t, http.MethodGet, "/api/v1/policys/t:p/", ""); r.Body != `{"key":"t:p","policyName":"p","tenantName":"t","link-sets":{"Rules":{"t:p:1":{"type":"rule","key":"t:p:1"},"t:p:2":{"type":"rule","key":"t:p:2"}}},"links":{"Tenant":{}}}`+"\n" {
		t.Errorf("policy %q", r.Body)
	}
	expectOK(t, "policy delete", srv.Do(t, http.MethodDelete, "/api/v1/policys/t:p/", ""))
	if d := dump(t, kv); len(d) != 0 {
		t.Errorf("store after cascade: %v", d)
	}
	if r := srv.Do(t, http.MethodGet, "/api/v1/rules/", ""); r.Body != "[]\n" {
		t.Errorf("rules after cascade %q", r.Body)
	}
}

// TestCommitFailureReverts injects a store failure on the last write of a
// transaction: the earlier writes are reverted and the cache is unchanged.
func TestCommitFailureReverts(t *testing.T) {
	var aborted atomic.Int32
	kv := modeltest.NewMemKV()
	srv := modeltest.Start(t, kv, linkingControllers(&aborted))
	expectOK(t, "tenant", srv.Do(t, http.MethodPost, "/api/v1/tenants/t1/", `{"tenantName":"t1"}`))
	before := dump(t, kv)
	kv.FailPut = func(key string) error {
		if key == "obj/modeldb/network/t1:n1" {
			return errors.New("injected store failure")
		}
		return nil
	}
	r := srv.Do(t, http.MethodPost, "/api/v1/networks/t1:n1/", net1)
	expectStatus(t, "commit failure", r, http.StatusInternalServerError, `persist network "t1:n1": injected store failure`)
	kv.FailPut = nil
	if after := dump(t, kv); !reflect.DeepEqual(before, after) {
		t.Errorf("store not reverted:\nbefore %v\nafter  %v", before, after)
	}
	if got := aborted.Load(); got != 1 {
		t.Errorf("OnAbort ran %d times, want 1", got)
	}
	if r := srv.Do(t, http.MethodGet, "/api/v1/tenants/t1/", ""); r.Body != `{"key":"t1","tenantName":"t1","link-sets":{}}`+"\n" {
		t.Errorf("tenant cache changed %q", r.Body)
	}
	expectError(t, "network absent", srv.Do(t, http.MethodGet, "/api/v1/networks/t1:n1/", ""), "network not found")

	// A failing delete keeps the object.
	expectOK(t, "network", srv.Do(t, http.MethodPost, "/api/v1/networks/t1:n1/", net1))
	before = dump(t, kv)
	kv.FailDelete = func(string) error { return errors.New("injected delete failure") }
	r = srv.Do(t, http.MethodDelete, "/api/v1/networks/t1:n1/", "")
	if r.Status != 500 {
		t.Errorf("delete with store failure: %d %q", r.Status, r.Body)
	}
	kv.FailDelete = nil
	if after := dump(t, kv); !reflect.DeepEqual(before, after) {
		t.Errorf("store not reverted after failed delete:\nbefore %v\nafter  %v", before, after)
	}
	expectOK(t, "network still there", srv.Do(t, http.MethodGet, "/api/v1/networks/t1:n1/", ""))
}

// TestProgrammaticAPI covers Upsert/Read/ReadAll/Remove/Update/View as the
// netmaster uses them outside HTTP (start-up objects, watchers).
func testProgrammaticAPI(t *testing.T, newStore storeFunc) {
	var aborted atomic.Int32
	ctx := testCtx(t)
	kv := newStore(t)
	reg := modeltest.NewRegistry(t, kv, linkingControllers(&aborted))

	g, err := cm.Upsert(ctx, reg, &cm.Global{Name: "global", FwdMode: "bridge", PvtSubnet: "172.19.0.0/16", Vlans: "1-4094", Vxlans: "1-10000"})
	if err != nil || g.Key != "global" {
		t.Fatalf("upsert global: %+v %v", g, err)
	}
	if _, err := cm.Upsert(ctx, reg, &cm.Global{Name: "global", Vlans: "1"}); cm.Message(err) != "pvtSubnet string invalid format" || !errors.Is(err, cm.ErrInvalid) {
		t.Errorf("invalid upsert: %v", err)
	}
	if _, err := cm.Upsert(ctx, reg, &cm.Tenant{TenantName: "default"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cm.Upsert(ctx, reg, &cm.Network{TenantName: "default", NetworkName: "n", Encap: "vxlan", Subnet: "10.9.0.0/16"}); err != nil {
		t.Fatal(err)
	}
	tn, err := cm.Read[cm.Tenant](reg, "default")
	if err != nil || !tn.LinkSets.Networks.Has("default:n") {
		t.Fatalf("read tenant: %+v %v", tn, err)
	}
	if _, err := cm.Read[cm.Tenant](reg, "nope"); !errors.Is(err, cm.ErrNotFound) || cm.Message(err) != "tenant not found" {
		t.Errorf("read missing: %v", err)
	}
	all, err := cm.ReadAll[cm.Network](reg)
	if err != nil || len(all) != 1 || all[0].NwType != "data" {
		t.Errorf("read all: %v %v", all, err)
	}
	if err := cm.Remove[cm.Tenant](ctx, reg, "default"); cm.Message(err) != "cannot delete default has 1 networks" {
		t.Errorf("remove refused: %v", err)
	}

	// Update: staged writes are visible inside, and discarded on error.
	err = reg.Update(ctx, func(ctx context.Context, tx *cm.Tx) error {
		if err := cm.Put(tx, &cm.Tenant{Key: "x", TenantName: "x"}); err != nil {
			return err
		}
		if ok, _ := cm.Exists[cm.Tenant](tx, "x"); !ok {
			return errors.New("staged tenant not visible")
		}
		if err := cm.Delete[cm.Tenant](tx, "default"); err != nil {
			return err
		}
		if list, _ := cm.List[cm.Tenant](tx); len(list) != 1 || list[0].Key != "x" {
			return fmt.Errorf("list in tx: %v", list)
		}
		if err := reg.Update(ctx, func(context.Context, *cm.Tx) error { return nil }); !errors.Is(err, cm.ErrNestedTx) {
			return fmt.Errorf("nested update: %v", err)
		}
		if err := cm.Modify(tx, "x", func(t *cm.Tenant) error { t.Key = "y"; return nil }); err == nil {
			return errors.New("modify changing the key succeeded")
		}
		return errors.New("roll back")
	})
	if err == nil || err.Error() != "roll back" {
		t.Fatalf("update: %v", err)
	}
	if _, err := cm.Read[cm.Tenant](reg, "x"); !errors.Is(err, cm.ErrNotFound) {
		t.Errorf("rolled-back tenant visible: %v", err)
	}
	if _, err := cm.Read[cm.Tenant](reg, "default"); err != nil {
		t.Errorf("rolled-back delete applied: %v", err)
	}
	err = reg.View(ctx, func(ctx context.Context, tx *cm.Tx) error {
		return cm.Put(tx, &cm.Tenant{Key: "z", TenantName: "z"})
	})
	if !errors.Is(err, cm.ErrReadOnly) {
		t.Errorf("put in view: %v", err)
	}
	// The inspect-only endpoint type cannot be written.
	if _, err := cm.Upsert(ctx, reg, &cm.Endpoint{Key: "e"}); !errors.Is(err, cm.ErrInvalid) {
		t.Errorf("upsert endpoint: %v", err)
	}
	err = reg.Update(ctx, func(ctx context.Context, tx *cm.Tx) error {
		if err := cm.Put(tx, &cm.Endpoint{Key: "e"}); !errors.Is(err, cm.ErrInvalid) {
			return fmt.Errorf("put endpoint: %v", err)
		}
		if err := cm.Delete[cm.Endpoint](tx, "e"); !errors.Is(err, cm.ErrInvalid) {
			return fmt.Errorf("delete endpoint: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
	// Unregistered Go types are refused.
	if _, err := cm.Read[struct{ Key string }](reg, "k"); err == nil {
		t.Error("read of an unregistered type succeeded")
	}
}

// testConcurrentLinking creates networks in parallel; each adds itself to
// the tenant's link set, and no update may be lost.
func testConcurrentLinking(t *testing.T, newStore storeFunc) {
	var aborted atomic.Int32
	kv := newStore(t)
	srv := modeltest.Start(t, kv, linkingControllers(&aborted))
	expectOK(t, "tenant", srv.Do(t, http.MethodPost, "/api/v1/tenants/t1/", `{"tenantName":"t1"}`))
	const n = 16
	errs := make(chan string, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"tenantName":"t1","networkName":"n%d","encap":"vlan","subnet":"10.1.%d.0/24"}`, i, i)
			resp, err := http.Post(fmt.Sprintf("%s/api/v1/networks/t1:n%d/", srv.URL, i), "", strings.NewReader(body))
			if err != nil {
				errs <- fmt.Sprintf("network %d: %v", i, err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				errs <- fmt.Sprintf("network %d: %d %s", i, resp.StatusCode, b)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	tn, err := cm.Read[cm.Tenant](srv.Registry, "t1")
	if err != nil || len(tn.LinkSets.Networks) != n {
		t.Fatalf("tenant links after concurrent creates: %v %v", err, tn)
	}
	var stored cm.Tenant
	if err := json.Unmarshal([]byte(dump(t, kv)["obj/modeldb/tenant/t1"]), &stored); err != nil || len(stored.LinkSets.Networks) != n {
		t.Errorf("stored tenant links: %v %v", err, stored.LinkSets.Networks)
	}
}
