package endpoints_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contiv/netplugin/netmaster/master/mastertest"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/objdbtest"
)

// perfPost sends a plugin request from any goroutine (no t.Fatal).
func perfPost(url, path, body string) (int, string, error) {
	resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// inParallel runs fn(i) for i in [0,n) on c workers and returns the
// first error.
func inParallel(n, c int, fn func(i int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  int
	)
	for w := 0; w < c; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				stop := i >= n || first != nil
				mu.Unlock()
				if stop {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// expandRuns reads an inspect address list ("a-b, c") into a set.
func expandRuns(t *testing.T, runs string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, r := range strings.Split(runs, ", ") {
		lo, hi, ok := strings.Cut(r, "-")
		if !ok {
			hi = lo
		}
		a, err1 := netip.ParseAddr(lo)
		b, err2 := netip.ParseAddr(hi)
		if err1 != nil || err2 != nil {
			t.Fatalf("address list %q: bad run %q", runs, r)
		}
		for ; a.Compare(b) <= 0 && len(out) <= 1<<16; a = a.Next() {
			out[a.String()] = true
		}
	}
	return out
}

// The counters are written concurrently with the endpoint record and the
// address release; under concurrent creates and deletes (each endpoint
// created twice and deleted twice at once, so that the losing create
// takes its counters back) they still end exact, and no address is handed
// out twice.
//
// Both paths: "joined" (one store transaction per create or delete,
// docs/allocation-integrity.md) and "stepwise" (a store without
// transactions: separate writes).
func TestConcurrentEndpointCounters(t *testing.T) {
	t.Run("joined", func(t *testing.T) { testConcurrentEndpointCounters(t, newEnv(t)) })
	t.Run("stepwise", func(t *testing.T) { testConcurrentEndpointCounters(t, newStepwiseEnv(t)) })
}

// noTxnStore hides the store's transactions (objdb.TxnOf finds none).
type noTxnStore struct{ objdb.Store }

// newStepwiseEnv is a term over a store without transactions.
func newStepwiseEnv(t *testing.T) *env {
	root := objdbtest.UniqueRoot(t)
	st := noTxnStore{mastertest.OpenStore(t, etcdEndpoint, root)}
	if objdb.TxnOf(st) != nil {
		t.Fatal("the wrapper still offers transactions")
	}
	return &env{mastertest.StartOn(t, root, st, mastertest.DefaultConfig())}
}

func testConcurrentEndpointCounters(t *testing.T, e *env) {
	e.CreateNet("default", "cnt", "vxlan", "198.18.4.0/24", "198.18.4.254", 0)
	e.CreateEPG("default", "cg", "cnt", "")
	const n = 48
	var mu sync.Mutex
	addrOf := map[string]string{} // endpoint -> address
	err := inParallel(2*n, 16, func(i int) error {
		id := fmt.Sprintf("ep%d", i/2)
		code, b, err := perfPost(e.Srv.URL, "/plugin/createEndpoint", mastertest.CreateEP("default", "cnt", "cg", id, ""))
		if err != nil || code != http.StatusOK {
			return fmt.Errorf("create %s: %d %q %v", id, code, b, err)
		}
		var r mastertest.EPResp
		if err := json.Unmarshal([]byte(b), &r); err != nil {
			return fmt.Errorf("create %s: decode %q: %w", id, b, err)
		}
		mu.Lock()
		defer mu.Unlock()
		if prev, ok := addrOf[id]; ok && prev != r.EndpointConfig.IPAddress {
			return fmt.Errorf("create %s twice: addresses %s and %s", id, prev, r.EndpointConfig.IPAddress)
		}
		addrOf[id] = r.EndpointConfig.IPAddress
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	holder := map[string]string{}
	for id, a := range addrOf {
		if other, ok := holder[a]; ok {
			t.Fatalf("address %s handed to %s and %s", a, other, id)
		}
		holder[a] = id
	}
	ni := e.NetOper("default", "cnt")
	if len(addrOf) != n || ni.Oper.NumEndpoints != n || ni.Oper.AllocatedAddressesCount != n {
		t.Fatalf("after creates: %d endpoints, oper %d endpoints %d addresses, want %d",
			len(addrOf), ni.Oper.NumEndpoints, ni.Oper.AllocatedAddressesCount, n)
	}
	// The pool holds exactly the endpoints' addresses and the gateway (a
	// losing duplicate create gave its address back).
	inPool := expandRuns(t, ni.Oper.AllocatedIPAddresses)
	if len(inPool) != n+1 || !inPool["198.18.4.254"] {
		t.Fatalf("allocated after creates: %q", ni.Oper.AllocatedIPAddresses)
	}
	for id, a := range addrOf {
		if !inPool[a] {
			t.Fatalf("%s's address %s not allocated in %q", id, a, ni.Oper.AllocatedIPAddresses)
		}
	}
	if gs, _ := e.GroupState("default", "cg"); gs.EpCount != n {
		t.Fatalf("group epCount %d, want %d", gs.EpCount, n)
	}

	var deleted sync.Map
	err = inParallel(2*n, 16, func(i int) error {
		id := fmt.Sprintf("ep%d", i/2)
		code, b, err := perfPost(e.Srv.URL, "/plugin/deleteEndpoint", mastertest.DeleteEP("default", "cnt", "cg", id))
		switch {
		case err != nil:
			return fmt.Errorf("delete %s: %w", id, err)
		case code == http.StatusOK:
			if _, dup := deleted.LoadOrStore(id, true); dup {
				return fmt.Errorf("delete %s succeeded twice", id)
			}
		case code != http.StatusNotFound || !strings.HasPrefix(b, "endpoint "+"cnt.default-"):
			return fmt.Errorf("delete %s: %d %q", id, code, b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ni = e.NetOper("default", "cnt")
	if ni.Oper.NumEndpoints != 0 || ni.Oper.AllocatedAddressesCount != 0 || ni.Oper.AllocatedIPAddresses != "198.18.4.254" {
		t.Fatalf("after deletes: %+v", ni.Oper)
	}
	if gs, _ := e.GroupState("default", "cg"); gs.EpCount != 0 {
		t.Fatalf("group epCount %d after deletes", gs.EpCount)
	}
	// A new term recomputes the counters from the records: nothing to fix.
	before := e.Dump()
	e.Restart()
	if d := mastertest.DiffDumps(before, e.Dump()); d != "" {
		t.Fatalf("restart corrected the counters:\n%s", d)
	}
}

// A create whose counter write fails (here: the state object vanished
// from under the term's cache) takes back everything it wrote: the
// endpoint record, the address, and the other object's counter.
func TestEndpointCounterFailureRollsBack(t *testing.T) {
	e := newEnv(t)
	e.CreateNet("default", "rb", "vxlan", "198.18.5.0/24", "198.18.5.254", 0)
	e.CreateEPG("default", "rbg", "rb", "")
	e.CreateEPG("default", "rbh", "rb", "")
	// Warm the term's caches of both groups and the network.
	for _, g := range []string{"rbg", "rbh"} {
		e.CreateEndpoint(mastertest.CreateEP("default", "rb", g, "warm-"+g, ""))
	}
	ctx := mastertest.Ctx(t, 10*time.Second)

	// Group state gone: the network's counters are taken back.
	if err := e.St.Delete(ctx, "state/endpointGroups/rbg:default"); err != nil {
		t.Fatal(err)
	}
	e.FailStatus("POST", "/plugin/createEndpoint", mastertest.CreateEP("default", "rb", "rbg", "x1", ""), http.StatusInternalServerError, "")

	// Network state gone: the group's counter is taken back too.
	if err := e.St.Delete(ctx, "state/nets/rb.default"); err != nil {
		t.Fatal(err)
	}
	e.FailStatus("POST", "/plugin/createEndpoint", mastertest.CreateEP("default", "rb", "rbh", "x2", ""), http.StatusInternalServerError, "")
}

// An endpoint's address cannot be given back through releaseAddress (the
// endpoint owns it, docs/allocation-integrity.md): the release is refused
// and changes nothing; deleting the endpoint lowers both counts.
func TestDeleteEndpointOfRefusedRelease(t *testing.T) {
	e := newEnv(t)
	e.CreateNet("default", "rel", "vxlan", "198.18.6.0/24", "", 0)
	e.CreateEndpoint(mastertest.CreateEP("default", "rel", "", "keep", ""))
	r := e.CreateEndpoint(mastertest.CreateEP("default", "rel", "", "gone", ""))
	before := e.Dump()
	code, b := e.Do("POST", "/plugin/releaseAddress", fmt.Sprintf(`{"NetworkID":"rel.default","IPv4Address":%q}`, r.EndpointConfig.IPAddress))
	if want := "address 198.18.6.2 is held by endpoint rel.default-gone and cannot be released; release it through its owner\n"; code != http.StatusConflict || b != want {
		t.Fatalf("release of an endpoint's address: %d %q, want 409 %q", code, b, want)
	}
	if d := mastertest.DiffDumps(before, e.Dump()); d != "" {
		t.Fatalf("refused release changed the store:\n%s", d)
	}
	if ni := e.NetOper("default", "rel"); ni.Oper.NumEndpoints != 2 || ni.Oper.AllocatedAddressesCount != 2 {
		t.Fatalf("after the refused release: %+v", ni.Oper)
	}
	e.OK("POST", "/plugin/deleteEndpoint", mastertest.DeleteEP("default", "rel", "", "gone"))
	if ni := e.NetOper("default", "rel"); ni.Oper.NumEndpoints != 1 || ni.Oper.AllocatedAddressesCount != 1 {
		t.Fatalf("after delete: %+v", ni.Oper)
	}
}
