package endpoints_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/contiv/netplugin/netmaster/master/mastertest"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/objdbtest"
)

// opCountStore counts the key-value calls made through it.
type opCountStore struct {
	objdb.Store
	calls atomic.Int64
}

func (s *opCountStore) Get(ctx context.Context, key string) (objdb.KeyValue, error) {
	s.calls.Add(1)
	return s.Store.Get(ctx, key)
}

func (s *opCountStore) List(ctx context.Context, prefix string) ([]objdb.KeyValue, error) {
	s.calls.Add(1)
	return s.Store.List(ctx, prefix)
}

func (s *opCountStore) Put(ctx context.Context, key string, v []byte, opts ...objdb.OpOption) (int64, error) {
	s.calls.Add(1)
	return s.Store.Put(ctx, key, v, opts...)
}

func (s *opCountStore) Delete(ctx context.Context, key string, opts ...objdb.OpOption) error {
	s.calls.Add(1)
	return s.Store.Delete(ctx, key, opts...)
}

func (s *opCountStore) Txn(ctx context.Context, ops []objdb.TxnOp) ([]int64, error) {
	s.calls.Add(1)
	return objdb.TxnOf(s.Store).Txn(ctx, ops)
}

// On the common path a create and a delete of an endpoint this term
// created are one store call each: one transaction, no read-back
// (docs/allocation-integrity.md, "One transaction").
func TestJoinedEndpointIsOneStoreCall(t *testing.T) {
	root := objdbtest.UniqueRoot(t)
	st := &opCountStore{Store: mastertest.OpenStore(t, etcdEndpoint, root)}
	e := &env{mastertest.StartOn(t, root, st, mastertest.DefaultConfig())}
	e.CreateNet("default", "one", "vxlan", "198.18.7.0/24", "198.18.7.254", 0)
	e.CreateEPG("default", "og", "one", "")
	// The first create reads the network, the group and the pool.
	e.CreateEndpoint(mastertest.CreateEP("default", "one", "og", "warm", ""))
	for _, id := range []string{"a", "b"} {
		n := st.calls.Load()
		e.CreateEndpoint(mastertest.CreateEP("default", "one", "og", id, ""))
		if got := st.calls.Load() - n; got != 1 {
			t.Fatalf("create %s made %d store calls, want 1", id, got)
		}
		n = st.calls.Load()
		e.OK("POST", "/plugin/deleteEndpoint", mastertest.DeleteEP("default", "one", "og", id))
		if got := st.calls.Load() - n; got != 1 {
			t.Fatalf("delete %s made %d store calls, want 1", id, got)
		}
	}
	ni := e.NetOper("default", "one")
	if ni.Oper.NumEndpoints != 1 || ni.Oper.AllocatedAddressesCount != 1 {
		t.Fatalf("counters after the creates and deletes: %+v", ni.Oper)
	}
	if gs, _ := e.GroupState("default", "og"); gs.EpCount != 1 {
		t.Fatalf("group epCount %d, want 1", gs.EpCount)
	}
}
