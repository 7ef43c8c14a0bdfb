package plugincontract_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/contiv/netplugin/netplugin/masterclient"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/objdbtest"
	"github.com/contiv/netplugin/state"
)

// The leader is found through the lock a real netmaster daemon holds, and
// every typed call does what it says in the store.
func TestLeaderFromLockFullCycle(t *testing.T) {
	st, addr := startNetmasterDaemon(t)
	ctx := objdbtest.Context(t, 60*time.Second)
	createNetwork(t, addr, "default", "mcnet", "198.18.10.0/24", "198.18.10.254")
	c := masterclient.New(st)

	a, err := c.AllocAddress(ctx, masterclient.AllocAddressRequest{NetworkID: "mcnet.default"})
	if err != nil {
		t.Fatalf("alloc address: %v", err)
	}
	if a.NetworkID != "mcnet.default" || a.IPv4Address != "198.18.10.1/24" {
		t.Fatalf("alloc address answer %+v, want mcnet.default 198.18.10.1/24", a)
	}
	if err := c.ReleaseAddress(ctx, masterclient.ReleaseAddressRequest{NetworkID: "mcnet.default", IPv4Address: a.IPv4Address}); err != nil {
		t.Fatalf("release address: %v", err)
	}
	// Released: the same address is handed out again.
	a2, err := c.AllocAddress(ctx, masterclient.AllocAddressRequest{NetworkID: "mcnet.default"})
	if err != nil || a2.IPv4Address != a.IPv4Address {
		t.Fatalf("alloc after release: %+v %v, want %s again", a2, err, a.IPv4Address)
	}
	if err := c.ReleaseAddress(ctx, masterclient.ReleaseAddressRequest{NetworkID: "mcnet.default", IPv4Address: a2.IPv4Address}); err != nil {
		t.Fatalf("release address: %v", err)
	}

	req := masterclient.CreateEndpointRequest{
		TenantName: "default", NetworkName: "mcnet", EndpointID: "ctr1", EPCommonName: "pod-1",
		ConfigEP: masterclient.ConfigEP{Container: "ctr1", Host: "host-a"},
	}
	ep, err := c.CreateEndpoint(ctx, req)
	if err != nil {
		t.Fatalf("create endpoint: %v", err)
	}
	if ep.ID != "mcnet.default-ctr1" || ep.IPAddress != "198.18.10.1" || ep.MacAddress != "02:02:c6:12:0a:01" ||
		ep.HomingHost != "host-a" || ep.EPCommonName != "pod-1" || ep.NetID != "mcnet.default" {
		t.Fatalf("created endpoint %+v", ep)
	}
	stored, err := state.New(st).Endpoints.Read(ctx, ep.ID)
	if err != nil || stored.IPAddress != ep.IPAddress {
		t.Fatalf("endpoint state in the store: %+v %v", stored, err)
	}
	again, err := c.CreateEndpoint(ctx, req)
	if err != nil || again.IPAddress != ep.IPAddress {
		t.Fatalf("create again (idempotent): %+v %v", again, err)
	}
	del, err := c.DeleteEndpoint(ctx, masterclient.DeleteEndpointRequest{TenantName: "default", NetworkName: "mcnet", EndpointID: "ctr1"})
	if err != nil || del.ID != ep.ID {
		t.Fatalf("delete endpoint: %+v %v", del, err)
	}
	if _, err := state.New(st).Endpoints.Read(ctx, ep.ID); !errors.Is(err, objdb.ErrNotFound) {
		t.Fatalf("endpoint state after delete: want ErrNotFound, got %v", err)
	}
}

