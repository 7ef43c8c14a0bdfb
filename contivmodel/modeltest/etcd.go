package modeltest

import (
	"context"
	"testing"
	"time"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/etcd"
	"github.com/contiv/netplugin/objdb/objdbtest"
)

// EtcdStore connects a client to the etcd server srv under a fresh root
// (objdbtest.UniqueRoot), so tests sharing one server never see each
// other's keys. The client is closed when the test ends.
func EtcdStore(t testing.TB, srv objdbtest.Server) objdb.KV {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := etcd.New(ctx, etcd.Config{Endpoints: []string{srv.Endpoint}, Root: objdbtest.UniqueRoot(t), Logger: QuietLogger()})
	if err != nil {
		t.Fatalf("connect to embedded etcd: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close etcd client: %v", err)
		}
	})
	return c
}
