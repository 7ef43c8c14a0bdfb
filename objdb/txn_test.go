package objdb_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/contiv/netplugin/objdb"
)

// flakyTxn is a store of a few keys whose next transactions follow a
// script: "lost" (not applied, reported of unknown outcome),
// "applied-lost" (applied, then reported as a conflict of unknown outcome,
// as a retry finds its own write), "other" (another writer changes the
// first key first), "ok".
type flakyTxn struct {
	objdb.KV
	mu     sync.Mutex
	vals   map[string][]byte
	vers   map[string]int64
	rev    int64
	script []string
	sent   int
}

func newFlakyTxn(script ...string) *flakyTxn {
	return &flakyTxn{vals: map[string][]byte{}, vers: map[string]int64{}, script: script}
}

func (f *flakyTxn) Get(_ context.Context, key string) (objdb.KeyValue, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.vers[key] == 0 {
		return objdb.KeyValue{}, fmt.Errorf("get %q: %w", key, objdb.ErrNotFound)
	}
	return objdb.KeyValue{Key: key, Value: f.vals[key], Version: f.vers[key]}, nil
}

func (f *flakyTxn) Txn(_ context.Context, ops []objdb.TxnOp) ([]int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent++
	step := "ok"
	if len(f.script) > 0 {
		step, f.script = f.script[0], f.script[1:]
	}
	if step == "other" {
		f.rev++
		f.vals[ops[0].Key], f.vers[ops[0].Key] = []byte("theirs"), f.rev
	}
	if step == "lost" {
		return nil, fmt.Errorf("txn: %w (%w)", objdb.ErrUnavailable, objdb.ErrUncertain)
	}
	conflict := &objdb.TxnConflict{Ops: ops}
	for i, op := range ops {
		if (op.Absent && f.vers[op.Key] != 0) || (op.PrevVersion > 0 && f.vers[op.Key] != op.PrevVersion) {
			conflict.Failed = append(conflict.Failed, i)
		}
	}
	if len(conflict.Failed) > 0 {
		if step == "applied-lost" {
			return nil, fmt.Errorf("txn: %w (%w)", conflict, objdb.ErrUncertain)
		}
		return nil, conflict
	}
	f.rev++
	vers := make([]int64, len(ops))
	for i, op := range ops {
		switch op.Kind {
		case objdb.TxnPut:
			f.vals[op.Key], f.vers[op.Key], vers[i] = op.Value, f.rev, f.rev
		case objdb.TxnDelete:
			delete(f.vals, op.Key)
			delete(f.vers, op.Key)
		}
	}
	if step == "applied-lost" {
		return nil, fmt.Errorf("txn: %w (%w)", objdb.ErrConflict, objdb.ErrUncertain)
	}
	return vers, nil
}

func TestTxnResolved(t *testing.T) {
	ops := []objdb.TxnOp{
		{Kind: objdb.TxnPut, Key: "chunk", Value: []byte("mine"), Absent: true},
		{Kind: objdb.TxnPut, Key: "record", Value: []byte("r"), Absent: true},
	}
	for _, tc := range []struct {
		script   []string
		wantErr  error
		applied  bool
		wantSent int
	}{
		{script: []string{"ok"}, applied: true, wantSent: 1},
		{script: []string{"applied-lost"}, applied: true, wantSent: 1},
		{script: []string{"lost", "ok"}, applied: true, wantSent: 2},
		{script: []string{"lost", "lost", "applied-lost"}, applied: true, wantSent: 3},
		{script: []string{"lost", "lost", "lost"}, wantErr: objdb.ErrUncertain, wantSent: 3},
		{script: []string{"lost", "other"}, wantErr: objdb.ErrConflict, wantSent: 2},
	} {
		f := newFlakyTxn(tc.script...)
		_, err := objdb.TxnResolved(context.Background(), f, f, ops, 0)
		if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
			t.Errorf("%v: got %v, want %v", tc.script, err, tc.wantErr)
		}
		if tc.wantErr == objdb.ErrConflict && errors.Is(err, objdb.ErrUncertain) {
			t.Errorf("%v: a resolved conflict still says uncertain: %v", tc.script, err)
		}
		_, rerr := f.Get(context.Background(), "record")
		if applied := rerr == nil; applied != tc.applied {
			t.Errorf("%v: record applied %t, want %t", tc.script, applied, tc.applied)
		}
		if f.sent != tc.wantSent {
			t.Errorf("%v: %d transactions sent, want %d", tc.script, f.sent, tc.wantSent)
		}
	}
	if _, err := objdb.TxnResolved(context.Background(), newFlakyTxn(), nil, ops[:1:1], 1); !errors.Is(err, objdb.ErrInvalid) {
		t.Errorf("witness out of range: %v", err)
	}
}