// A netmaster error comes back as a *StatusError with the body text.
func TestErrorBodySurfaced(t *testing.T) {
	srv := objdbtest.StartEmbeddedEtcd(t)
	st := objdbtest.Open(t, etcdBackend, srv.Endpoint, objdbtest.UniqueRoot(t))
	ctx := objdbtest.Context(t, 30*time.Second)
	addr := startLeaderAPI(t, st)
	holdLeaderLock(t, st, addr)

	_, err := masterclient.New(st).CreateEndpoint(ctx, masterclient.CreateEndpointRequest{
		TenantName: "default", NetworkName: "nosuch", ConfigEP: masterclient.ConfigEP{Container: "c1"}})
	var se *masterclient.StatusError
	if !errors.As(err, &se) {
		t.Fatalf("want *StatusError, got %T %v", err, err)
	}
	if want := "network nosuch.default not found"; se.StatusCode != http.StatusNotFound || se.Message != want {
		t.Fatalf("status error %+v, want 404 %q", se, want)
	}
	_, err = masterclient.New(st).AllocAddress(ctx, masterclient.AllocAddressRequest{AddressPool: "198.19.99.0/24"})
	if !errors.As(err, &se) || se.StatusCode != http.StatusNotFound || !strings.Contains(se.Message, "198.19.99.0/24") {
		t.Fatalf("alloc from unknown pool: %v", err)
	}
}

// With nobody holding the lock, the registered netmaster instances on
// their HTTP port are used, a refusing one skipped; the netmaster.rpc
// entries (port 9001 in the original) are not.
func TestFallbackToServiceInstances(t *testing.T) {
	srv := objdbtest.StartEmbeddedEtcd(t)
	st := objdbtest.Open(t, etcdBackend, srv.Endpoint, objdbtest.UniqueRoot(t))
	ctx := objdbtest.Context(t, 30*time.Second)
	addr := startLeaderAPI(t, st)
	createNetwork(t, addr, "default", "fbnet", "198.18.11.0/24", "")

	dead := freeAddr(t)
	register(t, st, "netmaster.rpc", dead, "leader")
	var dials atomic.Int32
	c := masterclient.New(st, masterclient.WithRetry(1, 0), masterclient.WithHTTPClient(countingClient(&dials, nil)))
	if _, err := c.AllocAddress(ctx, masterclient.AllocAddressRequest{NetworkID: "fbnet.default"}); !errors.Is(err, masterclient.ErrNoMaster) {
		t.Fatalf("no lock holder, no netmaster instance: want ErrNoMaster, got %v", err)
	}
	if dials.Load() != 0 {
		t.Fatalf("dialled %d times with no netmaster instance (netmaster.rpc must not be used)", dials.Load())
	}

	register(t, st, "netmaster", dead, "follower")
	register(t, st, "netmaster", addr, "follower")
	a, err := c.AllocAddress(ctx, masterclient.AllocAddressRequest{NetworkID: "fbnet.default"})
	if err != nil || a.IPv4Address != "198.18.11.1/24" {
		t.Fatalf("alloc through service fallback: %+v %v", a, err)
	}
	if dials.Load() < 1 || dials.Load() > 2 {
		t.Fatalf("dials %d, want 1 or 2 (a refusing instance, then the live one)", dials.Load())
	}
}

