package ipam_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/contiv/netplugin/objdb"
)

// memKV is an in-memory objdb.KV with compare-and-swap, used only to
// measure the allocator's own CPU cost without store latency (the tests
// all run on embedded etcd).
type memKV struct {
	mu   sync.Mutex
	rev  int64
	data map[string]objdb.KeyValue
}

func newMemKV() *memKV { return &memKV{data: map[string]objdb.KeyValue{}} }

func (m *memKV) Get(_ context.Context, k string) (objdb.KeyValue, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	kv, ok := m.data[k]
	if !ok {
		return kv, fmt.Errorf("get %q: %w", k, objdb.ErrNotFound)
	}
	return kv, nil
}

func (m *memKV) Put(_ context.Context, k string, v []byte, opts ...objdb.OpOption) (int64, error) {
	o := objdb.ApplyOps(opts)
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.data[k]
	if (o.CreateOnly && ok) || (o.PrevVersion > 0 && cur.Version != o.PrevVersion) {
		return 0, fmt.Errorf("put %q: %w", k, objdb.ErrConflict)
	}
	m.rev++
	m.data[k] = objdb.KeyValue{Key: k, Value: append([]byte(nil), v...), Version: m.rev}
	return m.rev, nil
}

func (m *memKV) Delete(_ context.Context, k string, opts ...objdb.OpOption) error {
	o := objdb.ApplyOps(opts)
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.data[k]
	if o.PrevVersion > 0 && (!ok || cur.Version != o.PrevVersion) {
		return fmt.Errorf("delete %q: %w", k, objdb.ErrConflict)
	}
	delete(m.data, k)
	return nil
}

func (m *memKV) List(_ context.Context, p string) ([]objdb.KeyValue, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []objdb.KeyValue
	for k, kv := range m.data {
		if strings.HasPrefix(k, p) {
			out = append(out, kv)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

func (m *memKV) Watch(context.Context, string, ...objdb.WatchOption) (<-chan objdb.Event, error) {
	return nil, fmt.Errorf("memKV: %w: no watch", objdb.ErrInvalid)
}
