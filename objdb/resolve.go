package objdb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
)

// maxResolveRounds bounds how often PutResolved sends a write again while
// its outcome stays unknown.
const maxResolveRounds = 3

// PutResolved is Put for a writer whose value is its own: while the write
// is in flight, no other writer stores the same bytes under key (the value
// carries a write id, an address only this writer was given, or a counter
// only this writer updates). When Put fails with ErrUncertain it settles
// the outcome before returning, by reading the key:
//
//   - the key holds value: the earlier attempt was applied; its Version is
//     returned and the call succeeds;
//   - the key is still as the write's condition requires (at PrevVersion,
//     absent for WithCreateOnly, anything for a plain put): nothing was
//     applied yet, and the attempt may still be; the same write is sent
//     again, so that either it or the earlier attempt lands, never both
//     (each compares against the same state), and the outcome is read again;
//   - otherwise another writer changed the key, so the conditional write can
//     no longer apply: ErrConflict, a definite one.
//
// Only when the store stays unreachable through maxResolveRounds sends does
// it return an error still wrapping ErrUncertain. Every other result is
// definite. See docs/allocation-integrity.md.
func PutResolved(ctx context.Context, kv KV, key string, value []byte, opts ...OpOption) (int64, error) {
	o := ApplyOps(opts)
	ver, err := kv.Put(ctx, key, value, opts...)
	for round := 1; err != nil && errors.Is(err, ErrUncertain); round++ {
		cur, gerr := kv.Get(ctx, key)
		if gerr != nil && !errors.Is(gerr, ErrNotFound) {
			return 0, fmt.Errorf("%w; resolving it: %v", err, gerr)
		}
		exists := gerr == nil
		if exists && bytes.Equal(cur.Value, value) {
			return cur.Version, nil
		}
		pending := (!o.CreateOnly && o.PrevVersion == 0) ||
			(o.CreateOnly && !exists) ||
			(o.PrevVersion > 0 && exists && cur.Version == o.PrevVersion)
		if !pending {
			return 0, fmt.Errorf("put %q: %w: another writer changed the key; the earlier attempt was not applied", key, ErrConflict)
		}
		if round >= maxResolveRounds {
			return 0, err
		}
		ver, err = kv.Put(ctx, key, value, opts...)
		if errors.Is(err, ErrConflict) && !errors.Is(err, ErrUncertain) {
			// What the compare found may be the earlier attempt.
			err = fmt.Errorf("%w (%w)", err, ErrUncertain)
		}
	}
	return ver, err
}
