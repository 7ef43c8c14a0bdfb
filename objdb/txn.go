package objdb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
)

// TxnKind is what one operation of a transaction does.
type TxnKind int

const (
	// TxnPut writes Value under Key.
	TxnPut TxnKind = iota
	// TxnDelete removes Key (absent: nothing to do, unless conditioned).
	TxnDelete
	// TxnCheck only checks its condition.
	TxnCheck
)

// TxnOp is one operation of a transaction. Its condition is PrevVersion
// (>0: the key is at that Version) or Absent (the key does not exist);
// neither: unconditional. Keys are relative to the root and distinct
// within one transaction.
type TxnOp struct {
	Kind        TxnKind
	Key         string
	Value       []byte
	PrevVersion int64
	Absent      bool
}

// Conditional reports whether op has a condition.
func (op TxnOp) Conditional() bool { return op.PrevVersion > 0 || op.Absent }

// Txner is implemented by backends with multi-key transactions (etcd Txn,
// consul /v1/txn): every condition is checked and, only if all hold, every
// operation is applied, in one store round trip. A store wrapper over one
// without transactions returns an error wrapping errors.ErrUnsupported.
type Txner interface {
	// Txn applies ops atomically and returns, per op, the Version it
	// wrote (0 for deletes and checks). When a condition does not hold,
	// nothing is applied and the error is a *TxnConflict (wrapping
	// ErrConflict) naming the ops whose conditions failed. Like Put, a
	// call that fails after an attempt that may have been applied wraps
	// ErrUncertain as well (TxnResolved settles it).
	Txn(ctx context.Context, ops []TxnOp) ([]int64, error)
}

// TxnConflict is the error of a transaction whose conditions did not all
// hold: Failed lists the indexes of the ops at fault (every one of them
// when the backend cannot tell which).
type TxnConflict struct {
	Failed []int
	Ops    []TxnOp
}

func (e *TxnConflict) Error() string {
	keys := make([]string, 0, len(e.Failed))
	for _, i := range e.Failed {
		if i >= 0 && i < len(e.Ops) {
			keys = append(keys, fmt.Sprintf("%q", e.Ops[i].Key))
		}
	}
	return fmt.Sprintf("transaction: %v: condition failed on %s", ErrConflict, strings.Join(keys, ", "))
}

// Unwrap makes errors.Is(err, ErrConflict) hold.
func (e *TxnConflict) Unwrap() error { return ErrConflict }

// FailedOp reports whether op i's condition failed.
func (e *TxnConflict) FailedOp(i int) bool {
	for _, f := range e.Failed {
		if f == i {
			return true
		}
	}
	return false
}

// CheckTxn validates ops: valid distinct keys, sensible conditions.
func CheckTxn(ops []TxnOp) error {
	if len(ops) == 0 {
		return fmt.Errorf("%w: empty transaction", ErrInvalid)
	}
	seen := make(map[string]bool, len(ops))
	for i, op := range ops {
		if err := CheckKey(op.Key); err != nil {
			return fmt.Errorf("transaction op %d: %w", i, err)
		}
		if seen[op.Key] {
			return fmt.Errorf("%w: transaction names key %q twice", ErrInvalid, op.Key)
		}
		seen[op.Key] = true
		if op.PrevVersion < 0 || (op.PrevVersion > 0 && op.Absent) {
			return fmt.Errorf("%w: transaction op %d on %q: previous version %d with absent %t", ErrInvalid, i, op.Key, op.PrevVersion, op.Absent)
		}
		if op.Kind == TxnCheck && !op.Conditional() {
			return fmt.Errorf("%w: transaction check of %q without a condition", ErrInvalid, op.Key)
		}
		if op.Kind < TxnPut || op.Kind > TxnCheck {
			return fmt.Errorf("%w: transaction op %d: kind %d", ErrInvalid, i, op.Kind)
		}
	}
	return nil
}

// TxnResolved is Txn for a writer that owns one of its puts' values while
// the transaction is in flight (PutResolved's precondition), the witness:
// ops[witness] is a conditioned put. When Txn fails with ErrUncertain it
// settles the outcome by reading the witness key, which tells about the
// whole transaction since it is atomic:
//
//   - the key is still as the condition requires: nothing was applied yet,
//     so the same transaction is sent again (the earlier attempt and the
//     new one compare against the same state, at most one lands) and the
//     outcome is read again;
//   - the key holds the witness value: the transaction was applied; the
//     versions returned are the witness's only (others 0);
//   - otherwise another writer changed the key: a definite conflict.
//
// Only when the store stays unreachable through maxResolveRounds sends
// does the error still wrap ErrUncertain (docs/allocation-integrity.md).
func TxnResolved(ctx context.Context, t Txner, kv KV, ops []TxnOp, witness int) ([]int64, error) {
	if witness < 0 || witness >= len(ops) || ops[witness].Kind != TxnPut || !ops[witness].Conditional() {
		return nil, fmt.Errorf("%w: transaction witness %d is not a conditioned put", ErrInvalid, witness)
	}
	w := ops[witness]
	vers, err := t.Txn(ctx, ops)
	for round := 1; err != nil && errors.Is(err, ErrUncertain); round++ {
		cur, gerr := kv.Get(ctx, w.Key)
		if gerr != nil && !errors.Is(gerr, ErrNotFound) {
			return nil, fmt.Errorf("%w; resolving it: %v", err, gerr)
		}
		exists := gerr == nil
		pending := (w.Absent && !exists) || (w.PrevVersion > 0 && exists && cur.Version == w.PrevVersion)
		switch {
		case pending:
		case exists && bytes.Equal(cur.Value, w.Value):
			out := make([]int64, len(ops))
			out[witness] = cur.Version
			return out, nil
		default:
			return nil, &TxnConflict{Failed: []int{witness}, Ops: ops}
		}
		if round >= maxResolveRounds {
			return nil, err
		}
		vers, err = t.Txn(ctx, ops)
		if errors.Is(err, ErrConflict) && !errors.Is(err, ErrUncertain) {
			// What the conditions found may be the earlier attempt.
			err = fmt.Errorf("%w (%w)", err, ErrUncertain)
		}
	}
	return vers, err
}

// TxnOf returns kv's transaction API, or nil when it has none.
func TxnOf(kv KV) Txner {
	t, ok := kv.(Txner)
	if !ok {
		return nil
	}
	if p, ok := kv.(interface{ HasTxn() bool }); ok && !p.HasTxn() {
		return nil
	}
	return t
}
