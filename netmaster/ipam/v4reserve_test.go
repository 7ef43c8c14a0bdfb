package ipam_test

import (
	"context"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/contiv/netplugin/netmaster/ipam"
	"github.com/contiv/netplugin/objdb/objdbtest"
)

// storeUsed is the set of taken addresses of pool id as the store holds
// them, read through observer (a V4 that allocates nothing, so its reads
// flush no reserve of its own).
func storeUsed(t *testing.T, observer *ipam.V4, id string, subnet netip.Prefix) map[netip.Addr]bool {
	t.Helper()
	out := map[netip.Addr]bool{}
	for a := subnet.Addr().Next(); subnet.Contains(a); a = a.Next() {
		taken, err := observer.IsAllocated(testCtx(t), id, a)
		if err != nil {
			t.Fatal(err)
		}
		if taken {
			out[a] = true
		}
	}
	return out
}

// burst allocates n addresses from a on 16 goroutines until the store
// shows more taken than handed out (the committer built a reserve), and
// returns what was handed out.
func burst(t *testing.T, a, observer *ipam.V4, id string, subnet netip.Prefix, n int) map[netip.Addr]bool {
	t.Helper()
	handed := map[netip.Addr]bool{}
	for try := 0; try < 20; try++ {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for g := 0; g < 16; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range n / 16 {
					addr, err := a.Allocate(testCtx(t), id)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					if handed[addr] {
						t.Errorf("%s handed out twice", addr)
					}
					handed[addr] = true
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		if len(storeUsed(t, observer, id, subnet)) > len(handed) {
			return handed
		}
	}
	t.Fatalf("no reserve after 20 concurrent bursts")
	return nil
}

func sortedAddrs(m map[netip.Addr]bool) []netip.Addr {
	out := make([]netip.Addr, 0, len(m))
	for a := range m {
		out = append(out, a)
	}
	slices.SortFunc(out, func(x, y netip.Addr) int { return x.Compare(y) })
	return out
}

// TestV4Reserve: concurrent demand makes the allocator take addresses
// ahead (v4reserve.go); no reader ever counts them as allocated, they are
// never handed out twice, and they go back to the store when idle, when
// read through their owner and at Close.
func TestV4Reserve(t *testing.T) {
	s := newStore(t)
	subnet := netip.MustParsePrefix("10.30.0.0/24")
	// The reserve is kept for a minute unless a test asks for less, so
	// that it is still there when the test looks at it.
	setup := func(t *testing.T, idle ...time.Duration) (a, observer *ipam.V4) {
		root := objdbtest.UniqueRoot(t)
		keep := time.Minute
		if len(idle) > 0 {
			keep = idle[0]
		}
		a, observer = ipam.NewV4(s.client(t, root), ipam.WithReserveIdle(keep)), ipam.NewV4(s.client(t, root))
		t.Cleanup(a.Close)
		t.Cleanup(observer.Close)
		mustCreate(t, a, "r", subnet.String())
		return a, observer
	}
	equal := func(t *testing.T, what string, got, want map[netip.Addr]bool) {
		t.Helper()
		if !slices.Equal(sortedAddrs(got), sortedAddrs(want)) {
			t.Fatalf("%s: %v, want %v", what, sortedAddrs(got), sortedAddrs(want))
		}
	}

	t.Run("ReadsThroughTheOwnerSeeOnlyHandedOut", func(t *testing.T) {
		a, observer := setup(t)
		handed := burst(t, a, observer, "r", subnet, 64)
		u, err := a.Usage(testCtx(t), "r")
		if err != nil {
			t.Fatal(err)
		}
		if u.Used != int64(len(handed)) {
			t.Fatalf("usage through the owner: %d used, want %d", u.Used, len(handed))
		}
		equal(t, "store after the owner's read", storeUsed(t, observer, "r", subnet), handed)
	})

	t.Run("IdleReserveGoesBack", func(t *testing.T) {
		a, observer := setup(t, 2*time.Second)
		handed := burst(t, a, observer, "r", subnet, 64)
		deadline := time.Now().Add(10 * time.Second)
		for len(storeUsed(t, observer, "r", subnet)) != len(handed) {
			if time.Now().After(deadline) {
				t.Fatalf("reserve still held after 10 s idle")
			}
			time.Sleep(50 * time.Millisecond)
		}
		equal(t, "store after idle", storeUsed(t, observer, "r", subnet), handed)
	})

	t.Run("CloseGivesItBack", func(t *testing.T) {
		a, observer := setup(t)
		handed := burst(t, a, observer, "r", subnet, 64)
		a.Close()
		equal(t, "store after Close", storeUsed(t, observer, "r", subnet), handed)
	})

	t.Run("ReservedAddressesRequestedOrReleasedAreNeverGivenTwice", func(t *testing.T) {
		a, observer := setup(t)
		handed := burst(t, a, observer, "r", subnet, 64)
		var reserved []netip.Addr
		for x := range storeUsed(t, observer, "r", subnet) {
			if !handed[x] {
				reserved = append(reserved, x)
			}
		}
		slices.SortFunc(reserved, func(x, y netip.Addr) int { return x.Compare(y) })
		if len(reserved) < 2 {
			t.Fatalf("reserve of %d addresses, want at least 2", len(reserved))
		}
		// A preferred address that sits in the reserve is granted.
		want, gone := reserved[0], reserved[1]
		got, err := a.AllocateSpecific(testCtx(t), "r", want)
		if err != nil || got != want {
			t.Fatalf("preferred reserved address %s: %s, %v", want, got, err)
		}
		handed[want] = true
		// Releasing an address nobody was given frees it for good.
		if _, err := a.Release(testCtx(t), "r", gone); err != nil {
			t.Fatal(err)
		}
		// Drain the pool concurrently: every address once, none that is held.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		rest := drain(t, 8, func(int) (netip.Addr, error) { return a.Allocate(ctx, "r") })
		for x := range rest {
			if handed[x] {
				t.Fatalf("%s handed out again", x)
			}
		}
		if total := len(rest) + len(handed); total != 254 {
			t.Fatalf("%d addresses handed out in all, want 254", total)
		}
	})

	t.Run("SubPoolCarvedFromAReservedRange", func(t *testing.T) {
		a, observer := setup(t)
		handed := burst(t, a, observer, "r", subnet, 32)
		// Carve the range just above what was handed out, where the
		// reserve sits: it is given back first, so the carve succeeds.
		top := sortedAddrs(handed)[len(handed)-1]
		lo, hi := top.Next(), top.Next().Next().Next().Next()
		if _, err := a.CreateSubPool(testCtx(t), "r", "sub", lo.String()+"-"+hi.String()); err != nil {
			t.Fatalf("carve %s-%s: %v", lo, hi, err)
		}
		for x := lo; x.Compare(hi) <= 0; x = x.Next() {
			handed[x] = true
		}
		equal(t, "store after carving", storeUsed(t, observer, "r", subnet), handed)
	})
}
