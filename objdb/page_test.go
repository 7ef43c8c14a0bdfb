package objdb_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/contiv/netplugin/objdb"
)

// listOnly is a KV that cannot page: only List answers.
type listOnly struct {
	objdb.KV
	kvs []objdb.KeyValue
}

func (l listOnly) List(context.Context, string) ([]objdb.KeyValue, error) { return l.kvs, nil }

// unsupported pages like a wrapper over a store that cannot.
type unsupported struct{ listOnly }

func (unsupported) ListPage(context.Context, string, string, int, int64) ([]objdb.KeyValue, int64, int64, error) {
	return nil, 0, 0, fmt.Errorf("wrapped: %w", errors.ErrUnsupported)
}

func TestListPagesFallsBackToList(t *testing.T) {
	var kvs []objdb.KeyValue
	for i := range 5 {
		kvs = append(kvs, objdb.KeyValue{Key: fmt.Sprintf("p/%d", i), Value: []byte{byte(i)}, Version: int64(i + 1)})
	}
	for _, kv := range []objdb.KV{listOnly{kvs: kvs}, unsupported{listOnly{kvs: append([]objdb.KeyValue(nil), kvs...)}}} {
		var sizes []int
		var keys []string
		err := objdb.ListPages(context.Background(), kv, "p/", 2, func(page []objdb.KeyValue) error {
			sizes = append(sizes, len(page))
			for _, e := range page {
				keys = append(keys, e.Key)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(sizes) != "[2 2 1]" || fmt.Sprint(keys) != "[p/0 p/1 p/2 p/3 p/4]" {
			t.Fatalf("%T: pages %v keys %v", kv, sizes, keys)
		}
	}
}

// slicePager pages over sorted keys, counting what remains.
type slicePager struct {
	listOnly
	limits []int
}

func (s *slicePager) ListPage(_ context.Context, _, after string, limit int, _ int64) ([]objdb.KeyValue, int64, int64, error) {
	s.limits = append(s.limits, limit)
	i := 0
	for i < len(s.kvs) && after != "" && s.kvs[i].Key <= after {
		i++
	}
	rest := s.kvs[i:]
	return rest[:min(limit, len(rest))], 1, int64(len(rest)), nil
}

// A large prefix is read in at most 16 pages.
func TestListPagesGrowsPagesOfALargePrefix(t *testing.T) {
	p := &slicePager{}
	for i := range 100 {
		p.kvs = append(p.kvs, objdb.KeyValue{Key: fmt.Sprintf("p/%03d", i)})
	}
	n := 0
	err := objdb.ListPages(context.Background(), p, "p/", 2, func(page []objdb.KeyValue) error {
		for _, e := range page {
			if want := fmt.Sprintf("p/%03d", n); e.Key != want {
				t.Fatalf("key %s, want %s", e.Key, want)
			}
			n++
		}
		return nil
	})
	if err != nil || n != 100 {
		t.Fatalf("%d keys, %v", n, err)
	}
	// First page 2, then ceil(100/16) = 7: 2 + 14*7 = 100 in 15 reads.
	if fmt.Sprint(p.limits[:2]) != "[2 7]" || len(p.limits) != 15 {
		t.Fatalf("limits %v", p.limits)
	}
}