// Connection refused is retried a bounded number of times, the leader
// looked up again on each try.
func TestRetriesOnConnectionRefused(t *testing.T) {
	srv := objdbtest.StartEmbeddedEtcd(t)
	st := objdbtest.Open(t, etcdBackend, srv.Endpoint, objdbtest.UniqueRoot(t))
	ctx := objdbtest.Context(t, 30*time.Second)
	addr := freeAddr(t)
	holdLeaderLock(t, st, addr)

	t.Run("GivesUp", func(t *testing.T) {
		var dials atomic.Int32
		c := masterclient.New(st, masterclient.WithRetry(3, 10*time.Millisecond), masterclient.WithHTTPClient(countingClient(&dials, nil)))
		_, err := c.AllocAddress(ctx, masterclient.AllocAddressRequest{NetworkID: "x.default"})
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("want connection refused, got %v", err)
		}
		if dials.Load() != 3 {
			t.Fatalf("%d dials, want 3", dials.Load())
		}
	})
	t.Run("SucceedsWhenLeaderComesUp", func(t *testing.T) {
		// The network is created through another term on the same store.
		createNetwork(t, startLeaderAPI(t, st), "default", "rtnet", "198.18.12.0/24", "")
		var dials atomic.Int32
		// The leader's port starts listening just before the third dial;
		// the test goroutine then serves the API on it.
		lnc := make(chan net.Listener, 1)
		beforeDial := func(n int32) {
			if n != 3 {
				return
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				t.Errorf("listen on %s: %v", addr, err)
				close(lnc)
				return
			}
			lnc <- ln
		}
		c := masterclient.New(st, masterclient.WithRetry(3, 10*time.Millisecond), masterclient.WithHTTPClient(countingClient(&dials, beforeDial)))
		type result struct {
			a   masterclient.AllocAddressResponse
			err error
		}
		done := make(chan result, 1)
		go func() {
			a, err := c.AllocAddress(ctx, masterclient.AllocAddressRequest{NetworkID: "rtnet.default"})
			done <- result{a, err}
		}()
		select {
		case ln, ok := <-lnc:
			if ok {
				serveLeaderAPI(t, st, ln)
			}
		case r := <-done:
			t.Fatalf("call ended before the third dial: %+v %v (dials %d)", r.a, r.err, dials.Load())
		}
		r := <-done
		if r.err != nil || r.a.IPv4Address != "198.18.12.1/24" {
			t.Fatalf("alloc: %+v %v", r.a, r.err)
		}
		if dials.Load() != 3 {
			t.Fatalf("%d dials, want 3", dials.Load())
		}
	})
}

// ReleaseAddress accepts both reply shapes and rejects anything else.
func TestReleaseReplyShapes(t *testing.T) {
	srv := objdbtest.StartEmbeddedEtcd(t)
	st := objdbtest.Open(t, etcdBackend, srv.Endpoint, objdbtest.UniqueRoot(t))
	ctx := objdbtest.Context(t, 30*time.Second)
	reply := make(chan string, 1)
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/plugin/releaseAddress" || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "bad request "+r.URL.Path, http.StatusNotFound)
			return
		}
		w.Write([]byte(<-reply))
	}))
	defer fake.Close()
	holdLeaderLock(t, st, fake.Listener.Addr().String())
	c := masterclient.New(st)
	for body, ok := range map[string]bool{
		`"success"`:                   true,
		`{"Status":"success"}` + "\n": true,
		`{"Status":"failed"}`:         false,
		`"failed"`:                    false,
		`null`:                        false,
		`[]`:                          false,
	} {
		reply <- body
		err := c.ReleaseAddress(ctx, masterclient.ReleaseAddressRequest{NetworkID: "n.t", IPv4Address: "198.18.0.1"})
		if (err == nil) != ok {
			t.Errorf("reply %s: err %v, want ok=%v", body, err, ok)
		}
	}
}

func holdLeaderLock(t *testing.T, st objdb.Store, holder string) {
	t.Helper()
	l, err := st.NewLock(masterclient.LeaderLock, holder, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := l.Acquire(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer rcancel()
		l.Release(rctx)
		cancel()
	})
	if ev := objdbtest.NextLockEvent(t, l, 10*time.Second); ev.Type != objdb.LockAcquired {
		t.Fatalf("lock event %v, want acquired", ev.Type)
	}
}

func register(t *testing.T, st objdb.Store, name, addr, role string) {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	info := objdb.ServiceInfo{ServiceName: name, Role: role, TTL: 10, HostAddr: host, Port: p}
	if err := st.RegisterService(objdbtest.Context(t, 10*time.Second), info); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		st.DeregisterService(ctx, info)
	})
}

// countingClient counts TCP dials (calling before, if set, with the dial's
// number first) and keeps no idle connections.
func countingClient(n *atomic.Int32, before func(int32)) *http.Client {
	var d net.Dialer
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			k := n.Add(1)
			if before != nil {
				before(k)
			}
			return d.DialContext(ctx, network, addr)
		},
	}}
}
