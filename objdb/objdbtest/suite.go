package objdbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contiv/netplugin/objdb"
)

// Timings the suite holds every backend to (issue: lock and service
// expiry within TTL + 1 s, graceful hand-over under 1 s).
const (
	lockTTL       = 2 * time.Second
	serviceTTLSec = 2
	expirySlack   = time.Second
	handoverBound = time.Second
)

// RunSuite runs the backend-agnostic acceptance suite against one store.
// Every subtest works under its own root, so the store needs no cleaning.
func RunSuite(t *testing.T, b Backend, s Server) {
	tests := []struct {
		name string
		fn   func(t *testing.T, b Backend, s Server)
	}{
		{"KV", testKV},
		{"ListPages", testListPages},
		{"BadInput", testBadInput},
		{"RootsAreIsolated", testRootsIsolated},
		{"CAS", testCAS},
		{"CASConcurrentIncrements", testCASConcurrent},
		{"DeleteReturnsValue", testDeletePrevKV},
		{"Txn", testTxn},
		{"WatchOrder", testWatchOrder},
		{"WatchStartVersion", testWatchStartVersion},
		{"WatchAcrossStoreRestart", testWatchAcrossRestart},
		{"LockReleaseHandsOver", testLockRelease},
		{"LockHolderProcessDies", testLockHolderDies},
		{"LockLostWhenStoreUnreachable", testLockLost},
		{"Services", testServices},
		{"ServiceRegistrantDies", testServiceRegistrantDies},
		{"UnreachableStore", testUnreachable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, b, s) })
	}
}

// UniqueRoot returns a root no other test uses.
func UniqueRoot(t testing.TB) string {
	var r [6]byte
	rand.Read(r[:])
	name := strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())
	return "/objdbtest/" + name + "-" + hex.EncodeToString(r[:]) + "/contiv.io"
}

