// Package netmaster benchmarks the netmaster's endpoint path through its
// REST /plugin API on an embedded etcd: create then delete endpoints at
// concurrency 1 and 16, on a /24 and on a /8 network. It also reports the
// store operations per create and delete, and BenchmarkStorePut the rate
// of single create-only writes on the same store, the floor the endpoint
// path builds on.
//
//	go test ./test/bench/netmaster -run '^$' -bench . -benchtime 2000x
package netmaster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"go.uber.org/goleak"

	"github.com/contiv/netplugin/netmaster/master"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/etcd"
	"github.com/contiv/netplugin/objdb/objdbtest"
	"github.com/contiv/netplugin/test/bench/benchstat"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, objdbtest.LeakOptions()...) }

func quiet() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return logrus.NewEntry(l)
}

type server struct {
	url    string
	client *http.Client
	ops    *countingStore
}

// countingStore counts the key-value operations the netmaster makes. A
// transaction counts as one write. With noTxn it hides the store's
// transactions, so the netmaster takes its stepwise path (the endpoint
// path before issue 27): "before" and "after" in one run.
type countingStore struct {
	objdb.Store
	reads, writes atomic.Int64
	noTxn         bool
}

func (c *countingStore) Txn(ctx context.Context, ops []objdb.TxnOp) ([]int64, error) {
	t := objdb.TxnOf(c.Store)
	if t == nil || c.noTxn {
		return nil, fmt.Errorf("txn: %w", errors.ErrUnsupported)
	}
	c.writes.Add(1)
	return t.Txn(ctx, ops)
}

// HasTxn tells objdb.TxnOf whether transactions are offered.
func (c *countingStore) HasTxn() bool { return !c.noTxn && objdb.TxnOf(c.Store) != nil }

func (c *countingStore) Get(ctx context.Context, key string) (objdb.KeyValue, error) {
	c.reads.Add(1)
	return c.Store.Get(ctx, key)
}

func (c *countingStore) List(ctx context.Context, prefix string) ([]objdb.KeyValue, error) {
	c.reads.Add(1)
	return c.Store.List(ctx, prefix)
}

func (c *countingStore) Put(ctx context.Context, key string, value []byte, opts ...objdb.OpOption) (int64, error) {
	c.writes.Add(1)
	return c.Store.Put(ctx, key, value, opts...)
}

func (c *countingStore) Delete(ctx context.Context, key string, opts ...objdb.OpOption) error {
	c.writes.Add(1)
	return c.Store.Delete(ctx, key, opts...)
}

// opsSince is the reads and writes made since the snapshot r, w.
func (c *countingStore) opsSince(r, w int64) (int64, int64) {
	return c.reads.Load() - r, c.writes.Load() - w
}

func start(b *testing.B) *server {
	b.Helper()
	s, _ := startOn(b, objdbtest.StartEmbeddedEtcd(b).Endpoint, false)
	return s
}

// startOn starts a leader on a fresh root of the etcd at endpoint; with
// noTxn the store hides its transactions (the stepwise endpoint path).
func startOn(b *testing.B, endpoint string, noTxn bool) (*server, *etcd.Client) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := etcd.New(ctx, etcd.Config{Endpoints: []string{endpoint}, Root: objdbtest.UniqueRoot(b), Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	ops := &countingStore{Store: st, noTxn: noTxn}
	lctx, lcancel := context.WithCancel(context.Background())
	h, err := master.New(master.Config{FwdMode: "bridge", ClusterMode: "test"}, quiet()).Start(lctx, ops)
	if err != nil {
		lcancel()
		b.Fatal(err)
	}
	hs := httptest.NewServer(h)
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	b.Cleanup(func() { tr.CloseIdleConnections(); hs.Close(); lcancel() })
	return &server{url: hs.URL, client: &http.Client{Transport: tr}, ops: ops}, st
}

func (s *server) post(path, body string) error {
	resp, err := s.client.Post(s.url+path, "application/json", strings.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s: %d %s", path, resp.StatusCode, msg)
	}
	return nil
}

// run does fn(i) for i in [0,n) on c workers and returns the latencies.
func run(n, c int, fn func(i int) error) ([]time.Duration, time.Duration, error) {
	lat := make([]time.Duration, n)
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	t0 := time.Now()
	for w := 0; w < c; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				s := time.Now()
				if err := fn(i); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				lat[i] = time.Since(s)
			}
		}()
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return nil, 0, err
	}
	return lat, time.Since(t0), nil
}

