// Package modeltest holds test helpers for contivmodel and its client: a
// small in-memory objdb.KV with fault injection, a store dump for
// "nothing changed" assertions, and a test server over the model router.
package modeltest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"go.uber.org/goleak"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/objdbtest"
)

// MemKV is an in-memory objdb.KV. Watch is not supported. FailPut and
// FailDelete, when set, are consulted before every write and may refuse it.
type MemKV struct {
	mu      sync.Mutex
	data    map[string]objdb.KeyValue
	version int64

	FailPut    func(key string) error
	FailDelete func(key string) error
}

var _ objdb.KV = (*MemKV)(nil)

// NewMemKV returns an empty store.
func NewMemKV() *MemKV { return &MemKV{data: map[string]objdb.KeyValue{}} }

// Get implements objdb.KV.
func (m *MemKV) Get(ctx context.Context, key string) (objdb.KeyValue, error) {
	if err := objdb.CheckKey(key); err != nil {
		return objdb.KeyValue{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	kv, ok := m.data[key]
	if !ok {
		return objdb.KeyValue{}, fmt.Errorf("get %q: %w", key, objdb.ErrNotFound)
	}
	kv.Value = append([]byte(nil), kv.Value...)
	return kv, nil
}

// Put implements objdb.KV.
func (m *MemKV) Put(ctx context.Context, key string, value []byte, opts ...objdb.OpOption) (int64, error) {
	if err := objdb.CheckKey(key); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.FailPut != nil {
		if err := m.FailPut(key); err != nil {
			return 0, err
		}
	}
	o := objdb.ApplyOps(opts)
	if o.PrevKV != nil {
		return 0, fmt.Errorf("put %q: %w: WithPrevKV is a Delete option", key, objdb.ErrInvalid)
	}
	cur, exists := m.data[key]
	if o.CreateOnly && exists {
		return 0, fmt.Errorf("put %q: %w", key, objdb.ErrConflict)
	}
	if o.PrevVersion > 0 && (!exists || cur.Version != o.PrevVersion) {
		return 0, fmt.Errorf("put %q: %w", key, objdb.ErrConflict)
	}
	m.version++
	m.data[key] = objdb.KeyValue{Key: key, Value: append([]byte(nil), value...), Version: m.version}
	return m.version, nil
}

// Delete implements objdb.KV.
func (m *MemKV) Delete(ctx context.Context, key string, opts ...objdb.OpOption) error {
	if err := objdb.CheckKey(key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.FailDelete != nil {
		if err := m.FailDelete(key); err != nil {
			return err
		}
	}
	o := objdb.ApplyOps(opts)
	cur, exists := m.data[key]
	if o.PrevVersion > 0 {
		if !exists {
			return fmt.Errorf("delete %q: %w", key, objdb.ErrNotFound)
		}
		if cur.Version != o.PrevVersion {
			return fmt.Errorf("delete %q: %w", key, objdb.ErrConflict)
		}
	}
	if o.PrevKV != nil {
		*o.PrevKV = objdb.KeyValue{Key: key}
		if exists {
			*o.PrevKV = cur
		}
	}
	delete(m.data, key)
	return nil
}

// List implements objdb.KV.
func (m *MemKV) List(ctx context.Context, prefix string) ([]objdb.KeyValue, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []objdb.KeyValue
	for k, kv := range m.data {
		if strings.HasPrefix(k, prefix) {
			kv.Value = append([]byte(nil), kv.Value...)
			out = append(out, kv)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Watch implements objdb.KV; MemKV does not support it.
func (m *MemKV) Watch(ctx context.Context, prefix string, opts ...objdb.WatchOption) (<-chan objdb.Event, error) {
	return nil, errors.New("modeltest: MemKV does not support Watch")
}

// Dump returns every key and value under the store root.
func Dump(ctx context.Context, kv objdb.KV) (map[string]string, error) {
	kvs, err := kv.List(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("dump store: %w", err)
	}
	out := make(map[string]string, len(kvs))
	for _, p := range kvs {
		out[p.Key] = string(p.Value)
	}
	return out, nil
}

// LeakOptions are goroutines that outlive a test by design (idle HTTP
// keep-alive connections, library pools): objdbtest's list.
func LeakOptions() []goleak.Option {
	return objdbtest.LeakOptions()
}
