package objdb_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/contiv/netplugin/objdb"
)

// flakyKV is a one-key store whose next Put is applied (or not) and then
// reported as failed with an unknown outcome, as a client sees a write
// the store applied while the client timed out.
type flakyKV struct {
	objdb.KV // unused methods
	mu       sync.Mutex
	val      []byte
	ver      int64
	// script of the next Puts: "applied-lost" (applied, then ErrConflict
	// + ErrUncertain, as a retry finds its own write), "lost" (not
	// applied, ErrUnavailable + ErrUncertain), "ok" (normal).
	script []string
	other  []byte // written by "another writer" before the put, when set
}

func (f *flakyKV) Get(_ context.Context, key string) (objdb.KeyValue, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ver == 0 {
		return objdb.KeyValue{}, fmt.Errorf("get %q: %w", key, objdb.ErrNotFound)
	}
	return objdb.KeyValue{Key: key, Value: f.val, Version: f.ver}, nil
}

func (f *flakyKV) Put(_ context.Context, key string, v []byte, opts ...objdb.OpOption) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	step := "ok"
	if len(f.script) > 0 {
		step, f.script = f.script[0], f.script[1:]
	}
	if f.other != nil {
		f.val, f.other = f.other, nil
		f.ver++
	}
	o := objdb.ApplyOps(opts)
	ok := (o.CreateOnly && f.ver == 0) || (o.PrevVersion > 0 && o.PrevVersion == f.ver) || (!o.CreateOnly && o.PrevVersion == 0)
	switch step {
	case "lost":
		return 0, fmt.Errorf("put %q: %w (%w)", key, objdb.ErrUnavailable, objdb.ErrUncertain)
	case "applied-lost":
		if ok {
			f.val, f.ver = v, f.ver+1
		}
		return 0, fmt.Errorf("put %q: %w (%w)", key, objdb.ErrConflict, objdb.ErrUncertain)
	}
	if !ok {
		return 0, fmt.Errorf("put %q: %w", key, objdb.ErrConflict)
	}
	f.val, f.ver = v, f.ver+1
	return f.ver, nil
}

func TestPutResolved(t *testing.T) {
	ctx := context.Background()
	t.Run("applied attempt is success", func(t *testing.T) {
		f := &flakyKV{val: []byte("a"), ver: 1, script: []string{"applied-lost"}}
		ver, err := objdb.PutResolved(ctx, f, "k", []byte("b"), objdb.WithPrevVersion(1))
		if err != nil || ver != 2 || string(f.val) != "b" {
			t.Fatalf("got %d %v, store %q v%d; want version 2, b", ver, err, f.val, f.ver)
		}
	})
	t.Run("create-only applied attempt is success", func(t *testing.T) {
		f := &flakyKV{script: []string{"applied-lost"}}
		if ver, err := objdb.PutResolved(ctx, f, "k", []byte("b"), objdb.WithCreateOnly()); err != nil || ver != 1 {
			t.Fatalf("got %d %v", ver, err)
		}
	})
	t.Run("lost attempt is sent again once", func(t *testing.T) {
		f := &flakyKV{val: []byte("a"), ver: 1, script: []string{"lost"}}
		ver, err := objdb.PutResolved(ctx, f, "k", []byte("b"), objdb.WithPrevVersion(1))
		if err != nil || ver != 2 || f.ver != 2 {
			t.Fatalf("got %d %v, store v%d; want one write", ver, err, f.ver)
		}
	})
	t.Run("another writer is a definite conflict", func(t *testing.T) {
		f := &flakyKV{val: []byte("a"), ver: 1, script: []string{"lost"}, other: []byte("c")}
		_, err := objdb.PutResolved(ctx, f, "k", []byte("b"), objdb.WithPrevVersion(1))
		if !errors.Is(err, objdb.ErrConflict) || errors.Is(err, objdb.ErrUncertain) || string(f.val) != "c" {
			t.Fatalf("got %v, store %q; want a definite conflict and c kept", err, f.val)
		}
	})
	t.Run("unreachable stays uncertain", func(t *testing.T) {
		f := &flakyKV{val: []byte("a"), ver: 1, script: []string{"lost", "lost", "lost", "lost"}}
		_, err := objdb.PutResolved(ctx, f, "k", []byte("b"), objdb.WithPrevVersion(1))
		if !errors.Is(err, objdb.ErrUncertain) || f.ver != 1 {
			t.Fatalf("got %v, store v%d", err, f.ver)
		}
	})
	t.Run("plain conflict untouched", func(t *testing.T) {
		f := &flakyKV{val: []byte("a"), ver: 3}
		_, err := objdb.PutResolved(ctx, f, "k", []byte("b"), objdb.WithPrevVersion(1))
		if !errors.Is(err, objdb.ErrConflict) || errors.Is(err, objdb.ErrUncertain) {
			t.Fatalf("got %v", err)
		}
	})
}
