package ipam_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/contiv/netplugin/netmaster/ipam"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/objdbtest"
	"github.com/contiv/netplugin/utils/usererr"
)

func ip(s string) netip.Addr { return netip.MustParseAddr(s) }

func newV4(t *testing.T, s *store) (*ipam.V4, objdb.Store) {
	kv := s.client(t, objdbtest.UniqueRoot(t))
	a := ipam.NewV4(kv)
	t.Cleanup(a.Close)
	return a, kv
}

func mustCreate(t *testing.T, a *ipam.V4, id, subnet string, opts ...ipam.PoolOption) {
	t.Helper()
	if _, err := a.CreatePool(testCtx(t), id, subnet, opts...); err != nil {
		t.Fatalf("create pool %s %s: %v", id, subnet, err)
	}
}

func mustAlloc(t *testing.T, a *ipam.V4, id string) netip.Addr {
	t.Helper()
	got, err := a.Allocate(testCtx(t), id)
	if err != nil {
		t.Fatalf("allocate in %s: %v", id, err)
	}
	return got
}

func expectLists(t *testing.T, a *ipam.V4, id, wantUsed, wantFree string) {
	t.Helper()
	ctx := testCtx(t)
	used, err := a.InUse(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	free, err := a.Available(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	taken, err := a.Taken(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got := runsOf(taken); got != used {
		t.Errorf("Taken(%s) = %q as runs, InUse = %q", id, got, used)
	}
	if used != wantUsed || free != wantFree {
		t.Fatalf("pool %s: in use %q available %q, want %q and %q", id, used, free, wantUsed, wantFree)
	}
}

func expectErr(t *testing.T, err, kind error, text string) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("error %v, want %v", err, kind)
	}
	if text != "" && usererr.Message(err) != text {
		t.Fatalf("message %q, want %q", usererr.Message(err), text)
	}
}

func TestV4(t *testing.T) {
	s := newStore(t)

	t.Run("Slash29ExhaustsExactly", func(t *testing.T) {
		a, _ := newV4(t, s)
		mustCreate(t, a, "n29", "10.0.0.3/29")
		for i := 1; i <= 6; i++ {
			if got, want := mustAlloc(t, a, "n29"), ip(fmt.Sprintf("10.0.0.%d", i)); got != want {
				t.Fatalf("allocation %d: %s, want %s (lowest free)", i, got, want)
			}
		}
		_, err := a.Allocate(testCtx(t), "n29")
		expectErr(t, err, ipam.ErrExhausted, "auto allocation failed - address exhaustion in subnet 10.0.0.0/29")
		expectLists(t, a, "n29", "10.0.0.1-10.0.0.6", "")
		u, err := a.Usage(testCtx(t), "n29")
		if err != nil || u.Size != 6 || u.Used != 6 {
			t.Fatalf("usage %+v %v, want 6/6", u, err)
		}
	})

	t.Run("GatewayNetworkBroadcastNeverGiven", func(t *testing.T) {
		a, _ := newV4(t, s)
		mustCreate(t, a, "gw", "10.1.2.0/24", ipam.WithGateway("10.1.2.254"))
		expectLists(t, a, "gw", "10.1.2.254", "10.1.2.1-10.1.2.253")
		seen := map[netip.Addr]bool{}
		for {
			got, err := a.Allocate(testCtx(t), "gw")
			if errors.Is(err, ipam.ErrExhausted) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if got == ip("10.1.2.0") || got == ip("10.1.2.255") || got == ip("10.1.2.254") || seen[got] {
				t.Fatalf("handed out %s", got)
			}
			seen[got] = true
		}
		if len(seen) != 253 {
			t.Fatalf("%d addresses, want 253", len(seen))
		}
		for _, x := range []string{"10.1.2.0", "10.1.2.255"} {
			_, err := a.AllocateSpecific(testCtx(t), "gw", ip(x))
			expectErr(t, err, ipam.ErrNotAllocatable, "")
		}
		_, err := a.AllocateSpecific(testCtx(t), "gw", ip("10.1.2.254"))
		expectErr(t, err, ipam.ErrInUse, "ip address 10.1.2.254 is not available")
	})

	t.Run("GatewayOutsideSubnet", func(t *testing.T) {
		a, _ := newV4(t, s)
		_, err := a.CreatePool(testCtx(t), "bad", "10.1.1.0/24", ipam.WithGateway("10.1.2.1"))
		expectErr(t, err, ipam.ErrOutOfSubnet, "hostIP 10.1.2.1 is exceeding beyond subnet 10.1.1.0/24, hostID 257")
		if _, err := a.Pool(testCtx(t), "bad"); !errors.Is(err, ipam.ErrPoolNotFound) {
			t.Fatalf("pool after refused create: %v", err)
		}
	})

	t.Run("Range", func(t *testing.T) {
		a, _ := newV4(t, s)
		mustCreate(t, a, "r", "10.1.1.10-10.1.1.12/24")
		for _, want := range []string{"10.1.1.10", "10.1.1.11", "10.1.1.12"} {
			if got := mustAlloc(t, a, "r"); got != ip(want) {
				t.Fatalf("got %s, want %s", got, want)
			}
		}
		_, err := a.Allocate(testCtx(t), "r")
		expectErr(t, err, ipam.ErrExhausted, "")
		_, err = a.AllocateSpecific(testCtx(t), "r", ip("10.1.1.13"))
		expectErr(t, err, ipam.ErrNotAllocatable, "")
		expectLists(t, a, "r", "10.1.1.10-10.1.1.12", "")
		// A range crossing a chunk boundary (chunks are 4096 addresses).
		mustCreate(t, a, "r2", "10.0.15.254-10.0.16.1/16")
		var got []string
		for range 4 {
			got = append(got, mustAlloc(t, a, "r2").String())
		}
		if fmt.Sprint(got) != "[10.0.15.254 10.0.15.255 10.0.16.0 10.0.16.1]" {
			t.Fatalf("range across chunks: %v", got)
		}
		_, err = a.Allocate(testCtx(t), "r2")
		expectErr(t, err, ipam.ErrExhausted, "")
	})

	t.Run("BadSubnets", func(t *testing.T) {
		a, _ := newV4(t, s)
		for _, tc := range []struct{ subnet, msg string }{
			{"10.1.1.10-10.1.1.1/24", "Network subnet format not valid"},
			{"10.1.1.10-10.1.2.30/24", "Network subnet format not valid"},
			{"10.1.1.0/7", "subnet length 7 not supported"},
			{"10.1.1/24", ""},
			{"10.1.1.256/24", ""},
			{"10.1.1.0", ""},
		} {
			_, err := a.CreatePool(testCtx(t), "bad", tc.subnet)
			expectErr(t, err, ipam.ErrInvalid, tc.msg)
		}
	})

	t.Run("PreferredTakenRefusedNothingChanges", func(t *testing.T) {
		a, kv := newV4(t, s)
		mustCreate(t, a, "p", "10.2.0.0/24")
		if got, err := a.AllocateSpecific(testCtx(t), "p", ip("10.2.0.5")); err != nil || got != ip("10.2.0.5") {
			t.Fatalf("preferred: %s %v", got, err)
		}
		keys, err := kv.List(testCtx(t), "state/ipam/p/")
		if err != nil {
			t.Fatal(err)
		}
		_, err = a.AllocateSpecific(testCtx(t), "p", ip("10.2.0.5"))
		expectErr(t, err, ipam.ErrInUse, "ip address 10.2.0.5 is not available")
		after, err := kv.List(testCtx(t), "state/ipam/p/")
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(keys) != fmt.Sprint(after) {
			t.Fatalf("store changed by a refused request:\n%v\n%v", keys, after)
		}
		_, err = a.AllocateSpecific(testCtx(t), "p", ip("10.2.1.5"))
		expectErr(t, err, ipam.ErrOutOfSubnet, "hostIP 10.2.1.5 is exceeding beyond subnet 10.2.0.0/24, hostID 261")
		if on, _ := a.IsAllocated(testCtx(t), "p", ip("10.2.0.5")); !on {
			t.Fatal("10.2.0.5 not allocated")
		}
		// Auto allocation goes around the preferred address.
		for _, want := range []string{"10.2.0.1", "10.2.0.2", "10.2.0.3", "10.2.0.4", "10.2.0.6"} {
			if got := mustAlloc(t, a, "p"); got != ip(want) {
				t.Fatalf("got %s, want %s", got, want)
			}
		}
	})

	t.Run("ReleaseAndReallocate", func(t *testing.T) {
		a, _ := newV4(t, s)
		mustCreate(t, a, "rel", "10.3.0.0/28")
		for range 5 {
			mustAlloc(t, a, "rel")
		}
		for _, try := range []bool{true, false} {
			released, err := a.Release(testCtx(t), "rel", ip("10.3.0.3"))
			if err != nil || released != try {
				t.Fatalf("release: %v %v, want released=%v", released, err, try)
			}
		}
		if released, err := a.Release(testCtx(t), "rel", ip("10.3.0.0")); err != nil || released {
			t.Fatalf("release of network address: %v %v", released, err)
		}
		_, err := a.Release(testCtx(t), "rel", ip("10.4.0.1"))
		expectErr(t, err, ipam.ErrOutOfSubnet, "")
		expectLists(t, a, "rel", "10.3.0.1-10.3.0.2, 10.3.0.4-10.3.0.5", "10.3.0.3, 10.3.0.6-10.3.0.14")
		if got := mustAlloc(t, a, "rel"); got != ip("10.3.0.3") {
			t.Fatalf("re-allocation got %s, want the released 10.3.0.3", got)
		}
		_, err = a.Allocate(testCtx(t), "missing")
		expectErr(t, err, ipam.ErrPoolNotFound, "")
	})

	t.Run("CreateIdempotentAndDelete", func(t *testing.T) {
		a, _ := newV4(t, s)
		mustCreate(t, a, "c", "10.5.0.0/24", ipam.WithGateway("10.5.0.1"))
		mustCreate(t, a, "c", "10.5.0.0/24", ipam.WithGateway("10.5.0.1"))
		_, err := a.CreatePool(testCtx(t), "c", "10.6.0.0/24")
		expectErr(t, err, ipam.ErrPoolExists, "")
		mustAlloc(t, a, "c")
		if err := a.DeletePool(testCtx(t), "c"); err != nil {
			t.Fatal(err)
		}
		if err := a.DeletePool(testCtx(t), "c"); err != nil {
			t.Fatalf("second delete: %v", err)
		}
		mustCreate(t, a, "c", "10.6.0.0/24")
		if got := mustAlloc(t, a, "c"); got != ip("10.6.0.1") {
			t.Fatalf("after re-create got %s", got)
		}
	})

	t.Run("LeftoverChunkOfDeletedPool", func(t *testing.T) {
		a, kv := newV4(t, s)
		mustCreate(t, a, "lo", "10.7.2.0/24")
		// A chunk of an earlier pool with this id (older generation),
		// e.g. written by an allocation racing that pool's delete.
		if _, err := kv.Put(testCtx(t), "state/ipam/lo/v4/chunk/0000", []byte(`{"gen":1,"bits":"/////w=="}`)); err != nil {
			t.Fatal(err)
		}
		if got := mustAlloc(t, a, "lo"); got != ip("10.7.2.1") {
			t.Fatalf("got %s, want 10.7.2.1 (leftover chunk ignored)", got)
		}
		expectLists(t, a, "lo", "10.7.2.1", "10.7.2.2-10.7.2.254")
	})

	t.Run("StaleCacheAfterRecreateElsewhere", func(t *testing.T) {
		root := objdbtest.UniqueRoot(t)
		a1 := ipam.NewV4(s.client(t, root))
		defer a1.Close()
		a2 := ipam.NewV4(s.client(t, root))
		defer a2.Close()
		mustCreate(t, a1, "x", "10.7.0.0/24")
		mustAlloc(t, a1, "x") // a1 caches x
		if err := a2.DeletePool(testCtx(t), "x"); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, a2, "x", "10.8.0.0-10.8.0.20/24")
		mustAlloc(t, a2, "x")
		if got := mustAlloc(t, a1, "x"); got != ip("10.8.0.2") {
			t.Fatalf("a1 with a stale cache got %s, want 10.8.0.2", got)
		}
	})

	t.Run("StaleCacheDecisionsRechecked", func(t *testing.T) {
		root := objdbtest.UniqueRoot(t)
		a1 := ipam.NewV4(s.client(t, root))
		defer a1.Close()
		a2 := ipam.NewV4(s.client(t, root))
		defer a2.Close()
		mustCreate(t, a1, "y", "10.7.1.0/24")
		x1 := mustAlloc(t, a1, "y") // a1 caches the chunk
		x2 := mustAlloc(t, a2, "y") // a1's copy is now stale
		if released, err := a1.Release(testCtx(t), "y", x2); err != nil || !released {
			t.Fatalf("release by a stale allocator: %v %v", released, err)
		}
		if _, err := a2.Release(testCtx(t), "y", x1); err != nil {
			t.Fatal(err)
		}
		if got, err := a1.AllocateSpecific(testCtx(t), "y", x1); err != nil || got != x1 {
			t.Fatalf("preferred address freed elsewhere: %v %v", got, err)
		}
		expectLists(t, a2, "y", x1.String(), "10.7.1.2-10.7.1.254")
	})

	t.Run("FullChunksSkippedAndStaleHintRepaired", func(t *testing.T) {
		root := objdbtest.UniqueRoot(t)
		kv := s.client(t, root)
		a := ipam.NewV4(kv)
		defer a.Close()
		mustCreate(t, a, "big", "10.0.0.0/16")
		// Take all of chunk 0 (10.0.0.0-10.0.15.255) through a sub-pool.
		if _, err := a.CreateSubPool(testCtx(t), "big", "g", "10.0.0.1-10.0.15.255"); err != nil {
			t.Fatal(err)
		}
		if got := mustAlloc(t, a, "big"); got != ip("10.0.16.0") {
			t.Fatalf("got %s, want 10.0.16.0 (first address of chunk 1)", got)
		}
		// A fresh allocator (another netmaster) skips chunk 0 by the hint.
		b := ipam.NewV4(s.client(t, root))
		defer b.Close()
		if got := mustAlloc(t, b, "big"); got != ip("10.0.16.1") {
			t.Fatalf("got %s, want 10.0.16.1", got)
		}
		if err := a.DeletePool(testCtx(t), "g"); err != nil {
			t.Fatal(err)
		}
		if got := mustAlloc(t, a, "big"); got != ip("10.0.0.1") {
			t.Fatalf("after the sub-pool went away got %s, want 10.0.0.1", got)
		}
		// b still trusts its cached hint (lowest-free across processes is
		// best effort), but never hands out a taken address.
		if got := mustAlloc(t, b, "big"); got != ip("10.0.16.2") && got != ip("10.0.0.2") {
			t.Fatalf("b got %s", got)
		}
		// A wrong "every chunk is full" hint: the re-scan before
		// reporting exhaustion finds the free addresses.
		mustCreate(t, a, "hint", "10.9.0.0/19")
		if _, err := kv.Put(testCtx(t), "state/ipam/hint/v4/full", []byte(`{"full":"Aw=="}`)); err != nil {
			t.Fatal(err)
		}
		c := ipam.NewV4(s.client(t, root))
		defer c.Close()
		if got := mustAlloc(t, c, "hint"); got != ip("10.9.0.1") {
			t.Fatalf("with a wrong hint got %s, want 10.9.0.1", got)
		}
	})

	t.Run("EPGPools", func(t *testing.T) {
		a, _ := newV4(t, s)
		mustCreate(t, a, "net", "60.1.1.0/24", ipam.WithGateway("60.1.1.254"))
		if _, err := a.CreateSubPool(testCtx(t), "net", "epgA", "60.1.1.10-60.1.1.12"); err != nil {
			t.Fatal(err)
		}
		expectLists(t, a, "net", "60.1.1.10-60.1.1.12, 60.1.1.254", "60.1.1.1-60.1.1.9, 60.1.1.13-60.1.1.253")
		expectLists(t, a, "epgA", "", "60.1.1.10-60.1.1.12")
		if got := mustAlloc(t, a, "epgA"); got != ip("60.1.1.10") {
			t.Fatalf("epg got %s", got)
		}
		if got := mustAlloc(t, a, "net"); got != ip("60.1.1.1") {
			t.Fatalf("net got %s", got)
		}
		mustAlloc(t, a, "epgA")
		mustAlloc(t, a, "epgA")
		_, err := a.Allocate(testCtx(t), "epgA")
		expectErr(t, err, ipam.ErrExhausted, "auto allocation failed - address exhaustion in pool 60.1.1.10-60.1.1.12")
		expectLists(t, a, "epgA", "60.1.1.10-60.1.1.12", "")

		for _, tc := range []struct {
			pool string
			kind error
			msg  string
		}{
			{"60.1.1.12-60.1.1.20", ipam.ErrInUse, "ip address 60.1.1.12 is not available"},
			{"60.1.1.250-60.1.1.255", ipam.ErrInUse, "ip address 60.1.1.254 is not available"},
			{"60.1.1.1-60.1.1.3", ipam.ErrInUse, "ip address 60.1.1.1 is not available"},
			{"60.1.1.20", ipam.ErrInvalid, "invalid ip-pool 60.1.1.20"},
			{"60.1.1.20-60.1.1.19", ipam.ErrInvalid, "invalid ip-pool 60.1.1.20-60.1.1.19"},
			{"60.1.1.200-60.1.2.3", ipam.ErrInvalid, "invalid ip-pool 60.1.1.200-60.1.2.3"},
			{"60.1.2.1-60.1.2.3", ipam.ErrOutOfSubnet, "bad ip-pool 60.1.2.1-60.1.2.3, EPG ip-pool must be a subset of network 60.1.1.0/24"},
		} {
			_, err := a.CreateSubPool(testCtx(t), "net", "epgB", tc.pool)
			expectErr(t, err, tc.kind, tc.msg)
		}
		// Refused sub-pools left nothing behind (no partial reservation).
		expectLists(t, a, "net", "60.1.1.1, 60.1.1.10-60.1.1.12, 60.1.1.254", "60.1.1.2-60.1.1.9, 60.1.1.13-60.1.1.253")

		if _, err := a.Release(testCtx(t), "epgA", ip("60.1.1.11")); err != nil {
			t.Fatal(err)
		}
		if got := mustAlloc(t, a, "epgA"); got != ip("60.1.1.11") {
			t.Fatalf("epg re-allocation got %s", got)
		}
		if err := a.DeletePool(testCtx(t), "epgA"); err != nil {
			t.Fatal(err)
		}
		expectLists(t, a, "net", "60.1.1.1, 60.1.1.254", "60.1.1.2-60.1.1.253")
		_, err = a.Allocate(testCtx(t), "epgA")
		expectErr(t, err, ipam.ErrPoolNotFound, "")
	})

	t.Run("CancelledRequestChangesNothing", func(t *testing.T) {
		a, _ := newV4(t, s)
		mustCreate(t, a, "cx", "10.10.0.0/24")
		ctx, cancel := context.WithCancel(testCtx(t))
		cancel()
		if _, err := a.Allocate(ctx, "cx"); !errors.Is(err, context.Canceled) {
			t.Fatalf("allocate with a cancelled context: %v", err)
		}
		expectLists(t, a, "cx", "", "10.10.0.1-10.10.0.254")
	})

	t.Run("ConcurrentTwoClientsExhaust24", func(t *testing.T) {
		root := objdbtest.UniqueRoot(t)
		as := []*ipam.V4{ipam.NewV4(s.client(t, root)), ipam.NewV4(s.client(t, root))}
		defer as[0].Close()
		defer as[1].Close()
		mustCreate(t, as[0], "conc", "10.20.0.0/24")
		ctx := testCtx(t)
		got := drain(t, 64, func(g int) (netip.Addr, error) { return as[g%2].Allocate(ctx, "conc") })
		if len(got) != 254 {
			t.Fatalf("%d distinct addresses, want 254", len(got))
		}
		for addr := range got {
			if !netip.MustParsePrefix("10.20.0.0/24").Contains(addr) || addr == ip("10.20.0.0") || addr == ip("10.20.0.255") {
				t.Fatalf("handed out %s", addr)
			}
		}
		expectLists(t, as[1], "conc", "10.20.0.1-10.20.0.254", "")
	})

	t.Run("ConcurrentAllocateReleaseNoDoubleAllocation", func(t *testing.T) {
		root := objdbtest.UniqueRoot(t)
		as := []*ipam.V4{ipam.NewV4(s.client(t, root)), ipam.NewV4(s.client(t, root))}
		defer as[0].Close()
		defer as[1].Close()
		mustCreate(t, as[0], "churn", "10.21.0.0/27")
		ctx := testCtx(t)
		var mu sync.Mutex
		held := map[netip.Addr]bool{}
		var wg sync.WaitGroup
		errs := make(chan error, 32)
		for g := range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				a := as[g%2]
				for range 20 {
					addr, err := a.Allocate(ctx, "churn")
					if errors.Is(err, ipam.ErrExhausted) {
						continue
					}
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					dup := held[addr]
					held[addr] = true
					mu.Unlock()
					if dup {
						errs <- fmt.Errorf("%s handed out while held", addr)
						return
					}
					mu.Lock()
					delete(held, addr)
					mu.Unlock()
					if _, err := a.Release(ctx, "churn", addr); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		// Each allocator may hold a reserve (v4reserve.go) until a read
		// through it or its Close gives it back.
		as[1].Close()
		expectLists(t, as[0], "churn", "", "10.21.0.1-10.21.0.30")
	})
}

// drain allocates from alloc with workers goroutines until the pool is
// exhausted, failing on any other error or on an address handed out twice,
// and returns the distinct addresses.
func drain(t *testing.T, workers int, alloc func(worker int) (netip.Addr, error)) map[netip.Addr]bool {
	t.Helper()
	var mu sync.Mutex
	got := map[netip.Addr]int{}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				addr, err := alloc(g)
				if errors.Is(err, ipam.ErrExhausted) {
					return
				}
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				got[addr]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	out := map[netip.Addr]bool{}
	for addr, n := range got {
		if n != 1 {
			t.Fatalf("%s handed out %d times", addr, n)
		}
		out[addr] = true
	}
	return out
}

// runsOf writes a set of addresses as InUse does: ascending runs.
func runsOf(set map[netip.Addr]bool) string {
	addrs := slices.SortedFunc(maps.Keys(set), netip.Addr.Compare)
	var runs []string
	for i := 0; i < len(addrs); {
		j := i
		for j+1 < len(addrs) && addrs[j].Next() == addrs[j+1] {
			j++
		}
		if i == j {
			runs = append(runs, addrs[i].String())
		} else {
			runs = append(runs, addrs[i].String()+"-"+addrs[j].String())
		}
		i = j + 1
	}
	return strings.Join(runs, ", ")
}
