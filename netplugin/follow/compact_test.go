package follow

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/contiv/netplugin/objdb/etcd"
	"github.com/contiv/netplugin/objdb/objdbtest"
	"github.com/contiv/netplugin/state"
	"github.com/contiv/netplugin/utils/logtest"
)

type counter struct{ n atomic.Int64 }

func (c *counter) Inc() { c.n.Add(1) }

// A follower started after a compaction that covers its prefix's last
// change (a netplugin restarted after an etcd compaction) watches from the
// store's revision: no re-list follows, however long it runs (issue 23:
// it re-listed every retry delay until something under the prefix
// changed). The window is the retry delay times 100.
func TestFollowerAfterCompactionDoesNotRelist(t *testing.T) {
	srv := objdbtest.StartEmbeddedEtcd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kv, err := etcd.New(ctx, etcd.Config{Endpoints: []string{srv.Endpoint}, Root: objdbtest.UniqueRoot(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer kv.Close()
	st := state.New(kv)
	if _, err := st.GlobConfig.Write(ctx, state.GlobConfig{ID: "global", FwdMode: "bridge"}); err != nil {
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

	puts := make(chan state.GlobConfig, 4)
	f := New("globals", st.GlobConfig, Handlers[state.GlobConfig]{
		Put: func(_ context.Context, g state.GlobConfig, _ *state.GlobConfig) { puts <- g },
		Del: func(context.Context, state.GlobConfig) {}}, logtest.New(t, logrus.DebugLevel), 10*time.Millisecond)
	var relists counter
	f.Resyncs = &relists
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	<-puts
	rctx, rcancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); f.Run(rctx) }()
	time.Sleep(100 * f.retry)
	if _, err := st.GlobConfig.Write(ctx, state.GlobConfig{ID: "global", FwdMode: "routing"}); err != nil {
		t.Fatal(err)
	}
	select {
	case g := <-puts:
		if g.FwdMode != "routing" {
			t.Errorf("change delivered: %+v", g)
		}
	case <-ctx.Done():
		t.Error("the change after the compaction was not delivered")
	}
	rcancel()
	<-done
	if n := relists.n.Load(); n != 0 {
		t.Fatalf("%d re-lists after the compaction, want 0", n)
	}
}