// BenchmarkEndpoints creates b.N endpoints then deletes them, in rounds of
// at most 250 (a /24 holds 253), at concurrency 1 and 16.
func BenchmarkEndpoints(b *testing.B) {
	for _, nw := range []struct{ name, subnet string }{{"slash24", "10.1.1.0/24"}, {"slash8", "10.0.0.0/8"}} {
		for _, c := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/c%d", nw.name, c), func(b *testing.B) {
				s := start(b)
				if err := s.post("/api/v1/networks/default:net/", `{"tenantName":"default","networkName":"net","encap":"vxlan","subnet":"`+nw.subnet+`"}`); err != nil {
					b.Fatal(err)
				}
				var createLat, deleteLat []time.Duration
				var createTime, deleteTime time.Duration
				var createOps, deleteOps [2]int64 // reads, writes
				b.ResetTimer()
				for done := 0; done < b.N; {
					n := min(250, b.N-done)
					base := done
					r0, w0 := s.ops.opsSince(0, 0)
					lat, d, err := run(n, c, func(i int) error {
						return s.post("/plugin/createEndpoint", fmt.Sprintf(`{"TenantName":"default","NetworkName":"net","ConfigEP":{"Container":"c%d","Host":"h1"}}`, base+i))
					})
					if err != nil {
						b.Fatal(err)
					}
					createLat, createTime = append(createLat, lat...), createTime+d
					r, w := s.ops.opsSince(r0, w0)
					createOps[0], createOps[1] = createOps[0]+r, createOps[1]+w
					r0, w0 = s.ops.opsSince(0, 0)
					lat, d, err = run(n, c, func(i int) error {
						return s.post("/plugin/deleteEndpoint", fmt.Sprintf(`{"TenantName":"default","NetworkName":"net","EndpointID":"c%d"}`, base+i))
					})
					if err != nil {
						b.Fatal(err)
					}
					deleteLat, deleteTime = append(deleteLat, lat...), deleteTime+d
					r, w = s.ops.opsSince(r0, w0)
					deleteOps[0], deleteOps[1] = deleteOps[0]+r, deleteOps[1]+w
					done += n
				}
				b.StopTimer()
				b.ReportMetric(float64(len(createLat))/createTime.Seconds(), "creates/s")
				b.ReportMetric(float64(len(deleteLat))/deleteTime.Seconds(), "deletes/s")
				b.ReportMetric(float64(benchstat.Percentile(createLat, 50).Microseconds()), "create-p50-µs")
				b.ReportMetric(float64(benchstat.Percentile(createLat, 99).Microseconds()), "create-p99-µs")
				b.ReportMetric(float64(benchstat.Percentile(deleteLat, 50).Microseconds()), "delete-p50-µs")
				b.ReportMetric(float64(benchstat.Percentile(deleteLat, 99).Microseconds()), "delete-p99-µs")
				b.ReportMetric(float64(createOps[0])/float64(len(createLat)), "create-reads/op")
				b.ReportMetric(float64(createOps[1])/float64(len(createLat)), "create-writes/op")
				b.ReportMetric(float64(deleteOps[0])/float64(len(deleteLat)), "delete-reads/op")
				b.ReportMetric(float64(deleteOps[1])/float64(len(deleteLat)), "delete-writes/op")
				if os.Getenv("BENCH_VERBOSE") != "" {
					b.Logf("%s c=%d: %d creates in %v, %d deletes in %v", nw.name, c, len(createLat), createTime, len(deleteLat), deleteTime)
				}
			})
		}
	}
}

// BenchmarkStorePut writes b.N distinct keys with create-only puts at
// concurrency 1 and 16 on a fresh embedded etcd: the cost of one store
// round trip that each endpoint create waits for at least once.
func BenchmarkStorePut(b *testing.B) {
	val := []byte(`{"id":"net.default-c123","netID":"net.default","ipAddress":"10.1.1.123","macAddress":"02:02:0a:01:01:7b"}`)
	for _, c := range []int{1, 16} {
		b.Run(fmt.Sprintf("c%d", c), func(b *testing.B) {
			srv := objdbtest.StartEmbeddedEtcd(b)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			st, err := etcd.New(ctx, etcd.Config{Endpoints: []string{srv.Endpoint}, Root: objdbtest.UniqueRoot(b), Logger: quiet()})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			b.ResetTimer()
			lat, d, err := run(b.N, c, func(i int) error {
				_, err := st.Put(ctx, fmt.Sprintf("bench/%d", i), val, objdb.WithCreateOnly())
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/d.Seconds(), "puts/s")
			b.ReportMetric(float64(benchstat.Percentile(lat, 50).Microseconds()), "p50-µs")
			b.ReportMetric(float64(benchstat.Percentile(lat, 99).Microseconds()), "p99-µs")
		})
	}
}
