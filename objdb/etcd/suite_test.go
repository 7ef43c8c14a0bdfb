package etcd_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/etcd"
	"github.com/contiv/netplugin/objdb/objdbtest"
)

// testLogger logs only errors, so test output stays readable.
func testLogger() *logrus.Entry {
	l := logrus.New()
	l.SetLevel(logrus.ErrorLevel)
	l.SetOutput(os.Stderr)
	return logrus.NewEntry(l)
}

// testConfig is the client configuration the tests use: a short retry
// budget so outage tests finish quickly, but attempts long enough for a
// busy machine (a timed-out CAS attempt may have been applied, and its
// retry then reports a conflict).
func testConfig(endpoint, root string) etcd.Config {
	return etcd.Config{
		Endpoints:      []string{endpoint},
		Root:           root,
		DialTimeout:    2 * time.Second,
		RequestTimeout: 4 * time.Second,
		RetryBudget:    6 * time.Second,
		Logger:         testLogger(),
	}
}

func backend() objdbtest.Backend {
	return objdbtest.Backend{
		Name: "etcd",
		Connect: func(ctx context.Context, endpoint, root string) (objdb.Store, error) {
			c, err := etcd.New(ctx, testConfig(endpoint, root))
			if err != nil {
				return nil, err
			}
			return c, nil
		},
	}
}

func TestMain(m *testing.M) { objdbtest.Main(m, backend()) }

func TestSuite(t *testing.T) {
	t.Run("embedded", func(t *testing.T) {
		objdbtest.RunSuite(t, backend(), objdbtest.StartEmbeddedEtcd(t))
	})
	t.Run("process", func(t *testing.T) {
		objdbtest.RunSuite(t, backend(), objdbtest.StartEtcdProcess(t))
	})
}

// The benchmarks compare the embedded etcd with an external etcd process
// (the consul package has the same two benchmarks):
//
//	go test -run '^$' -bench 'CAS|WatchLatency' -benchtime 2000x ./objdb/etcd ./objdb/consul
func BenchmarkCAS(b *testing.B) {
	b.Run("embedded", func(b *testing.B) { objdbtest.BenchCAS(b, backend(), objdbtest.StartEmbeddedEtcd(b)) })
	b.Run("process", func(b *testing.B) { objdbtest.BenchCAS(b, backend(), objdbtest.StartEtcdProcess(b)) })
}

func BenchmarkWatchLatency(b *testing.B) {
	b.Run("embedded", func(b *testing.B) { objdbtest.BenchWatchLatency(b, backend(), objdbtest.StartEmbeddedEtcd(b)) })
	b.Run("process", func(b *testing.B) { objdbtest.BenchWatchLatency(b, backend(), objdbtest.StartEtcdProcess(b)) })
}
