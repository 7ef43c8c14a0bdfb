package consul

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/objdbtest"
)

func TestParseEndpoint(t *testing.T) {
	good := map[string]string{
		"127.0.0.1:8500":         "127.0.0.1:8500",
		"http://127.0.0.1:8500":  "127.0.0.1:8500",
		"http://localhost:1/":    "localhost:1",
		"https://127.0.0.1:8500": "127.0.0.1:8500",
		"[::1]:8500":             "[::1]:8500",
		" consul.local:8500 ":    "consul.local:8500",
	}
	for in, want := range good {
		got, err := ParseEndpoint(in)
		if err != nil || got != want {
			t.Errorf("ParseEndpoint(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{
		"", "http://", "127.0.0.1", "http://[::1", "ftp://127.0.0.1:1",
		"http://127.0.0.1:notaport", "127.0.0.1:0", "127.0.0.1:70000", ":8500",
		"http://127.0.0.1:8500/v1", "user@127.0.0.1:8500", "consul://127.0.0.1:8500",
	} {
		_, err := ParseEndpoint(in)
		if !errors.Is(err, objdb.ErrInvalid) {
			t.Errorf("ParseEndpoint(%q): want ErrInvalid, got %v", in, err)
			continue
		}
		if in != "" && !strings.Contains(err.Error(), fmt.Sprintf("%q", in)) {
			t.Errorf("ParseEndpoint(%q): error does not name the endpoint: %v", in, err)
		}
	}
}

func TestNewRefusesBadConfigBeforeDialing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for name, cfg := range map[string]Config{
		"no endpoint":  {},
		"bad endpoint": {Endpoints: []string{"127.0.0.1:1", "http://127.0.0.1:x"}},
		"bad root":     {Endpoints: []string{"127.0.0.1:1"}, Root: "/a/../b"},
	} {
		start := time.Now()
		c, err := New(ctx, cfg)
		if err == nil {
			c.Close()
		}
		if !errors.Is(err, objdb.ErrInvalid) {
			t.Errorf("%s: want ErrInvalid, got %v", name, err)
		}
		if d := time.Since(start); d > 100*time.Millisecond {
			t.Errorf("%s: took %v", name, d)
		}
	}
}

func TestNewUnreachableIsBounded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err := New(ctx, Config{Endpoints: []string{"127.0.0.1:1"}, Retries: 2, RetryBackoff: 10 * time.Millisecond, Logger: quietLogger()})
	if !errors.Is(err, objdb.ErrUnavailable) || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("want ErrUnavailable naming the endpoint, got %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v", d)
	}
	// The caller's deadline wins over the retry budget.
	short, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	start = time.Now()
	_, err = New(short, Config{Endpoints: []string{"127.0.0.1:1"}, Retries: 100, Logger: quietLogger()})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want the context's error, got %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("ignored the deadline: took %v", d)
	}
}

func TestSessionTTL(t *testing.T) {
	c := &Client{}
	for _, tc := range []struct {
		ttl, min, want time.Duration
	}{
		{2 * time.Second, time.Second, time.Second},
		{10 * time.Second, time.Second, 5 * time.Second},
		{time.Second, time.Second, time.Second},
		{10 * time.Second, 10 * time.Second, 10 * time.Second},
		{3 * time.Second, 0, 1500 * time.Millisecond},
		{100 * time.Hour, time.Second, 24 * time.Hour},
	} {
		c.ttlMin.Store(int64(tc.min))
		if got := c.sessionTTL(tc.ttl); got != tc.want {
			t.Errorf("sessionTTL(%v) with min %v = %v, want %v", tc.ttl, tc.min, got, tc.want)
		}
	}
}

func quietLogger() *logrus.Entry {
	l := logrus.New()
	l.SetLevel(logrus.ErrorLevel)
	return logrus.NewEntry(l)
}

// env is one agent shared by the subtests of TestConsul; each subtest
// works under its own root.
type env struct {
	s objdbtest.Server
}