// Context is a test context bounded by d, cancelled on cleanup.
func Context(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Open connects a client under root and closes it on cleanup.
func Open(t testing.TB, b Backend, endpoint, root string) objdb.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := b.Connect(ctx, endpoint, root)
	if err != nil {
		t.Fatalf("%s: connect %s: %v", b.Name, endpoint, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func testKV(t *testing.T, b Backend, s Server) {
	ctx := Context(t, 30*time.Second)
	st := Open(t, b, s.Endpoint, UniqueRoot(t))

	if _, err := st.Get(ctx, "a/missing"); !errors.Is(err, objdb.ErrNotFound) {
		t.Fatalf("get missing: want ErrNotFound, got %v", err)
	} else if !strings.Contains(err.Error(), "key not found") {
		t.Errorf("not-found error %q lacks the original's 'key not found' text", err)
	}
	v1, err := st.Put(ctx, "a/b/c", []byte(`{"x":1}`))
	if err != nil {
		t.Fatalf("put: %v", err)
	}
	kv, err := st.Get(ctx, "a/b/c")
	if err != nil || string(kv.Value) != `{"x":1}` || kv.Key != "a/b/c" || kv.Version != v1 {
		t.Fatalf("get after put: %+v %v (put version %d)", kv, err, v1)
	}
	v2, err := st.Put(ctx, "a/b/c", []byte(`{"x":2}`))
	if err != nil || v2 <= v1 {
		t.Fatalf("overwrite: version %d after %d, err %v", v2, v1, err)
	}
	for _, k := range []string{"a/z", "a/b/d", "a/a", "b/x", "a/b/c/d"} {
		if _, err := st.Put(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	list, err := st.List(ctx, "a/")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, kv := range list {
		keys = append(keys, kv.Key)
	}
	want := "a/a a/b/c a/b/c/d a/b/d a/z"
	if got := strings.Join(keys, " "); got != want {
		t.Fatalf("list a/: got %q want %q", got, want)
	}
	empty, err := st.List(ctx, "nothing/here/")
	if err != nil || len(empty) != 0 {
		t.Fatalf("list missing prefix: %v %v", empty, err)
	}
	if err := st.Delete(ctx, "a/z"); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, "a/z"); err != nil {
		t.Fatalf("delete absent key: %v", err)
	}
	if _, err := st.Get(ctx, "a/z"); !errors.Is(err, objdb.ErrNotFound) {
		t.Fatalf("get deleted: %v", err)
	}
}

// testListPages walks a prefix in pages: every key once, in key order,
// none from outside the prefix; on a backend that pages (objdb.Pager) the
// walk is one snapshot, so a key written during it is not seen.
func testListPages(t *testing.T, b Backend, s Server) {
	ctx := Context(t, 30*time.Second)
	st := Open(t, b, s.Endpoint, UniqueRoot(t))
	var want []string
	for i := range 7 {
		k := fmt.Sprintf("p/k%02d", i)
		want = append(want, k)
		if _, err := st.Put(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"o/x", "q/x", "p2/x"} {
		if _, err := st.Put(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	_, pages := st.(objdb.Pager)
	for _, size := range []int{1, 3, 7, 100} {
		var got []string
		var sizes []int
		err := objdb.ListPages(ctx, st, "p/", size, func(page []objdb.KeyValue) error {
			sizes = append(sizes, len(page))
			for _, kv := range page {
				if string(kv.Value) != kv.Key || kv.Version == 0 {
					t.Errorf("page entry %+v", kv)
				}
				got = append(got, kv.Key)
			}
			if pages && len(sizes) == 1 {
				if _, err := st.Put(ctx, "p/k99", []byte("p/k99")); err != nil {
					return err
				}
				t.Cleanup(func() { _ = st.Delete(context.Background(), "p/k99") })
			}
			return nil
		})
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("size %d: got %v, want %v", size, got, want)
		}
		for i, n := range sizes {
			if n > size || (i < len(sizes)-1 && n != size) {
				t.Fatalf("size %d: page sizes %v", size, sizes)
			}
		}
		if err := st.Delete(ctx, "p/k99"); err != nil {
			t.Fatal(err)
		}
	}
	stop := errors.New("stop")
	n := 0
	if err := objdb.ListPages(ctx, st, "p/", 2, func([]objdb.KeyValue) error { n++; return stop }); err != stop || n != 1 {
		t.Fatalf("an error of fn must end the walk: %v after %d pages", err, n)
	}
	if err := objdb.ListPages(ctx, st, "nothing/", 2, func([]objdb.KeyValue) error { return stop }); err != nil {
		t.Fatalf("missing prefix: %v", err)
	}
}

func testBadInput(t *testing.T, b Backend, s Server) {
	ctx := Context(t, 30*time.Second)
	st := Open(t, b, s.Endpoint, UniqueRoot(t))
	for _, k := range []string{"", "/abs", "a//b", "a/../b", "./a"} {
		if _, err := st.Put(ctx, k, []byte("v")); !errors.Is(err, objdb.ErrInvalid) {
			t.Errorf("put %q: want ErrInvalid, got %v", k, err)
		}
		if _, err := st.Get(ctx, k); !errors.Is(err, objdb.ErrInvalid) {
			t.Errorf("get %q: want ErrInvalid, got %v", k, err)
		}
	}
	if list, _ := st.List(ctx, ""); len(list) != 0 {
		t.Errorf("a refused write changed the store: %v", list)
	}
	if err := st.RegisterService(ctx, objdb.ServiceInfo{ServiceName: "a/b", HostAddr: "127.0.0.1", Port: 1}); !errors.Is(err, objdb.ErrInvalid) {
		t.Errorf("register bad service name: want ErrInvalid, got %v", err)
	}
	if err := st.RegisterService(ctx, objdb.ServiceInfo{ServiceName: "x", HostAddr: "127.0.0.1", Port: 70000}); !errors.Is(err, objdb.ErrInvalid) {
		t.Errorf("register bad port: want ErrInvalid, got %v", err)
	}
	cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, ep := range []string{"http://[::1", "ftp://127.0.0.1:1", "http://127.0.0.1:notaport", ""} {
		start := time.Now()
		st2, err := b.Connect(cctx, ep, UniqueRoot(t))
		if err == nil {
			st2.Close()
			t.Errorf("connect %q: want an error", ep)
			continue
		}
		if !errors.Is(err, objdb.ErrInvalid) {
			t.Errorf("connect %q: want ErrInvalid, got %v", ep, err)
		}
		if time.Since(start) > time.Second {
			t.Errorf("connect %q: malformed endpoint took %v to refuse (should fail before dialing)", ep, time.Since(start))
		}
	}
}

func testRootsIsolated(t *testing.T, b Backend, s Server) {
	ctx := Context(t, 30*time.Second)
	a := Open(t, b, s.Endpoint, UniqueRoot(t))
	c := Open(t, b, s.Endpoint, UniqueRoot(t))
	if _, err := a.Put(ctx, "state/x", []byte("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, "state/x"); !errors.Is(err, objdb.ErrNotFound) {
		t.Fatalf("key of root A visible under root B: %v", err)
	}
	if !strings.HasSuffix(a.Root(), "contiv.io") || a.Root() == c.Root() {
		t.Fatalf("roots %q %q", a.Root(), c.Root())
	}
}

func testCAS(t *testing.T, b Backend, s Server) {
	ctx := Context(t, 30*time.Second)
	st := Open(t, b, s.Endpoint, UniqueRoot(t))

	v1, err := st.Put(ctx, "k", []byte("1"), objdb.WithCreateOnly())
	if err != nil {
		t.Fatalf("create-if-absent on absent key: %v", err)
	}
	if _, err := st.Put(ctx, "k", []byte("x"), objdb.WithCreateOnly()); !errors.Is(err, objdb.ErrConflict) {
		t.Fatalf("create-if-absent on existing key: want ErrConflict, got %v", err)
	}
	v2, err := st.Put(ctx, "k", []byte("2"), objdb.WithPrevVersion(v1))
	if err != nil {
		t.Fatalf("put-if-version with current version: %v", err)
	}
	if _, err := st.Put(ctx, "k", []byte("3"), objdb.WithPrevVersion(v1)); !errors.Is(err, objdb.ErrConflict) {
		t.Fatalf("put-if-version with stale version: want ErrConflict, got %v", err)
	}
	if err := st.Delete(ctx, "k", objdb.WithPrevVersion(v1)); !errors.Is(err, objdb.ErrConflict) {
		t.Fatalf("delete-if-version with stale version: want ErrConflict, got %v", err)
	}
	if kv, _ := st.Get(ctx, "k"); string(kv.Value) != "2" {
		t.Fatalf("a failed CAS changed the value: %q", kv.Value)
	}
	if err := st.Delete(ctx, "k", objdb.WithPrevVersion(v2)); err != nil {
		t.Fatalf("delete-if-version with current version: %v", err)
	}
	if err := st.Delete(ctx, "k", objdb.WithPrevVersion(v2)); err == nil {
		t.Fatal("delete-if-version of an absent key succeeded")
	}
}

func testDeletePrevKV(t *testing.T, b Backend, s Server) {
	ctx := Context(t, 60*time.Second)
	root := UniqueRoot(t)
	st := Open(t, b, s.Endpoint, root)

	v1, err := st.Put(ctx, "k", []byte("one"))
	if err != nil {
		t.Fatal(err)
	}
	var prev objdb.KeyValue
	if err := st.Delete(ctx, "k", objdb.WithPrevKV(&prev)); err != nil {
		t.Fatalf("delete returning: %v", err)
	}
	if prev.Key != "k" || string(prev.Value) != "one" || prev.Version != v1 {
		t.Fatalf("removed %+v, want k=one at version %d", prev, v1)
	}
	if _, err := st.Get(ctx, "k"); !errors.Is(err, objdb.ErrNotFound) {
		t.Fatalf("after the delete: %v", err)
	}
	prev = objdb.KeyValue{Value: []byte("stale")}
	if err := st.Delete(ctx, "k", objdb.WithPrevKV(&prev)); err != nil || prev.Version != 0 || prev.Value != nil {
		t.Fatalf("delete returning of an absent key: %+v, %v", prev, err)
	}

	// With a version: a stale one removes nothing, the current one
	// returns the value.
	v2, err := st.Put(ctx, "k", []byte("two"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, "k", objdb.WithPrevVersion(v1), objdb.WithPrevKV(&prev)); !errors.Is(err, objdb.ErrConflict) {
		t.Fatalf("delete returning at a stale version: want ErrConflict, got %v", err)
	}
	if err := st.Delete(ctx, "k", objdb.WithPrevVersion(v2), objdb.WithPrevKV(&prev)); err != nil || string(prev.Value) != "two" || prev.Version != v2 {
		t.Fatalf("delete returning at the current version: %+v, %v", prev, err)
	}
	if err := st.Delete(ctx, "k", objdb.WithPrevVersion(v2), objdb.WithPrevKV(&prev)); !errors.Is(err, objdb.ErrNotFound) {
		t.Fatalf("delete returning at a version of an absent key: want ErrNotFound, got %v", err)
	}
	if _, err := st.Put(ctx, "k", []byte("x"), objdb.WithPrevKV(&prev)); !errors.Is(err, objdb.ErrInvalid) {
		t.Fatalf("put with WithPrevKV: want ErrInvalid, got %v", err)
	}

	// Of concurrent deletes from two clients exactly one gets the value.
	other := Open(t, b, s.Endpoint, root)
	for round := range 20 {
		if _, err := st.Put(ctx, "race", []byte(strconv.Itoa(round))); err != nil {
			t.Fatal(err)
		}
		var got [2]objdb.KeyValue
		var wg sync.WaitGroup
		for i, c := range []objdb.Store{st, other} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := c.Delete(ctx, "race", objdb.WithPrevKV(&got[i])); err != nil {
					t.Errorf("concurrent delete returning: %v", err)
				}
			}()
		}
		wg.Wait()
		if n := btoi(got[0].Version != 0) + btoi(got[1].Version != 0); n != 1 {
			t.Fatalf("round %d: %d of 2 concurrent deletes received the value: %+v", round, n, got)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// casIncrements runs workers×n Update increments of one counter spread over
// the given clients and returns the final value.
func casIncrements(ctx context.Context, clients []objdb.Store, key string, workers, n int) (int, error) {
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(kv objdb.KV) {
			defer wg.Done()
			for i := 0; i < n; i++ {
				_, err := objdb.Update(ctx, kv, key, func(cur []byte, exists bool) ([]byte, error) {
					v := 0
					if exists {
						var err error
						if v, err = strconv.Atoi(string(cur)); err != nil {
							return nil, err
						}
					}
					return []byte(strconv.Itoa(v + 1)), nil
				})
				if err != nil {
					errc <- err
					return
				}
			}
		}(clients[w%len(clients)])
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return 0, err
	}
	kv, err := clients[0].Get(ctx, key)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(string(kv.Value))
}

func testCASConcurrent(t *testing.T, b Backend, s Server) {
	ctx := Context(t, 120*time.Second)
	root := UniqueRoot(t)
	clients := []objdb.Store{Open(t, b, s.Endpoint, root), Open(t, b, s.Endpoint, root)}
	const workers, n = 32, 10
	got, err := casIncrements(ctx, clients, "counter", workers, n)
	if err != nil {
		t.Fatal(err)
	}
	if got != workers*n {
		t.Fatalf("32 goroutines × %d CAS increments ended at %d, want %d", n, got, workers*n)
	}
}

// CollectEvents reads n watch events (none with Err set) or fails after d.
func CollectEvents(t testing.TB, ch <-chan objdb.Event, n int, d time.Duration) []objdb.Event {
	t.Helper()
	var out []objdb.Event
	timeout := time.After(d)
	for len(out) < n {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("watch closed after %d of %d events", len(out), n)
			}
			if ev.Err != nil {
				t.Fatalf("watch error after %d events: %v", len(out), ev.Err)
			}
			out = append(out, ev)
		case <-timeout:
			t.Fatalf("got %d of %d events in %v: %s", len(out), n, d, describe(out))
		}
	}
	return out
}

// expectQuiet fails if another event arrives within d.
func expectQuiet(t *testing.T, ch <-chan objdb.Event, d time.Duration) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if ok {
			t.Fatalf("unexpected extra event %s %s=%q", ev.Type, ev.Key, ev.Value)
		}
	case <-time.After(d):
	}
}

func describe(evs []objdb.Event) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "%s %s=%q@%d; ", e.Type, e.Key, e.Value, e.Version)
	}
	return b.String()
}

func testWatchOrder(t *testing.T, b Backend, s Server) {
	ctx := Context(t, 60*time.Second)
	root := UniqueRoot(t)
	st := Open(t, b, s.Endpoint, root)
	writer := Open(t, b, s.Endpoint, root)
	if _, err := st.Put(ctx, "other/x", []byte("x")); err != nil {
		t.Fatal(err)
	}
	ch, err := st.Watch(ctx, "w/")
	if err != nil {
		t.Fatal(err)
	}
	// A consul watch needs its first blocking query in flight; give every
	// backend the same short settle time.
	time.Sleep(300 * time.Millisecond)
	type op struct {
		del bool
		key string
		val string
	}
	var ops []op
	for i := 0; i < 30; i++ {
		ops = append(ops, op{key: fmt.Sprintf("w/k%02d", i), val: strconv.Itoa(i)})
		if i%5 == 4 {
			ops = append(ops, op{del: true, key: fmt.Sprintf("w/k%02d", i-2)})
		}
	}
	for _, o := range ops {
		if o.del {
			if err := writer.Delete(ctx, o.key); err != nil {
				t.Fatal(err)
			}
		} else if _, err := writer.Put(ctx, o.key, []byte(o.val)); err != nil {
			t.Fatal(err)
		}
		if _, err := writer.Put(ctx, "other/y", []byte(o.key)); err != nil { // outside the prefix
			t.Fatal(err)
		}
	}
	evs := CollectEvents(t, ch, len(ops), 20*time.Second)
	last := int64(0)
	for i, o := range ops {
		e := evs[i]
		wantType := objdb.EventPut
		if o.del {
			wantType = objdb.EventDelete
		}
		if e.Type != wantType || e.Key != o.key || (!o.del && string(e.Value) != o.val) {
			t.Fatalf("event %d: got %s %s=%q, want %v %s=%q\nall: %s", i, e.Type, e.Key, e.Value, wantType, o.key, o.val, describe(evs))
		}
		if o.del && len(e.PrevValue) == 0 {
			t.Errorf("delete event %d for %s has no previous value", i, e.Key)
		}
		if e.Version < last {
			t.Fatalf("event %d version %d went backwards from %d", i, e.Version, last)
		}
		last = e.Version
	}
	expectQuiet(t, ch, 500*time.Millisecond)
}

func testWatchStartVersion(t *testing.T, b Backend, s Server) {
	ctx := Context(t, 60*time.Second)
	st := Open(t, b, s.Endpoint, UniqueRoot(t))
	var from int64
	for i := 0; i < 5; i++ {
		v, err := st.Put(ctx, fmt.Sprintf("p/%d", i), []byte(strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			from = v
		}
	}
	ch, err := st.Watch(ctx, "p/", objdb.WithStartVersion(from))
	if err != nil {
		t.Fatal(err)
	}
	evs := CollectEvents(t, ch, 3, 10*time.Second)
	for i, e := range evs {
		if want := fmt.Sprintf("p/%d", i+2); e.Key != want || e.Type != objdb.EventPut {
			t.Fatalf("replayed event %d: %s %s, want put %s (all: %s)", i, e.Type, e.Key, want, describe(evs))
		}
	}
	if _, err := st.Put(ctx, "p/9", []byte("9")); err != nil {
		t.Fatal(err)
	}
	if e := CollectEvents(t, ch, 1, 10*time.Second)[0]; e.Key != "p/9" {
		t.Fatalf("live event after replay: %s", e.Key)
	}
	expectQuiet(t, ch, 300*time.Millisecond)
}

func testWatchAcrossRestart(t *testing.T, b Backend, s Server) {
	if s.Restart == nil {
		t.Skipf("%s: this store cannot be restarted keeping its data", b.Name)
	}
	ctx := Context(t, 120*time.Second)
	root := UniqueRoot(t)
	st := Open(t, b, s.Endpoint, root)
	ch, err := st.Watch(ctx, "r/")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	const n = 20
	for i := 0; i < n; i++ {
		if _, err := st.Put(ctx, fmt.Sprintf("r/%02d", i), []byte("before")); err != nil {
			t.Fatal(err)
		}
	}
	s.Restart(t)
	for i := n; i < 2*n; i++ {
		if _, err := st.Put(ctx, fmt.Sprintf("r/%02d", i), []byte("after")); err != nil {
			t.Fatalf("put %d after restart: %v", i, err)
		}
	}
	evs := CollectEvents(t, ch, 2*n, 60*time.Second)
	for i, e := range evs {
		if want := fmt.Sprintf("r/%02d", i); e.Key != want {
			t.Fatalf("event %d is %s, want %s: lost or duplicated across the restart (all: %s)", i, e.Key, want, describe(evs))
		}
	}
	expectQuiet(t, ch, time.Second)
}

// NextLockEvent waits for the next lock event or fails after d.
func NextLockEvent(t testing.TB, l objdb.Lock, d time.Duration) objdb.LockEvent {
	t.Helper()
	select {
	case ev, ok := <-l.Events():
		if !ok {
			t.Fatal("lock events closed")
		}
		return ev
	case <-time.After(d):
		t.Fatalf("no lock event within %v", d)
	}
	return objdb.LockEvent{}
}

func noLockEvent(t *testing.T, l objdb.Lock, d time.Duration) {
	t.Helper()
	select {
	case ev := <-l.Events():
		t.Fatalf("unexpected lock event %s (%v)", ev.Type, ev.Err)
	case <-time.After(d):
	}
}

func newLock(t *testing.T, st objdb.Store, holder string) objdb.Lock {
	t.Helper()
	l, err := st.NewLock("netmaster/leader", holder, lockTTL)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		l.Release(ctx)
	})
	return l
}

