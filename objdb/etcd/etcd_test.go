package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/etcd"
	"github.com/contiv/netplugin/objdb/objdbtest"
)

// open connects a client under root, closed on cleanup.
func open(t *testing.T, endpoint, root string) *etcd.Client {
	t.Helper()
	c, err := etcd.New(objdbtest.Context(t, 30*time.Second), testConfig(endpoint, root))
	if err != nil {
		t.Fatalf("connect %s: %v", endpoint, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// raw is a plain etcd client for looking under the backend.
func raw(t *testing.T, endpoint string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

func TestParseEndpoints(t *testing.T) {
	good := []struct {
		in   []string
		want string
	}{
		{[]string{"http://127.0.0.1:2379"}, "http://127.0.0.1:2379"},
		{[]string{"http://127.0.0.1:2379, https://10.0.0.2:2379/"}, "http://127.0.0.1:2379 https://10.0.0.2:2379"},
		{[]string{"http://a:1", "", "http://b:2,"}, "http://a:1 http://b:2"},
		{[]string{"http://[::1]:2379"}, "http://[::1]:2379"},
	}
	for _, g := range good {
		got, err := etcd.ParseEndpoints(g.in)
		if err != nil || strings.Join(got, " ") != g.want {
			t.Errorf("ParseEndpoints(%q) = %q, %v; want %q", g.in, got, err, g.want)
		}
	}
	bad := []string{
		"127.0.0.1:2379", "localhost:2379", "ftp://127.0.0.1:1", "unix:///run/etcd.sock",
		"http://", "http://127.0.0.1:notaport", "http://[::1", "http://u:p@127.0.0.1:1",
		"http://127.0.0.1:1/v2/keys", "http://127.0.0.1:1?x=1",
	}
	for _, b := range bad {
		_, err := etcd.ParseEndpoints([]string{"http://127.0.0.1:2379," + b})
		if !errors.Is(err, objdb.ErrInvalid) {
			t.Errorf("ParseEndpoints(%q): want ErrInvalid, got %v", b, err)
		} else if !strings.Contains(err.Error(), b) {
			t.Errorf("ParseEndpoints(%q): error does not name the URL: %v", b, err)
		}
	}
	for _, empty := range [][]string{{""}, {" , "}} {
		if _, err := etcd.ParseEndpoints(empty); !errors.Is(err, objdb.ErrInvalid) {
			t.Errorf("ParseEndpoints(%q): want ErrInvalid, got %v", empty, err)
		}
	}
}

func TestNewRefusesBadConfigBeforeDialing(t *testing.T) {
	start := time.Now()
	_, err := etcd.New(objdbtest.Context(t, 10*time.Second), etcd.Config{Endpoints: []string{"http://127.0.0.1:2379,ftp://bad:1"}})
	if !errors.Is(err, objdb.ErrInvalid) || !strings.Contains(err.Error(), "ftp://bad:1") {
		t.Fatalf("want ErrInvalid naming the URL, got %v", err)
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Fatalf("refusing a bad URL took %v", d)
	}
}

func TestNewHonoursContext(t *testing.T) {
	// Nothing listens on a port just freed; a 1 s context must win over the
	// retry budget.
	cfg := testConfig("http://127.0.0.1:1", "/x")
	cfg.RetryBudget = time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	_, err := etcd.New(ctx, cfg)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want the context's error, got %v", err)
	}
	if d := time.Since(start); d > 4*time.Second { // 1 s, and slack for busy machines
		t.Fatalf("New took %v with a 1 s context", d)
	}
}

func TestRelativeKeysUnderRoot(t *testing.T) {
	srv := objdbtest.StartEmbeddedEtcd(t)
	ctx := objdbtest.Context(t, 30*time.Second)
	root := objdbtest.UniqueRoot(t)
	c := open(t, srv.Endpoint, root+"/") // a trailing slash is dropped
	if c.Root() != root {
		t.Fatalf("Root() = %q, want %q", c.Root(), root)
	}
	ch, err := c.Watch(ctx, "state/")
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.Put(ctx, "state/nets/n1.default", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := raw(t, srv.Endpoint).Get(ctx, root+"/state/nets/n1.default")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v1" || resp.Kvs[0].ModRevision != v {
		t.Fatalf("full key %s/state/nets/n1.default not written as expected: %v %v", root, resp, err)
	}
	list, err := c.List(ctx, "state/")
	if err != nil || len(list) != 1 || list[0].Key != "state/nets/n1.default" {
		t.Fatalf("list keys are not relative: %+v %v", list, err)
	}
	all, err := c.List(ctx, "")
	if err != nil || len(all) != 1 {
		t.Fatalf("list of the whole root: %+v %v", all, err)
	}
	select {
	case ev := <-ch:
		if ev.Key != "state/nets/n1.default" || ev.Version != v || string(ev.Value) != "v1" {
			t.Fatalf("watch event %+v", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no watch event")
	}

	// The default root is the original's.
	d := open(t, srv.Endpoint, "")
	if d.Root() != objdb.DefaultRoot {
		t.Fatalf("default root %q", d.Root())
	}
}

func TestCASDetails(t *testing.T) {
	srv := objdbtest.StartEmbeddedEtcd(t)
	ctx := objdbtest.Context(t, 30*time.Second)
	c := open(t, srv.Endpoint, objdbtest.UniqueRoot(t))

	if _, err := c.Put(ctx, "k", []byte("x"), objdb.WithPrevVersion(5)); !errors.Is(err, objdb.ErrConflict) || !strings.Contains(err.Error(), `"k"`) {
		t.Fatalf("CAS on an absent key: want ErrConflict naming the key, got %v", err)
	}
	if err := c.Delete(ctx, "k", objdb.WithPrevVersion(5)); !errors.Is(err, objdb.ErrNotFound) {
		t.Fatalf("CAS delete of an absent key: want ErrNotFound, got %v", err)
	}
	if _, err := c.Put(ctx, "k", []byte("x"), objdb.WithPrevVersion(5), objdb.WithCreateOnly()); !errors.Is(err, objdb.ErrInvalid) {
		t.Fatalf("contradictory options: want ErrInvalid, got %v", err)
	}
	v1, err := c.Put(ctx, "k", []byte("1"), objdb.WithCreateOnly())
	if err != nil {
		t.Fatal(err)
	}
	// A write to another key moves the store revision but not k's version.
	if _, err := c.Put(ctx, "other", []byte("o")); err != nil {
		t.Fatal(err)
	}
	if kv, err := c.Get(ctx, "k"); err != nil || kv.Version != v1 {
		t.Fatalf("version of k changed by another key: %+v %v", kv, err)
	}
	if _, err := c.Put(ctx, "k", []byte("2"), objdb.WithPrevVersion(v1)); err != nil {
		t.Fatalf("CAS with k's version after an unrelated write: %v", err)
	}
	v, err := objdb.Update(ctx, c, "k", func(cur []byte, exists bool) ([]byte, error) {
		if !exists || string(cur) != "2" {
			return nil, fmt.Errorf("unexpected current value %q (exists %t)", cur, exists)
		}
		return []byte("3"), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if kv, _ := c.Get(ctx, "k"); string(kv.Value) != "3" || kv.Version != v {
		t.Fatalf("after Update: %+v, version %d", kv, v)
	}
}

func TestWatchCompactedHistoryEndsWithError(t *testing.T) {
	srv := objdbtest.StartEmbeddedEtcd(t)
	ctx := objdbtest.Context(t, 30*time.Second)
	c := open(t, srv.Endpoint, objdbtest.UniqueRoot(t))
	first, err := c.Put(ctx, "w/a", []byte("1"))
	if err != nil {
		t.Fatal(err)
	}
	last, err := c.Put(ctx, "w/b", []byte("2"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw(t, srv.Endpoint).Compact(ctx, last); err != nil {
		t.Fatal(err)
	}
	ch, err := c.Watch(ctx, "w/", objdb.WithStartVersion(first-1))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ev, ok := <-ch:
		if !ok || ev.Err == nil || !errors.Is(ev.Err, rpctypes.ErrCompacted) || !strings.Contains(ev.Err.Error(), "re-list") {
			t.Fatalf("want a final compaction error event, got %+v (open %t)", ev, ok)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no event")
	}
	select {
	case ev, ok := <-ch:
		if ok {
			t.Fatalf("event after the error: %+v", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("channel not closed after the error event")
	}
}

// TestWatchResumesAcrossEtcdRestart restarts an external etcd while a
// watcher is connected and another client writes right after the restart:
// every change arrives once, in order.
func TestWatchResumesAcrossEtcdRestart(t *testing.T) {
	srv := objdbtest.StartEtcdProcess(t)
	ctx := objdbtest.Context(t, 60*time.Second)
	root := objdbtest.UniqueRoot(t)
	w := open(t, srv.Endpoint, root)
	writer := open(t, srv.Endpoint, root)
	ch, err := w.Watch(ctx, "r/")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	put := func(i int) {
		key := fmt.Sprintf("r/%02d", i)
		if _, err := writer.Put(ctx, key, []byte("v")); err != nil {
			t.Fatalf("put %s: %v", key, err)
		}
		want = append(want, key)
	}
	for i := 0; i < 5; i++ {
		put(i)
	}
	srv.Restart(t)
	for i := 5; i < 15; i++ {
		put(i)
	}
	var got []string
	var last int64
	timeout := time.After(30 * time.Second)
	for len(got) < len(want) {
		select {
		case ev, ok := <-ch:
			if !ok || ev.Err != nil {
				t.Fatalf("watch ended: %v (got %q)", ev.Err, got)
			}
			if ev.Version <= last {
				t.Fatalf("version %d after %d: repeated or out of order", ev.Version, last)
			}
			last = ev.Version
			got = append(got, ev.Key)
		case <-timeout:
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got %q, want %q", got, want)
	}
	select {
	case ev := <-ch:
		t.Fatalf("extra event %+v", ev)
	case <-time.After(500 * time.Millisecond):
	}
}

func TestLockHandover(t *testing.T) {
	srv := objdbtest.StartEmbeddedEtcd(t)
	ctx := objdbtest.Context(t, 30*time.Second)
	root := objdbtest.UniqueRoot(t)
	a, b := open(t, srv.Endpoint, root), open(t, srv.Endpoint, root)

	if _, err := a.NewLock("", "x", time.Second); !errors.Is(err, objdb.ErrInvalid) {
		t.Fatalf("empty lock name: %v", err)
	}
	if _, err := a.NewLock("leader", "", time.Second); !errors.Is(err, objdb.ErrInvalid) {
		t.Fatalf("empty holder: %v", err)
	}
	la, err := a.NewLock("leader", "A", 1500*time.Millisecond) // rounded up to 2 s
	if err != nil {
		t.Fatal(err)
	}
	if h, err := la.Holder(ctx); err != nil || h != "" {
		t.Fatalf("holder before anyone campaigns: %q %v", h, err)
	}
	if err := la.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if err := la.Acquire(ctx); err == nil {
		t.Fatal("second Acquire accepted")
	}
	if ev := objdbtest.NextLockEvent(t, la, 5*time.Second); ev.Type != objdb.LockAcquired {
		t.Fatalf("A: %v", ev.Type)
	}
	lb, err := b.NewLock("leader", "B", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := lb.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if h, _ := lb.Holder(ctx); h != "A" {
		t.Fatalf("holder %q, want A", h)
	}
	start := time.Now()
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if ev := objdbtest.NextLockEvent(t, la, time.Second); ev.Type != objdb.LockReleased {
		t.Fatalf("A after release: %v", ev.Type)
	}
	if _, ok := <-la.Events(); ok {
		t.Fatal("A's events not closed after Release")
	}
	if ev := objdbtest.NextLockEvent(t, lb, time.Second); ev.Type != objdb.LockAcquired {
		t.Fatalf("B: %v", ev.Type)
	}
	t.Logf("hand-over took %v", time.Since(start))
	if err := la.Release(ctx); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	if la.IsAcquired() || !lb.IsAcquired() {
		t.Fatalf("IsAcquired A=%t B=%t", la.IsAcquired(), lb.IsAcquired())
	}

	// Ending the Acquire context also gives the lock up at once.
	lc, err := a.NewLock("leader", "C", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	if err := lc.Acquire(cctx); err != nil {
		t.Fatal(err)
	}
	if err := lb.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if ev := objdbtest.NextLockEvent(t, lc, time.Second); ev.Type != objdb.LockAcquired {
		t.Fatalf("C: %v", ev.Type)
	}
	cancel()
	select {
	case _, ok := <-lc.Events():
		if ok {
			t.Fatal("event after the Acquire context ended")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("events not closed after the Acquire context ended")
	}
	if h, _ := la.Holder(ctx); h != "" {
		t.Fatalf("holder %q after the last campaign stopped, want none", h)
	}
	if err := lc.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// Release without Acquire closes the events.
	ld, _ := a.NewLock("leader", "D", time.Second)
	if err := ld.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-ld.Events(); ok {
		t.Fatal("events open after Release without Acquire")
	}
	if err := ld.Acquire(ctx); err == nil {
		t.Fatal("Acquire after Release accepted")
	}
}

// TestServiceExpiresAfterClose closes a registering client without
// deregistering: the instance stays until its TTL runs out, then watchers
// see it deleted, as when the process dies.
func TestServiceExpiresAfterClose(t *testing.T) {
	srv := objdbtest.StartEmbeddedEtcd(t)
	ctx := objdbtest.Context(t, 30*time.Second)
	root := objdbtest.UniqueRoot(t)
	reg, err := etcd.New(ctx, testConfig(srv.Endpoint, root))
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	w := open(t, srv.Endpoint, root)

	info := objdb.ServiceInfo{ServiceName: "netplugin", TTL: 2, HostAddr: "127.0.0.1", Port: 9002, Hostname: "node1"}
	if err := reg.RegisterService(ctx, info); err != nil {
		t.Fatal(err)
	}
	ch, err := w.WatchService(ctx, "netplugin")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-ch:
		if ev.Type != objdb.ServiceAdd || ev.Info != info {
			t.Fatalf("initial event %+v", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no initial add")
	}
	if err := reg.Close(); err != nil {
		t.Fatal(err)
	}
	if l, err := w.GetService(ctx, "netplugin"); err != nil || len(l) != 1 {
		t.Fatalf("instance gone right after Close (should live until its TTL): %v %v", l, err)
	}
	start := time.Now()
	select {
	case ev := <-ch:
		took := time.Since(start)
		if ev.Type != objdb.ServiceDel || ev.Info != info {
			t.Fatalf("after Close: %+v", ev)
		}
		t.Logf("expired %v after Close", took)
		if took > 4*time.Second { // TTL+1s, +1s for busy CI machines
			t.Fatalf("expired after %v, want within TTL+2s", took)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("instance did not expire")
	}
	if l, _ := w.GetService(ctx, "netplugin"); len(l) != 0 {
		t.Fatalf("expired instance listed: %+v", l)
	}
	if err := reg.RegisterService(ctx, info); !errors.Is(err, objdb.ErrClosed) {
		t.Fatalf("register on a closed client: want ErrClosed, got %v", err)
	}
}

func TestCloseEndsWatches(t *testing.T) {
	srv := objdbtest.StartEmbeddedEtcd(t)
	ctx := objdbtest.Context(t, 30*time.Second)
	c, err := etcd.New(ctx, testConfig(srv.Endpoint, objdbtest.UniqueRoot(t)))
	if err != nil {
		t.Fatal(err)
	}
	ch, err := c.Watch(ctx, "x/")
	if err != nil {
		t.Fatal(err)
	}
	sch, err := c.WatchService(ctx, "netmaster")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for range ch {
	}
	for range sch {
	}
	if _, err := c.Get(ctx, "x/y"); !errors.Is(err, objdb.ErrClosed) {
		t.Fatalf("get on a closed client: want ErrClosed, got %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestServiceComesBackAfterOutage cuts a registered client off the store
// for longer than the TTL: the instance expires, and once the store is
// reachable again the keep-alive loop registers it again by itself.
func TestServiceComesBackAfterOutage(t *testing.T) {
	srv := objdbtest.StartEmbeddedEtcd(t)
	ctx := objdbtest.Context(t, 60*time.Second)
	root := objdbtest.UniqueRoot(t)
	px := objdbtest.NewProxy(t, srv.Addr)
	reg := open(t, srv.NewProxyEndpoint(px.Addr()), root)
	w := open(t, srv.Endpoint, root)
	info := objdb.ServiceInfo{ServiceName: "netplugin", TTL: 2, HostAddr: "127.0.0.1", Port: 9003}
	if err := reg.RegisterService(ctx, info); err != nil {
		t.Fatal(err)
	}
	ch, err := w.WatchService(ctx, "netplugin")
	if err != nil {
		t.Fatal(err)
	}
	want := func(typ objdb.ServiceEventType, d time.Duration) {
		t.Helper()
		select {
		case ev := <-ch:
			if ev.Type != typ || ev.Info != info {
				t.Fatalf("got %v %+v, want %v", ev.Type, ev.Info, typ)
			}
		case <-time.After(d):
			t.Fatalf("no %v event within %v", typ, d)
		}
	}
	want(objdb.ServiceAdd, 5*time.Second)
	px.Cut()
	want(objdb.ServiceDel, 5*time.Second)
	px.Restore()
	want(objdb.ServiceAdd, 15*time.Second)
	if err := reg.DeregisterService(ctx, info); err != nil {
		t.Fatal(err)
	}
	want(objdb.ServiceDel, 5*time.Second)
}

// TestReleaseWhileStoreUnreachable releases a lock that is still waiting
// for its session because the store cannot be reached: Release returns at
// once instead of waiting for the store.
func TestReleaseWhileStoreUnreachable(t *testing.T) {
	srv := objdbtest.StartEmbeddedEtcd(t)
	ctx := objdbtest.Context(t, 30*time.Second)
	px := objdbtest.NewProxy(t, srv.Addr)
	c := open(t, srv.NewProxyEndpoint(px.Addr()), objdbtest.UniqueRoot(t))
	l, err := c.NewLock("leader", "A", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	px.Cut()
	if err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := l.Release(rctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("release took %v", d)
	}
	if _, ok := <-l.Events(); ok {
		t.Fatal("event from a lock that never was acquired")
	}
}
