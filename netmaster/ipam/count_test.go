package ipam_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/contiv/netplugin/netmaster/ipam"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/objdbtest"
)

type countingKV struct {
	objdb.KV
	gets, puts, lists, dels atomic.Int64
}

func (c *countingKV) Get(ctx context.Context, k string) (objdb.KeyValue, error) {
	c.gets.Add(1)
	return c.KV.Get(ctx, k)
}
func (c *countingKV) Put(ctx context.Context, k string, v []byte, o ...objdb.OpOption) (int64, error) {
	c.puts.Add(1)
	return c.KV.Put(ctx, k, v, o...)
}
func (c *countingKV) List(ctx context.Context, p string) ([]objdb.KeyValue, error) {
	c.lists.Add(1)
	return c.KV.List(ctx, p)
}
func (c *countingKV) Delete(ctx context.Context, k string, o ...objdb.OpOption) error {
	c.dels.Add(1)
	return c.KV.Delete(ctx, k, o...)
}

// TestStoreOpsPerAllocation pins the cost model: after warm-up, an
// allocate+release pair is two chunk writes and nothing else, on a /24 and
// on a /8 whose first million addresses are taken.
func TestStoreOpsPerAllocation(t *testing.T) {
	s := newStore(t)
	for _, bits := range []string{"24", "8"} {
		t.Run("slash"+bits, func(t *testing.T) {
			root := objdbtest.UniqueRoot(t)
			benchPool(t, s, root, bits)
			kv := &countingKV{KV: s.client(t, root)}
			a := ipam.NewV4(kv)
			defer a.Close()
			ctx := testCtx(t)
			pair := func() {
				addr, err := a.Allocate(ctx, "p")
				if err != nil {
					t.Fatal(err)
				}
				if _, err := a.Release(ctx, "p", addr); err != nil {
					t.Fatal(err)
				}
			}
			pair() // warm-up: header, hint and chunk reads
			g, p, l := kv.gets.Load(), kv.puts.Load(), kv.lists.Load()
			const n = 50
			for range n {
				pair()
			}
			if dg, dp, dl := kv.gets.Load()-g, kv.puts.Load()-p, kv.lists.Load()-l; dg != 0 || dp != 2*n || dl != 0 {
				t.Fatalf("%d pairs: %d gets, %d puts, %d lists; want 0, %d, 0", n, dg, dp, dl, 2*n)
			}
		})
	}
}