func testLockRelease(t *testing.T, b Backend, s Server) {
	ctx := Context(t, 60*time.Second)
	root := UniqueRoot(t)
	a := newLock(t, Open(t, b, s.Endpoint, root), "10.0.0.1:9999")
	if ev := NextLockEvent(t, a, 10*time.Second); ev.Type != objdb.LockAcquired {
		t.Fatalf("first contender: %s %v", ev.Type, ev.Err)
	}
	if !a.IsAcquired() {
		t.Fatal("IsAcquired false after acquired event")
	}
	stB := Open(t, b, s.Endpoint, root)
	bl := newLock(t, stB, "10.0.0.2:9999")
	noLockEvent(t, bl, 500*time.Millisecond)
	if h, err := bl.Holder(ctx); err != nil || h != "10.0.0.1:9999" {
		t.Fatalf("holder seen by the loser: %q %v", h, err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	start := time.Now()
	ev := NextLockEvent(t, bl, 5*time.Second)
	took := time.Since(start)
	if ev.Type != objdb.LockAcquired {
		t.Fatalf("second contender: %s %v", ev.Type, ev.Err)
	}
	t.Logf("%s: graceful hand-over took %v", b.Name, took)
	if took > handoverBound {
		t.Fatalf("graceful release handed over in %v, want < %v", took, handoverBound)
	}
	if h, _ := bl.Holder(ctx); h != "10.0.0.2:9999" {
		t.Fatalf("holder after hand-over: %q", h)
	}
	if a.IsAcquired() {
		t.Fatal("released lock still reports acquired")
	}
}

func testLockHolderDies(t *testing.T, b Backend, s Server) {
	ctx := Context(t, 60*time.Second)
	root := UniqueRoot(t)
	proc := startHelper(t, "lock", map[string]string{
		envEndpoint: s.Endpoint, envRoot: root, envName: "netmaster/leader",
		envHolder: "10.0.0.9:9999", envTTL: strconv.Itoa(int(lockTTL / time.Second)),
	}, 20*time.Second)
	st := Open(t, b, s.Endpoint, root)
	l := newLock(t, st, "10.0.0.2:9999")
	noLockEvent(t, l, 500*time.Millisecond)
	if h, _ := l.Holder(ctx); h != "10.0.0.9:9999" {
		t.Fatalf("holder %q, want the helper process", h)
	}
	proc.kill()
	start := time.Now()
	ev := NextLockEvent(t, l, lockTTL+10*time.Second)
	took := time.Since(start)
	if ev.Type != objdb.LockAcquired {
		t.Fatalf("after holder death: %s %v", ev.Type, ev.Err)
	}
	t.Logf("%s: lock taken over %v after SIGKILL of the holder (TTL %v)", b.Name, took, lockTTL)
	if took > lockTTL+expirySlack {
		t.Fatalf("took over after %v, want within TTL+1s = %v", took, lockTTL+expirySlack)
	}
}

func testLockLost(t *testing.T, b Backend, s Server) {
	ctx := Context(t, 90*time.Second)
	root := UniqueRoot(t)
	px := NewProxy(t, s.Addr)
	viaProxy := Open(t, b, s.NewProxyEndpoint(px.Addr()), root)
	a := newLock(t, viaProxy, "10.0.0.1:9999")
	if ev := NextLockEvent(t, a, 10*time.Second); ev.Type != objdb.LockAcquired {
		t.Fatalf("acquire via proxy: %s %v", ev.Type, ev.Err)
	}
	direct := Open(t, b, s.Endpoint, root)
	bl := newLock(t, direct, "10.0.0.2:9999")
	px.Cut()
	start := time.Now()
	for {
		ev := NextLockEvent(t, a, lockTTL+15*time.Second)
		if ev.Type == objdb.LockLost {
			break
		}
		if ev.Type == objdb.LockAcquired {
			t.Fatal("acquired again while the store is unreachable")
		}
	}
	t.Logf("%s: holder saw LockLost %v after the store became unreachable (TTL %v)", b.Name, time.Since(start), lockTTL)
	if a.IsAcquired() {
		t.Fatal("IsAcquired after LockLost")
	}
	if ev := NextLockEvent(t, bl, lockTTL+10*time.Second); ev.Type != objdb.LockAcquired {
		t.Fatalf("other contender after expiry: %s %v", ev.Type, ev.Err)
	}
	// The store comes back: the old holder campaigns again and wins once
	// the new holder releases.
	px.Restore()
	if err := bl.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for {
		ev := NextLockEvent(t, a, lockTTL+20*time.Second)
		if ev.Type == objdb.LockAcquired {
			break
		}
	}
}

// NextServiceEvent waits for the next service event or fails after d.
func NextServiceEvent(t testing.TB, ch <-chan objdb.ServiceEvent, d time.Duration) objdb.ServiceEvent {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("service watch closed")
		}
		return ev
	case <-time.After(d):
		t.Fatalf("no service event within %v", d)
	}
	return objdb.ServiceEvent{}
}

