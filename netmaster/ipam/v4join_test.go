package ipam_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"sync"
	"testing"

	"github.com/contiv/netplugin/netmaster/ipam"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/consul"
	"github.com/contiv/netplugin/objdb/objdbtest"
)

// countTally is an ipam.Tally over one key holding a decimal count.
type countTally struct {
	kv      objdb.KV
	key     string
	mu      sync.Mutex
	n, ver  int64
	next    int64
	known   bool
	staging bool
}

func (c *countTally) ID() string { return c.key }

func (c *countTally) Stage(ctx context.Context, d [2]int) (objdb.TxnOp, error) {
	c.mu.Lock()
	if !c.known {
		kv, err := c.kv.Get(ctx, c.key)
		switch {
		case errors.Is(err, objdb.ErrNotFound):
			c.n, c.ver = 0, 0
		case err != nil:
			c.mu.Unlock()
			return objdb.TxnOp{}, err
		default:
			c.n, _ = strconv.ParseInt(string(kv.Value), 10, 64)
			c.ver = kv.Version
		}
		c.known = true
	}
	c.next = c.n + int64(d[0])
	op := objdb.TxnOp{Kind: objdb.TxnPut, Key: c.key, Value: []byte(strconv.FormatInt(c.next, 10)), PrevVersion: c.ver}
	if c.ver == 0 {
		op.PrevVersion, op.Absent = 0, true
	}
	return op, nil
}

func (c *countTally) Done(v int64) {
	c.n, c.ver, c.known = c.next, v, v > 0
	c.mu.Unlock()
}

func (c *countTally) Abort() {
	c.known = false
	c.mu.Unlock()
}

func recordRide(key string, prevVersion int64, t *countTally, d int) ipam.Ride {
	return ipam.Ride{Key: key, Build: func(a netip.Addr, changed bool) ([]objdb.TxnOp, []ipam.TallyDelta) {
		op := objdb.TxnOp{Kind: objdb.TxnPut, Key: key, Value: []byte(a.String()), Absent: true}
		if d < 0 {
			op = objdb.TxnOp{Kind: objdb.TxnDelete, Key: key, PrevVersion: prevVersion}
		}
		return []objdb.TxnOp{op}, []ipam.TallyDelta{{T: t, D: [2]int{d, 0}}}
	}}
}

// TestJoined: concurrent joined allocations get distinct addresses, each
// written together with its record and the tally; a ride whose record
// exists takes nothing; joined releases free the address with the record.
func TestJoined(t *testing.T) {
	a, kv := newV4(t, newStore(t))
	testJoined(t, a, kv)
}

// TestJoinedConsul is TestJoined on consul's transactions.
func TestJoinedConsul(t *testing.T) {
	srv := objdbtest.StartConsulAgent(t)
	kv, err := consul.New(testCtx(t), consul.Config{Endpoints: []string{srv.Endpoint}, Root: objdbtest.UniqueRoot(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kv.Close() })
	a := ipam.NewV4(kv)
	t.Cleanup(a.Close)
	testJoined(t, a, kv)
}

func testJoined(t *testing.T, a *ipam.V4, kv objdb.KV) {
	if !a.CanJoin() {
		t.Fatal("allocator cannot join writes")
	}
	ctx := testCtx(t)
	mustCreate(t, a, "p", "10.9.0.0/22")
	tally := &countTally{kv: kv, key: "tally"}
	const n = 40
	got := make([]netip.Addr, n)
	vers := make([]int64, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			addr, ver, err := a.AllocateJoined(ctx, "p", netip.Addr{}, recordRide(fmt.Sprintf("rec/%d", i), 0, tally, 1))
			got[i], vers[i] = addr, ver
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	seen := map[netip.Addr]bool{}
	for i, addr := range got {
		if seen[addr] {
			t.Fatalf("address %s handed out twice", addr)
		}
		seen[addr] = true
		rec, err := kv.Get(ctx, fmt.Sprintf("rec/%d", i))
		if err != nil || string(rec.Value) != addr.String() || rec.Version != vers[i] {
			t.Fatalf("record %d = %q version %d (%v), want %s version %d", i, rec.Value, rec.Version, err, addr, vers[i])
		}
	}
	checkTally(t, kv, n)
	taken, err := a.Taken(ctx, "p")
	if err != nil || len(taken) != n {
		t.Fatalf("taken in the pool: %d (%v), want %d", len(taken), err, n)
	}
	// A ride whose record exists fails and takes nothing.
	_, _, err = a.AllocateJoined(ctx, "p", netip.Addr{}, recordRide("rec/0", 0, tally, 1))
	if !errors.Is(err, objdb.ErrConflict) || errors.Is(err, objdb.ErrUncertain) {
		t.Fatalf("joined allocation with an existing record: want a definite conflict, got %v", err)
	}
	if taken, _ := a.Taken(ctx, "p"); len(taken) != n {
		t.Fatalf("a failed joined allocation took an address: %d taken", len(taken))
	}
	checkTally(t, kv, n)
	// Preferred address, then joined releases.
	want := netip.MustParseAddr("10.9.3.7")
	if addr, _, err := a.AllocateJoined(ctx, "p", want, recordRide("rec/x", 0, tally, 1)); err != nil || addr != want {
		t.Fatalf("joined allocation of %s: %s, %v", want, addr, err)
	}
	if _, _, err := a.AllocateJoined(ctx, "p", want, recordRide("rec/y", 0, tally, 1)); !errors.Is(err, ipam.ErrInUse) {
		t.Fatalf("joined allocation of a taken address: want ErrInUse, got %v", err)
	}
	rec, err := kv.Get(ctx, "rec/x")
	if err != nil {
		t.Fatal(err)
	}
	released, err := a.ReleaseJoined(ctx, "p", want, recordRide("rec/x", rec.Version, tally, -1))
	if err != nil || !released {
		t.Fatalf("joined release: %t, %v", released, err)
	}
	if _, err := kv.Get(ctx, "rec/x"); !errors.Is(err, objdb.ErrNotFound) {
		t.Fatalf("record after its joined release: %v", err)
	}
	if taken, _ := a.Taken(ctx, "p"); taken[want] {
		t.Fatalf("%s still taken after its joined release", want)
	}
	checkTally(t, kv, n)
	// A release whose record changed frees nothing.
	if _, err := a.ReleaseJoined(ctx, "p", got[0], recordRide("rec/0", 1, tally, -1)); !errors.Is(err, objdb.ErrConflict) {
		t.Fatalf("joined release on a stale record version: want a conflict, got %v", err)
	}
	if taken, _ := a.Taken(ctx, "p"); !taken[got[0]] {
		t.Fatalf("a failed joined release freed %s", got[0])
	}
}

func checkTally(t *testing.T, kv objdb.KV, want int) {
	t.Helper()
	v, err := kv.Get(testCtx(t), "tally")
	if err != nil || string(v.Value) != strconv.Itoa(want) {
		t.Fatalf("tally = %q (%v), want %d", v.Value, err, want)
	}
}
