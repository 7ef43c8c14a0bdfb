package objdbtest

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/contiv/netplugin/objdb"
)

// testTxn checks the multi-key transaction of a backend (objdb.Txner):
// all-or-nothing, conflicts naming the ops at fault, versions that later
// compare-and-swaps accept.
func testTxn(t *testing.T, b Backend, s Server) {
	ctx := Context(t, 60*time.Second)
	st := Open(t, b, s.Endpoint, UniqueRoot(t))
	tx := objdb.TxnOf(st)
	if tx == nil {
		t.Fatalf("%s: no transaction API", b.Name)
	}
	vers, err := tx.Txn(ctx, []objdb.TxnOp{
		{Kind: objdb.TxnPut, Key: "a", Value: []byte("1"), Absent: true},
		{Kind: objdb.TxnPut, Key: "b", Value: []byte("1")},
		{Kind: objdb.TxnCheck, Key: "c", Absent: true},
	})
	if err != nil {
		t.Fatalf("txn creating a and b: %v", err)
	}
	for i, k := range []string{"a", "b"} {
		kv, err := st.Get(ctx, k)
		if err != nil || string(kv.Value) != "1" || kv.Version != vers[i] {
			t.Fatalf("after txn %s = %q version %d (%v), want \"1\" version %d", k, kv.Value, kv.Version, err, vers[i])
		}
	}
	if vers[2] != 0 {
		t.Fatalf("a check returned version %d", vers[2])
	}
	// A failed condition applies nothing and names the op.
	_, err = tx.Txn(ctx, []objdb.TxnOp{
		{Kind: objdb.TxnPut, Key: "d", Value: []byte("x"), Absent: true},
		{Kind: objdb.TxnPut, Key: "a", Value: []byte("x"), Absent: true},
		{Kind: objdb.TxnDelete, Key: "b", PrevVersion: vers[1]},
	})
	var conflict *objdb.TxnConflict
	if !errors.As(err, &conflict) || !errors.Is(err, objdb.ErrConflict) || !slices.Equal(conflict.Failed, []int{1}) {
		t.Fatalf("txn with a create-only put of an existing key: want a conflict on op 1, got %v", err)
	}
	if _, err := st.Get(ctx, "d"); !errors.Is(err, objdb.ErrNotFound) {
		t.Fatalf("a failed txn wrote d: %v", err)
	}
	if _, err := st.Get(ctx, "b"); err != nil {
		t.Fatalf("a failed txn deleted b: %v", err)
	}
	// Compare-and-swap and conditioned delete together.
	vers2, err := tx.Txn(ctx, []objdb.TxnOp{
		{Kind: objdb.TxnPut, Key: "a", Value: []byte("2"), PrevVersion: vers[0]},
		{Kind: objdb.TxnDelete, Key: "b", PrevVersion: vers[1]},
	})
	if err != nil {
		t.Fatalf("txn swapping a and deleting b: %v", err)
	}
	if _, err := st.Get(ctx, "b"); !errors.Is(err, objdb.ErrNotFound) {
		t.Fatalf("b after its delete: %v", err)
	}
	if _, err := st.Put(ctx, "a", []byte("3"), objdb.WithPrevVersion(vers2[0])); err != nil {
		t.Fatalf("put on the version a txn returned: %v", err)
	}
	// Stale versions: every stale op is named.
	_, err = tx.Txn(ctx, []objdb.TxnOp{
		{Kind: objdb.TxnPut, Key: "a", Value: []byte("4"), PrevVersion: vers2[0]},
		{Kind: objdb.TxnDelete, Key: "b", PrevVersion: vers[1]},
		{Kind: objdb.TxnPut, Key: "e", Value: []byte("4")},
	})
	if !errors.As(err, &conflict) || !slices.Equal(conflict.Failed, []int{0, 1}) {
		t.Fatalf("txn on stale versions: want a conflict on ops 0 and 1, got %v", err)
	}
	if _, err := st.Get(ctx, "e"); !errors.Is(err, objdb.ErrNotFound) {
		t.Fatalf("a failed txn wrote e: %v", err)
	}
	// Bad input.
	for _, ops := range [][]objdb.TxnOp{
		nil,
		{{Kind: objdb.TxnPut, Key: "x"}, {Kind: objdb.TxnDelete, Key: "x"}},
		{{Kind: objdb.TxnCheck, Key: "x"}},
		{{Kind: objdb.TxnPut, Key: "x", PrevVersion: 3, Absent: true}},
	} {
		if _, err := tx.Txn(ctx, ops); !errors.Is(err, objdb.ErrInvalid) {
			t.Fatalf("txn %+v: want ErrInvalid, got %v", ops, err)
		}
	}
	testTxnConcurrent(t, st, tx)
}

// testTxnConcurrent increments two counters together from several
// goroutines, each a compare-and-swap transaction retried on conflict:
// both end at the number of increments.
func testTxnConcurrent(t *testing.T, st objdb.Store, tx objdb.Txner) {
	ctx := Context(t, 60*time.Second)
	const workers, each = 4, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if err := txnIncrement(t, st, tx); err != nil {
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
	for _, k := range []string{"n1", "n2"} {
		kv, err := st.Get(ctx, k)
		if err != nil || string(kv.Value) != strconv.Itoa(workers*each) {
			t.Fatalf("counter %s = %q (%v), want %d", k, kv.Value, err, workers*each)
		}
	}
}

func txnIncrement(t *testing.T, st objdb.Store, tx objdb.Txner) error {
	ctx := Context(t, 60*time.Second)
	for {
		var ops []objdb.TxnOp
		for _, k := range []string{"n1", "n2"} {
			kv, err := st.Get(ctx, k)
			op := objdb.TxnOp{Kind: objdb.TxnPut, Key: k, Value: []byte("1"), Absent: true}
			switch {
			case err == nil:
				n, _ := strconv.Atoi(string(kv.Value))
				op = objdb.TxnOp{Kind: objdb.TxnPut, Key: k, Value: []byte(strconv.Itoa(n + 1)), PrevVersion: kv.Version}
			case !errors.Is(err, objdb.ErrNotFound):
				return err
			}
			ops = append(ops, op)
		}
		_, err := tx.Txn(ctx, ops)
		if errors.Is(err, objdb.ErrConflict) {
			continue
		}
		if err != nil {
			return fmt.Errorf("increment: %w", err)
		}
		return nil
	}
}