func testServices(t *testing.T, b Backend, s Server) {
	ctx := Context(t, 60*time.Second)
	root := UniqueRoot(t)
	st := Open(t, b, s.Endpoint, root)
	watcher := Open(t, b, s.Endpoint, root)
	if l, err := st.GetService(ctx, "netmaster"); err != nil || len(l) != 0 {
		t.Fatalf("no instance yet: %v %v", l, err)
	}
	info := objdb.ServiceInfo{ServiceName: "netmaster", Role: "follower", TTL: serviceTTLSec, HostAddr: "127.0.0.1", Port: 9999}
	if err := st.RegisterService(ctx, info); err != nil {
		t.Fatal(err)
	}
	// The stored value is the original's JSON (Go field names).
	kv, err := st.Get(ctx, objdb.ServiceKey(info))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(kv.Value, &raw); err != nil || raw["ServiceName"] != "netmaster" || raw["HostAddr"] != "127.0.0.1" {
		t.Fatalf("stored service JSON %s (%v)", kv.Value, err)
	}
	ch, err := watcher.WatchService(ctx, "netmaster")
	if err != nil {
		t.Fatal(err)
	}
	if ev := NextServiceEvent(t, ch, 10*time.Second); ev.Type != objdb.ServiceAdd || ev.Info.Role != "follower" {
		t.Fatalf("initial event %+v", ev)
	}
	// Keep-alive: the instance outlives several TTLs without a duplicate add.
	time.Sleep(time.Duration(serviceTTLSec)*time.Second*2 + 500*time.Millisecond)
	if l, _ := st.GetService(ctx, "netmaster"); len(l) != 1 {
		t.Fatalf("instance did not survive its TTL while registered: %v", l)
	}
	select {
	case ev := <-ch:
		t.Fatalf("keep-alive produced an event: %+v", ev)
	default:
	}
	// Re-registering replaces the value (new role).
	info.Role = "leader"
	if err := st.RegisterService(ctx, info); err != nil {
		t.Fatal(err)
	}
	if ev := NextServiceEvent(t, ch, 10*time.Second); ev.Type != objdb.ServiceAdd || ev.Info.Role != "leader" {
		t.Fatalf("re-registration event %+v", ev)
	}
	if l, _ := st.GetService(ctx, "netmaster"); len(l) != 1 || l[0].Role != "leader" {
		t.Fatalf("after re-registration: %+v", l)
	}
	second := info
	second.Port = 9998
	if err := st.RegisterService(ctx, second); err != nil {
		t.Fatal(err)
	}
	if ev := NextServiceEvent(t, ch, 10*time.Second); ev.Type != objdb.ServiceAdd || ev.Info.Port != 9998 {
		t.Fatalf("second instance event %+v", ev)
	}
	if err := st.DeregisterService(ctx, info); err != nil {
		t.Fatal(err)
	}
	if ev := NextServiceEvent(t, ch, 10*time.Second); ev.Type != objdb.ServiceDel || ev.Info.Port != 9999 {
		t.Fatalf("deregistration event %+v", ev)
	}
	if l, _ := st.GetService(ctx, "netmaster"); len(l) != 1 || l[0].Port != 9998 {
		t.Fatalf("after deregistration: %+v", l)
	}
}

