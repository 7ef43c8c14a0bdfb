package state_test

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/etcd"
	"github.com/contiv/netplugin/objdb/objdbtest"
	"github.com/contiv/netplugin/state"
)

// After a compaction past the last change under a prefix, ReadAll hands
// out the store's revision, not the (compacted) revision of its newest
// key, so a watch started from it runs instead of failing with "history
// compacted" again (issue 23: netplugin re-listed once a second forever).
func TestReadAllVersionSurvivesCompaction(t *testing.T) {
	srv := objdbtest.StartEmbeddedEtcd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kv, err := etcd.New(ctx, etcd.Config{Endpoints: []string{srv.Endpoint}, Root: objdbtest.UniqueRoot(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer kv.Close()
	st := state.New(kv)
	keyRev, err := st.Networks.Write(ctx, state.Network{Common: state.Common{ID: "n1"}, NetworkName: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	var last int64
	for i := range 5 {
		if last, err = kv.Put(ctx, "other/k", []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Compact(ctx, last); err != nil {
		t.Fatal(err)
	}

	items, ver, err := st.Networks.ReadAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 1 || items[0].ID != "n1" {
		t.Fatalf("ReadAll: %+v", items)
	}
	if ver < last {
		t.Fatalf("ReadAll version %d is below the compaction at %d (the key's own is %d): a watch from it fails", ver, last, keyRev)
	}
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	ch, err := st.Networks.Watch(wctx, objdb.WithStartVersion(ver))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Networks.Write(ctx, state.Network{Common: state.Common{ID: "n2"}, NetworkName: "n2"}); err != nil {
		t.Fatal(err)
	}
	select {
	case c, ok := <-ch:
		if !ok || c.Err != nil || c.ID != "n2" || c.Curr == nil {
			t.Fatalf("first change after the compaction: %+v (open %t), want the put of n2", c, ok)
		}
	case <-ctx.Done():
		t.Fatal("no change delivered")
	}
}
