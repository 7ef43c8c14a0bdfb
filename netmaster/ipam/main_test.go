package ipam_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"go.uber.org/goleak"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/etcd"
	"github.com/contiv/netplugin/objdb/objdbtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, objdbtest.LeakOptions()...) }

// store is one embedded etcd shared by the subtests of a test; each client
// works under the test's own root.
type store struct {
	srv  objdbtest.Server
	root string
}

func newStore(t testing.TB) *store {
	t.Helper()
	return &store{srv: objdbtest.StartEmbeddedEtcd(t), root: objdbtest.UniqueRoot(t)}
}

// client opens a new, independent client (think: another netmaster) under
// root, closed on cleanup.
func (s *store) client(t testing.TB, root string) objdb.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	log := logrus.New()
	log.SetLevel(logrus.ErrorLevel)
	log.SetOutput(os.Stderr)
	c, err := etcd.New(ctx, etcd.Config{Endpoints: []string{s.srv.Endpoint}, Root: root, Logger: logrus.NewEntry(log)})
	if err != nil {
		t.Fatalf("connect to %s: %v", s.srv.Endpoint, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
