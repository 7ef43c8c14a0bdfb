// Package objdbmetrics decorates an objdb.Store with Prometheus metrics of
// its key-value calls: latency by operation and errors by operation
// (docs/operations.md, "Metrics"). Locks and the service registry pass
// through unchanged. A missing key (objdb.ErrNotFound) and a lost
// compare-and-swap (objdb.ErrConflict) are answers, not errors: they are
// counted by the latency histogram only.
package objdbmetrics

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/contiv/netplugin/objdb"
)

// Store is an instrumented objdb.Store.
type Store struct {
	objdb.Store
	duration *prometheus.HistogramVec
	errs     *prometheus.CounterVec
}

var _ objdb.Store = (*Store)(nil)

// Wrap returns st measured into reg; a nil reg returns st itself.
func Wrap(st objdb.Store, reg prometheus.Registerer) objdb.Store {
	if reg == nil {
		return st
	}
	s := &Store{
		Store: st,
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "contiv", Subsystem: "store", Name: "request_duration_seconds",
			Help:    "Latency of cluster store calls, by operation (get, put, delete, list, watch, txn).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"operation"}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "contiv", Subsystem: "store", Name: "errors_total",
			Help: "Cluster store calls that failed (not counting a missing key or a lost compare-and-swap), by operation.",
		}, []string{"operation"}),
	}
	for _, op := range []string{"get", "put", "delete", "list", "watch", "txn"} {
		s.errs.WithLabelValues(op)
	}
	reg.MustRegister(s.duration, s.errs)
	return s
}

func (s *Store) observe(op string, start time.Time, err error) {
	s.duration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	if err != nil && !errors.Is(err, objdb.ErrNotFound) && !errors.Is(err, objdb.ErrConflict) {
		s.errs.WithLabelValues(op).Inc()
	}
}

// Get implements objdb.KV.
func (s *Store) Get(ctx context.Context, key string) (objdb.KeyValue, error) {
	start := time.Now()
	kv, err := s.Store.Get(ctx, key)
	s.observe("get", start, err)
	return kv, err
}

// Put implements objdb.KV.
func (s *Store) Put(ctx context.Context, key string, value []byte, opts ...objdb.OpOption) (int64, error) {
	start := time.Now()
	v, err := s.Store.Put(ctx, key, value, opts...)
	s.observe("put", start, err)
	return v, err
}

// Delete implements objdb.KV.
func (s *Store) Delete(ctx context.Context, key string, opts ...objdb.OpOption) error {
	start := time.Now()
	err := s.Store.Delete(ctx, key, opts...)
	s.observe("delete", start, err)
	return err
}

// List implements objdb.KV.
func (s *Store) List(ctx context.Context, prefix string) ([]objdb.KeyValue, error) {
	start := time.Now()
	l, err := s.Store.List(ctx, prefix)
	s.observe("list", start, err)
	return l, err
}

// ListVersion implements objdb.VersionLister, measured as a list; it wraps
// errors.ErrUnsupported when the wrapped store does not tell the version.
func (s *Store) ListVersion(ctx context.Context, prefix string) ([]objdb.KeyValue, int64, error) {
	vl, ok := s.Store.(objdb.VersionLister)
	if !ok {
		return nil, 0, fmt.Errorf("list version: %w", errors.ErrUnsupported)
	}
	start := time.Now()
	l, ver, err := vl.ListVersion(ctx, prefix)
	s.observe("list", start, err)
	return l, ver, err
}

// ListPage implements objdb.Pager, measured as a list; it wraps
// errors.ErrUnsupported when the wrapped store cannot page.
func (s *Store) ListPage(ctx context.Context, prefix, after string, limit int, rev int64) ([]objdb.KeyValue, int64, int64, error) {
	p, ok := s.Store.(objdb.Pager)
	if !ok {
		return nil, 0, 0, fmt.Errorf("list page: %w", errors.ErrUnsupported)
	}
	start := time.Now()
	l, at, remaining, err := p.ListPage(ctx, prefix, after, limit, rev)
	s.observe("list", start, err)
	return l, at, remaining, err
}

// Watch implements objdb.KV; the latency is that of setting the watch up.
func (s *Store) Watch(ctx context.Context, prefix string, opts ...objdb.WatchOption) (<-chan objdb.Event, error) {
	start := time.Now()
	ch, err := s.Store.Watch(ctx, prefix, opts...)
	s.observe("watch", start, err)
	return ch, err
}

// Txn implements objdb.Txner, measured as "txn"; it wraps
// errors.ErrUnsupported when the wrapped store has no transactions.
func (s *Store) Txn(ctx context.Context, ops []objdb.TxnOp) ([]int64, error) {
	t := objdb.TxnOf(s.Store)
	if t == nil {
		return nil, fmt.Errorf("txn: %w", errors.ErrUnsupported)
	}
	start := time.Now()
	v, err := t.Txn(ctx, ops)
	s.observe("txn", start, err)
	return v, err
}

// HasTxn tells objdb.TxnOf whether the wrapped store has transactions.
func (s *Store) HasTxn() bool { return objdb.TxnOf(s.Store) != nil }