func (e env) open(t *testing.T, root string) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := New(ctx, Config{Endpoints: []string{"http://" + e.s.Endpoint}, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestConsul(t *testing.T) {
	e := env{s: objdbtest.StartConsulAgent(t)}
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, env)
	}{
		{"RootAndKeys", testRootAndKeys},
		{"CAS", testCAS},
		{"WatchOrderWithSlowConsumer", testWatchSlowConsumer},
		{"WatchStartVersion", testWatchStartVersion},
		{"WatchStopsOnClose", testWatchStopsOnClose},
		{"SessionFacts", testSessionFacts},
		{"LockHandover", testLockHandover},
		{"LockCancelResigns", testLockCancelResigns},
		{"LockExpiresAfterClose", testLockExpiresAfterClose},
		{"ServiceReplaceAndDeregister", testServiceReplace},
		{"ServiceExpiresAfterClose", testServiceExpiresAfterClose},
		{"ClosedClient", testClosedClient},
		{"WatchSurvivesOutage", testWatchSurvivesOutage},
		{"ServiceComesBackAfterOutage", testServiceAfterOutage},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, e) })
	}
}

func testRootAndKeys(t *testing.T, e env) {
	ctx := objdbtest.Context(t, 10*time.Second)
	root := objdbtest.UniqueRoot(t)
	c := e.open(t, root)
	if want := strings.TrimPrefix(root, "/"); c.Root() != want {
		t.Fatalf("Root() = %q, want %q", c.Root(), want)
	}
	if _, err := c.Put(ctx, "state/a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	// The consul key is the root without its leading slash.
	pair, _, err := c.api.KV().Get(strings.TrimPrefix(root, "/")+"/state/a", nil)
	if err != nil || pair == nil || string(pair.Value) != "1" {
		t.Fatalf("raw consul key: %+v %v", pair, err)
	}
	// A nil value is stored as an empty one.
	if _, err := c.Put(ctx, "state/empty", nil); err != nil {
		t.Fatal(err)
	}
	if kv, err := c.Get(ctx, "state/empty"); err != nil || len(kv.Value) != 0 {
		t.Fatalf("empty value: %+v %v", kv, err)
	}
	all, err := c.List(ctx, "")
	if err != nil || len(all) != 2 || all[0].Key != "state/a" {
		t.Fatalf("list root: %+v %v", all, err)
	}
	if _, err := c.List(ctx, "/abs"); !errors.Is(err, objdb.ErrInvalid) {
		t.Fatalf("list with absolute prefix: %v", err)
	}
}

func testCAS(t *testing.T, e env) {
	ctx := objdbtest.Context(t, 10*time.Second)
	c := e.open(t, objdbtest.UniqueRoot(t))
	v1, err := c.Put(ctx, "k", []byte("a"), objdb.WithCreateOnly())
	if err != nil {
		t.Fatal(err)
	}
	kv, _ := c.Get(ctx, "k")
	if kv.Version != v1 {
		t.Fatalf("Put returned %d, Get sees %d", v1, kv.Version)
	}
	if _, err := c.Put(ctx, "k", []byte("b"), objdb.WithCreateOnly()); !errors.Is(err, objdb.ErrConflict) || !strings.Contains(err.Error(), `"k"`) {
		t.Fatalf("create-only on existing key: %v", err)
	}
	if _, err := c.Put(ctx, "absent", []byte("b"), objdb.WithPrevVersion(v1)); !errors.Is(err, objdb.ErrConflict) {
		t.Fatalf("CAS on an absent key: %v", err)
	}
	v2, err := c.Put(ctx, "k", []byte("c"), objdb.WithPrevVersion(v1))
	if err != nil || v2 <= v1 {
		t.Fatalf("CAS: %d %v", v2, err)
	}
	if err := c.Delete(ctx, "k", objdb.WithPrevVersion(v1)); !errors.Is(err, objdb.ErrConflict) {
		t.Fatalf("stale delete: %v", err)
	}
	if err := c.Delete(ctx, "absent", objdb.WithPrevVersion(v1)); !errors.Is(err, objdb.ErrNotFound) {
		t.Fatalf("versioned delete of an absent key: %v", err)
	}
	if err := c.Delete(ctx, "k", objdb.WithPrevVersion(v2)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, "k"); !errors.Is(err, objdb.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	// Update over the backend (the IPAM pattern).
	for i := 0; i < 3; i++ {
		if _, err := objdb.Update(ctx, c, "n", func(cur []byte, exists bool) ([]byte, error) {
			return append(cur, 'x'), nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if kv, _ := c.Get(ctx, "n"); string(kv.Value) != "xxx" {
		t.Fatalf("Update: %q", kv.Value)
	}
}

// A consumer that reads only after all writes still gets every change in
// store order, deletes placed at their tombstone index.
func testWatchSlowConsumer(t *testing.T, e env) {
	ctx := objdbtest.Context(t, 30*time.Second)
	root := objdbtest.UniqueRoot(t)
	w := e.open(t, root)
	c := e.open(t, root)
	if _, err := c.Put(ctx, "w/pre", []byte("p0")); err != nil {
		t.Fatal(err)
	}
	ch, err := w.Watch(ctx, "w/")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	var want []string
	put := func(k, v string) {
		ver, err := c.Put(ctx, k, []byte(v))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprintf("put %s=%s@%d", k, v, ver))
	}
	del := func(k, prev string) {
		if err := c.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprintf("delete %s prev=%s", k, prev))
	}
	put("w/pre", "p1")
	for i := 0; i < 10; i++ {
		put(fmt.Sprintf("w/%d", i), "v")
		if i%3 == 2 {
			del(fmt.Sprintf("w/%d", i-1), "v")
		}
	}
	del("w/pre", "p1")
	evs := objdbtest.CollectEvents(t, ch, len(want), 10*time.Second)
	var last int64
	for i, ev := range evs {
		var got string
		if ev.Type == objdb.EventPut {
			got = fmt.Sprintf("put %s=%s@%d", ev.Key, ev.Value, ev.Version)
		} else {
			got = fmt.Sprintf("delete %s prev=%s", ev.Key, ev.PrevValue)
		}
		if got != want[i] {
			t.Fatalf("event %d: got %q want %q\nall: %+v", i, got, want[i], evs)
		}
		if ev.Version <= last {
			t.Fatalf("event %d: version %d not above %d", i, ev.Version, last)
		}
		last = ev.Version
	}
	if evs[0].Type != objdb.EventPut || string(evs[0].PrevValue) != "p0" {
		t.Fatalf("modify event lacks the previous value: %+v", evs[0])
	}
}

// WithStartVersion replays keys written after the version. A key deleted
// after it cannot be replayed (consul shows clients no tombstones): this
// test pins that documented limit.
func testWatchStartVersion(t *testing.T, e env) {
	ctx := objdbtest.Context(t, 20*time.Second)
	c := e.open(t, objdbtest.UniqueRoot(t))
	from, err := c.Put(ctx, "s/a", []byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, "s/gone", []byte("g")); err != nil {
		t.Fatal(err)
	}
	vb, _ := c.Put(ctx, "s/b", []byte("b"))
	if err := c.Delete(ctx, "s/gone"); err != nil {
		t.Fatal(err)
	}
	ch, err := c.Watch(ctx, "s/", objdb.WithStartVersion(from))
	if err != nil {
		t.Fatal(err)
	}
	ev := objdbtest.CollectEvents(t, ch, 1, 5*time.Second)[0]
	if ev.Key != "s/b" || ev.Version != vb {
		t.Fatalf("replay: %+v", ev)
	}
	select {
	case ev := <-ch:
		t.Fatalf("unexpected replay %+v (if this is the delete of s/gone, the documented limit is gone: update the docs)", ev)
	case <-time.After(300 * time.Millisecond):
	}
}

func testWatchStopsOnClose(t *testing.T, e env) {
	ctx := objdbtest.Context(t, 20*time.Second)
	c := e.open(t, objdbtest.UniqueRoot(t))
	ch, err := c.Watch(ctx, "x/")
	if err != nil {
		t.Fatal(err)
	}
	sch, err := c.WatchService(ctx, "svc")
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	ch2, err := c.Watch(wctx, "y/")
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	for range ch2 {
	}
	c.Close()
	for range ch {
	}
	for range sch {
	}
}

// testSessionFacts measures what the package comment relies on: consul
// refuses a TTL below session_ttl_min, and invalidates an unrenewed
// session between TTL and 2×TTL after its creation.
func testSessionFacts(t *testing.T, e env) {
	c := e.open(t, objdbtest.UniqueRoot(t))
	sess := c.api.Session()
	_, _, err := sess.CreateNoChecks(&api.SessionEntry{TTL: "500ms"}, nil)
	var se api.StatusError
	if !errors.As(err, &se) {
		t.Fatalf("TTL 500ms below session_ttl_min 1s: want a status error, got %v", err)
	}
	t.Logf("consul answers a TTL below session_ttl_min with HTTP %d: %s", se.Code, se.Body)
	ctx := objdbtest.Context(t, 10*time.Second)
	if m, err := c.agentTTLMin(ctx); err != nil || m != time.Second {
		t.Fatalf("agent session_ttl_min: %v %v", m, err)
	}
	id, _, err := sess.CreateNoChecks(&api.SessionEntry{TTL: "1s", Behavior: api.SessionBehaviorDelete}, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for {
		info, _, err := sess.Info(id, nil)
		if err != nil {
			t.Fatal(err)
		}
		if info == nil {
			break
		}
		if time.Since(start) > 5*time.Second {
			t.Fatal("session with TTL 1s still valid after 5s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(start)
	t.Logf("unrenewed session with TTL 1s invalidated after %v", took)
	if took < 900*time.Millisecond || took > 3*time.Second {
		t.Fatalf("invalidation after %v: outside TTL..2×TTL (+1 s slack for a busy machine)", took)
	}
}

func testLockHandover(t *testing.T, e env) {
	ctx := objdbtest.Context(t, 20*time.Second)
	root := objdbtest.UniqueRoot(t)
	a, b := e.open(t, root), e.open(t, root)
	la, err := a.NewLock("leader", "A", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	lb, _ := b.NewLock("leader", "B", 2*time.Second)
	if h, err := la.Holder(ctx); err != nil || h != "" {
		t.Fatalf("holder of a free lock: %q %v", h, err)
	}
	if err := la.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if err := la.Acquire(ctx); err == nil {
		t.Fatal("second Acquire accepted")
	}
	if ev := objdbtest.NextLockEvent(t, la, 5*time.Second); ev.Type != objdb.LockAcquired {
		t.Fatalf("A: %v", ev)
	}
	if err := lb.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if lb.IsAcquired() {
		t.Fatal("both hold the lock")
	}
	if h, _ := lb.Holder(ctx); h != "A" {
		t.Fatalf("holder %q", h)
	}
	start := time.Now()
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if ev := objdbtest.NextLockEvent(t, la, time.Second); ev.Type != objdb.LockReleased {
		t.Fatalf("A after release: %v", ev)
	}
	if _, ok := <-la.Events(); ok {
		t.Fatal("A's events not closed after release")
	}
	if err := la.Release(ctx); err != nil {
		t.Fatalf("second release: %v", err)
	}
	if ev := objdbtest.NextLockEvent(t, lb, 2*time.Second); ev.Type != objdb.LockAcquired {
		t.Fatalf("B: %v", ev)
	}
	t.Logf("hand-over in %v", time.Since(start))
	if h, _ := la.Holder(ctx); h != "B" {
		t.Fatalf("holder after hand-over %q", h)
	}
	// The holder's key is changed behind its back: it reports the loss
	// and campaigns again.
	if _, err := a.Put(ctx, objdb.LockKey("leader"), []byte("intruder")); err != nil {
		t.Fatal(err)
	}
	if ev := objdbtest.NextLockEvent(t, lb, 5*time.Second); ev.Type != objdb.LockLost || ev.Err == nil {
		t.Fatalf("B after its value changed: %+v", ev)
	}
	// Dropping the lost session deleted the key (behaviour delete).
	if ev := objdbtest.NextLockEvent(t, lb, 5*time.Second); ev.Type != objdb.LockAcquired {
		t.Fatalf("B campaigning again: %+v", ev)
	}
}

// Cancelling Acquire's ctx stops the campaign and resigns.
func testLockCancelResigns(t *testing.T, e env) {
	ctx := objdbtest.Context(t, 20*time.Second)
	root := objdbtest.UniqueRoot(t)
	a, b := e.open(t, root), e.open(t, root)
	la, _ := a.NewLock("leader", "A", 10*time.Second)
	actx, cancel := context.WithCancel(ctx)
	if err := la.Acquire(actx); err != nil {
		t.Fatal(err)
	}
	if ev := objdbtest.NextLockEvent(t, la, 5*time.Second); ev.Type != objdb.LockAcquired {
		t.Fatalf("A: %v", ev)
	}
	lb, _ := b.NewLock("leader", "B", 10*time.Second)
	if err := lb.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	defer lb.Release(ctx)
	cancel()
	for range la.Events() {
	}
	if la.IsAcquired() {
		t.Fatal("still acquired after the campaign stopped")
	}
	// TTL 10s: B wins at once only because A resigned.
	if ev := objdbtest.NextLockEvent(t, lb, 2*time.Second); ev.Type != objdb.LockAcquired {
		t.Fatalf("B: %v", ev)
	}
}

// Close without Release leaves the lock to expire by TTL, like a crash.
func testLockExpiresAfterClose(t *testing.T, e env) {
	ctx := objdbtest.Context(t, 20*time.Second)
	root := objdbtest.UniqueRoot(t)
	a, b := e.open(t, root), e.open(t, root)
	const ttl = 2 * time.Second
	la, _ := a.NewLock("leader", "A", ttl)
	if err := la.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ev := objdbtest.NextLockEvent(t, la, 5*time.Second); ev.Type != objdb.LockAcquired {
		t.Fatalf("A: %v", ev)
	}
	lb, _ := b.NewLock("leader", "B", ttl)
	if err := lb.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	defer lb.Release(ctx)
	a.Close()
	start := time.Now()
	for range la.Events() {
	}
	if h, _ := lb.Holder(ctx); h != "A" {
		t.Fatalf("closing the client released the lock at once (holder %q)", h)
	}
	if ev := objdbtest.NextLockEvent(t, lb, ttl+5*time.Second); ev.Type != objdb.LockAcquired {
		t.Fatalf("B: %v", ev)
	}
	took := time.Since(start)
	t.Logf("lock (TTL %v) taken over %v after its holder's client closed without releasing", ttl, took)
	if took > ttl+time.Second {
		t.Fatalf("took %v, want within TTL+1s", took)
	}
}

func testServiceReplace(t *testing.T, e env) {
	ctx := objdbtest.Context(t, 20*time.Second)
	root := objdbtest.UniqueRoot(t)
	c, w := e.open(t, root), e.open(t, root)
	info := objdb.ServiceInfo{ServiceName: "netmaster", Role: "follower", TTL: 2, HostAddr: "127.0.0.1", Port: 9999}
	if err := c.RegisterService(ctx, info); err != nil {
		t.Fatal(err)
	}
	kv, err := c.Get(ctx, objdb.ServiceKey(info))
	if err != nil || string(kv.Value) != `{"ServiceName":"netmaster","Role":"follower","Version":"","TTL":2,"HostAddr":"127.0.0.1","Port":9999,"Hostname":""}` {
		t.Fatalf("stored value %s %v", kv.Value, err)
	}
	ch, err := w.WatchService(ctx, "netmaster")
	if err != nil {
		t.Fatal(err)
	}
	if ev := objdbtest.NextServiceEvent(t, ch, 5*time.Second); ev.Type != objdb.ServiceAdd || ev.Info != info {
		t.Fatalf("initial: %+v", ev)
	}
	info.Role = "leader"
	if err := c.RegisterService(ctx, info); err != nil {
		t.Fatal(err)
	}
	if ev := objdbtest.NextServiceEvent(t, ch, 5*time.Second); ev.Type != objdb.ServiceAdd || ev.Info.Role != "leader" {
		t.Fatalf("replaced: %+v", ev)
	}
	// The replaced value survives the keep-alive.
	time.Sleep(3 * time.Second)
	if l, err := w.GetService(ctx, "netmaster"); err != nil || len(l) != 1 || l[0].Role != "leader" {
		t.Fatalf("after several TTLs: %+v %v", l, err)
	}
	if err := c.DeregisterService(ctx, info); err != nil {
		t.Fatal(err)
	}
	if ev := objdbtest.NextServiceEvent(t, ch, 5*time.Second); ev.Type != objdb.ServiceDel || ev.Info != info {
		t.Fatalf("deregistered: %+v", ev)
	}
	// Deregistering again, or an unknown instance, is fine.
	if err := c.DeregisterService(ctx, info); err != nil {
		t.Fatal(err)
	}
}

// A client closed without deregistering leaves its instances to expire
// within the TTL, as a crashed process would.
func testServiceExpiresAfterClose(t *testing.T, e env) {
	ctx := objdbtest.Context(t, 20*time.Second)
	root := objdbtest.UniqueRoot(t)
	c, w := e.open(t, root), e.open(t, root)
	info := objdb.ServiceInfo{ServiceName: "netplugin", TTL: 2, HostAddr: "127.0.0.1", Port: 9002}
	if err := c.RegisterService(ctx, info); err != nil {
		t.Fatal(err)
	}
	ch, err := w.WatchService(ctx, "netplugin")
	if err != nil {
		t.Fatal(err)
	}
	if ev := objdbtest.NextServiceEvent(t, ch, 5*time.Second); ev.Type != objdb.ServiceAdd {
		t.Fatalf("initial: %+v", ev)
	}
	c.Close()
	start := time.Now()
	if l, _ := w.GetService(ctx, "netplugin"); len(l) != 1 {
		t.Fatalf("Close removed the instance at once: %+v", l)
	}
	ev := objdbtest.NextServiceEvent(t, ch, 10*time.Second)
	took := time.Since(start)
	if ev.Type != objdb.ServiceDel || ev.Info.Port != 9002 {
		t.Fatalf("expiry: %+v", ev)
	}
	t.Logf("service (TTL 2s) expired %v after its client closed", took)
	if took > 3*time.Second {
		t.Fatalf("expired after %v, want within TTL+1s", took)
	}
}

func testClosedClient(t *testing.T, e env) {
	ctx := objdbtest.Context(t, 10*time.Second)
	c := e.open(t, objdbtest.UniqueRoot(t))
	c.Close()
	if err := c.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if _, err := c.Get(ctx, "k"); !errors.Is(err, objdb.ErrClosed) {
		t.Fatalf("get: %v", err)
	}
	if _, err := c.Put(ctx, "k", nil); !errors.Is(err, objdb.ErrClosed) {
		t.Fatalf("put: %v", err)
	}
	if _, err := c.Watch(ctx, "k/"); !errors.Is(err, objdb.ErrClosed) {
		t.Fatalf("watch: %v", err)
	}
	if _, err := c.NewLock("l", "h", time.Second); !errors.Is(err, objdb.ErrClosed) {
		t.Fatalf("lock: %v", err)
	}
	if err := c.RegisterService(ctx, objdb.ServiceInfo{ServiceName: "s", HostAddr: "127.0.0.1", Port: 1}); !errors.Is(err, objdb.ErrClosed) {
		t.Fatalf("register: %v", err)
	}
}

func (e env) openVia(t *testing.T, px *objdbtest.Proxy, root string) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := New(ctx, Config{Endpoints: []string{px.Addr()}, Root: root, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// A watch whose agent is unreachable for a while resumes without losing or
// repeating a change (changes made during the outage arrive merged).
func testWatchSurvivesOutage(t *testing.T, e env) {
	ctx := objdbtest.Context(t, 30*time.Second)
	root := objdbtest.UniqueRoot(t)
	px := objdbtest.NewProxy(t, e.s.Addr)
	w := e.openVia(t, px, root)
	c := e.open(t, root)
	ch, err := w.Watch(ctx, "o/")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	for _, k := range []string{"o/1", "o/2"} {
		if _, err := c.Put(ctx, k, []byte("before")); err != nil {
			t.Fatal(err)
		}
	}
	objdbtest.CollectEvents(t, ch, 2, 5*time.Second)
	px.Cut()
	time.Sleep(500 * time.Millisecond)
	if _, err := c.Put(ctx, "o/3", []byte("during")); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, "o/1"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	px.Restore()
	evs := objdbtest.CollectEvents(t, ch, 2, 10*time.Second)
	if evs[0].Type != objdb.EventPut || evs[0].Key != "o/3" || evs[1].Type != objdb.EventDelete || evs[1].Key != "o/1" {
		t.Fatalf("after the outage: %+v", evs)
	}
	select {
	case ev := <-ch:
		t.Fatalf("repeated or extra event after the outage: %+v", ev)
	case <-time.After(500 * time.Millisecond):
	}
}

// A registration whose session expired while the agent was unreachable is
// made again, with a new session, once the agent is back.
func testServiceAfterOutage(t *testing.T, e env) {
	ctx := objdbtest.Context(t, 40*time.Second)
	root := objdbtest.UniqueRoot(t)
	px := objdbtest.NewProxy(t, e.s.Addr)
	c := e.openVia(t, px, root)
	w := e.open(t, root)
	info := objdb.ServiceInfo{ServiceName: "netplugin.vtep", TTL: 2, HostAddr: "127.0.0.1", Port: 4789}
	if err := c.RegisterService(ctx, info); err != nil {
		t.Fatal(err)
	}
	ch, err := w.WatchService(ctx, info.ServiceName)
	if err != nil {
		t.Fatal(err)
	}
	if ev := objdbtest.NextServiceEvent(t, ch, 5*time.Second); ev.Type != objdb.ServiceAdd {
		t.Fatalf("initial: %+v", ev)
	}
	px.Cut()
	start := time.Now()
	if ev := objdbtest.NextServiceEvent(t, ch, 10*time.Second); ev.Type != objdb.ServiceDel {
		t.Fatalf("during the outage: %+v", ev)
	}
	t.Logf("instance expired %v after its registrant lost the agent", time.Since(start))
	px.Restore()
	start = time.Now()
	if ev := objdbtest.NextServiceEvent(t, ch, 20*time.Second); ev.Type != objdb.ServiceAdd || ev.Info != info {
		t.Fatalf("after the outage: %+v", ev)
	}
	t.Logf("instance registered again %v after the agent came back", time.Since(start))
	if err := c.DeregisterService(ctx, info); err != nil {
		t.Fatal(err)
	}
	if ev := objdbtest.NextServiceEvent(t, ch, 5*time.Second); ev.Type != objdb.ServiceDel {
		t.Fatalf("deregister: %+v", ev)
	}
}
