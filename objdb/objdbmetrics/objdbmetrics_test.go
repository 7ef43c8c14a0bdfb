package objdbmetrics

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/contiv/netplugin/objdb"
)

// fake answers Get with "not found", Put with a conflict or an outage, and
// List with success.
type fake struct {
	objdb.Store
	outage bool
}

func (f *fake) Get(context.Context, string) (objdb.KeyValue, error) {
	return objdb.KeyValue{}, fmt.Errorf("get k: %w", objdb.ErrNotFound)
}

func (f *fake) Put(context.Context, string, []byte, ...objdb.OpOption) (int64, error) {
	if f.outage {
		return 0, fmt.Errorf("put k: %w", objdb.ErrUnavailable)
	}
	return 0, fmt.Errorf("put k: %w", objdb.ErrConflict)
}

func (f *fake) List(context.Context, string) ([]objdb.KeyValue, error) { return nil, nil }

func TestWrapCountsErrorsNotAnswers(t *testing.T) {
	reg := prometheus.NewRegistry()
	f := &fake{}
	st := Wrap(f, reg)
	ctx := context.Background()
	if _, err := st.Get(ctx, "k"); !errors.Is(err, objdb.ErrNotFound) {
		t.Fatalf("Get: %v", err)
	}
	if _, err := st.Put(ctx, "k", nil); !errors.Is(err, objdb.ErrConflict) {
		t.Fatalf("Put: %v", err)
	}
	f.outage = true
	if _, err := st.Put(ctx, "k", nil); !errors.Is(err, objdb.ErrUnavailable) {
		t.Fatalf("Put: %v", err)
	}
	if _, err := st.List(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP contiv_store_errors_total Cluster store calls that failed (not counting a missing key or a lost compare-and-swap), by operation.
# TYPE contiv_store_errors_total counter
contiv_store_errors_total{operation="delete"} 0
contiv_store_errors_total{operation="get"} 0
contiv_store_errors_total{operation="list"} 0
contiv_store_errors_total{operation="put"} 1
contiv_store_errors_total{operation="txn"} 0
contiv_store_errors_total{operation="watch"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "contiv_store_errors_total"); err != nil {
		t.Fatal(err)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]uint64{}
	for _, f := range fams {
		if f.GetName() == "contiv_store_request_duration_seconds" {
			for _, m := range f.GetMetric() {
				counts[m.GetLabel()[0].GetValue()] = m.GetHistogram().GetSampleCount()
			}
		}
	}
	if want := map[string]uint64{"get": 1, "put": 2, "list": 1}; fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Fatalf("latency sample counts %v, want %v", counts, want)
	}
	if probs, err := testutil.GatherAndLint(reg); err != nil || len(probs) > 0 {
		t.Fatalf("lint: %v %v", probs, err)
	}
	if Wrap(f, nil) != objdb.Store(f) {
		t.Fatal("Wrap with a nil registry must return the store itself")
	}
}

// pagerFake pages: every ListPage answers one key.
type pagerFake struct{ fake }

func (p *pagerFake) ListPage(_ context.Context, prefix, after string, _ int, rev int64) ([]objdb.KeyValue, int64, int64, error) {
	return []objdb.KeyValue{{Key: prefix + after + "x"}}, rev + 1, 7, nil
}

func TestWrapForwardsListPage(t *testing.T) {
	ctx := context.Background()
	st := Wrap(&pagerFake{}, prometheus.NewRegistry()).(objdb.Pager)
	kvs, rev, remaining, err := st.ListPage(ctx, "p/", "a", 1, 4)
	if err != nil || len(kvs) != 1 || kvs[0].Key != "p/ax" || rev != 5 || remaining != 7 {
		t.Fatalf("ListPage through the wrapper: %v %d %d %v", kvs, rev, remaining, err)
	}
	plain := Wrap(&fake{}, prometheus.NewRegistry()).(objdb.Pager)
	if _, _, _, err := plain.ListPage(ctx, "p/", "", 1, 0); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("ListPage over a store that cannot page: %v", err)
	}
}