func testServiceRegistrantDies(t *testing.T, b Backend, s Server) {
	ctx := Context(t, 60*time.Second)
	root := UniqueRoot(t)
	watcher := Open(t, b, s.Endpoint, root)
	ch, err := watcher.WatchService(ctx, "netplugin")
	if err != nil {
		t.Fatal(err)
	}
	proc := startHelper(t, "service", map[string]string{
		envEndpoint: s.Endpoint, envRoot: root, envName: "netplugin",
		envTTL: strconv.Itoa(serviceTTLSec), envPort: "9002",
	}, 20*time.Second)
	if ev := NextServiceEvent(t, ch, 10*time.Second); ev.Type != objdb.ServiceAdd || ev.Info.Port != 9002 || ev.Info.Hostname != "helper" {
		t.Fatalf("add from helper: %+v", ev)
	}
	proc.kill()
	start := time.Now()
	ev := NextServiceEvent(t, ch, time.Duration(serviceTTLSec)*time.Second+15*time.Second)
	took := time.Since(start)
	if ev.Type != objdb.ServiceDel || ev.Info.Port != 9002 {
		t.Fatalf("after registrant death: %+v", ev)
	}
	ttl := time.Duration(serviceTTLSec) * time.Second
	t.Logf("%s: service delete seen %v after SIGKILL (TTL %v)", b.Name, took, ttl)
	if took > ttl+expirySlack {
		t.Fatalf("delete arrived after %v, want within TTL+1s = %v", took, ttl+expirySlack)
	}
	if l, _ := watcher.GetService(ctx, "netplugin"); len(l) != 0 {
		t.Fatalf("dead instance still listed: %+v", l)
	}
	// Re-registration gives an add.
	startHelper(t, "service", map[string]string{
		envEndpoint: s.Endpoint, envRoot: root, envName: "netplugin",
		envTTL: strconv.Itoa(serviceTTLSec), envPort: "9002",
	}, 20*time.Second)
	if ev := NextServiceEvent(t, ch, 10*time.Second); ev.Type != objdb.ServiceAdd || ev.Info.Port != 9002 {
		t.Fatalf("re-registration: %+v", ev)
	}
}

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func testUnreachable(t *testing.T, b Backend, s Server) {
	// Nothing listens: connecting fails clearly and in bounded time.
	dead := s.NewProxyEndpoint(freeAddr(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	st, err := b.Connect(ctx, dead, UniqueRoot(t))
	if err == nil {
		st.Close()
		t.Fatal("connect to a dead endpoint succeeded")
	}
	t.Logf("%s: connect to a dead endpoint failed after %v: %v", b.Name, time.Since(start), err)
	if !errors.Is(err, objdb.ErrUnavailable) {
		t.Errorf("want ErrUnavailable, got %v", err)
	}
	if time.Since(start) > 60*time.Second {
		t.Errorf("failure took %v: not bounded", time.Since(start))
	}

	// A connected client whose store goes away: operations fail clearly
	// and in bounded time, and work again when it is back.
	px := NewProxy(t, s.Addr)
	c := Open(t, b, s.NewProxyEndpoint(px.Addr()), UniqueRoot(t))
	if _, err := c.Put(ctx, "x", []byte("1")); err != nil {
		t.Fatal(err)
	}
	px.Cut()
	start = time.Now()
	_, err = c.Get(ctx, "x")
	if err == nil {
		t.Fatal("get through a cut connection succeeded")
	}
	t.Logf("%s: get during outage failed after %v: %v", b.Name, time.Since(start), err)
	if !errors.Is(err, objdb.ErrUnavailable) {
		t.Errorf("want ErrUnavailable, got %v", err)
	}
	if !strings.Contains(err.Error(), `"x"`) && !strings.Contains(err.Error(), "/x") {
		t.Errorf("error does not name the key: %v", err)
	}
	if time.Since(start) > 60*time.Second {
		t.Errorf("failure took %v: not bounded", time.Since(start))
	}
	px.Restore()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if kv, err := c.Get(ctx, "x"); err == nil && string(kv.Value) == "1" {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("client did not recover after the store came back: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
