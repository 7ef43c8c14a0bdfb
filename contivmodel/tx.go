package contivmodel

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"
)

// Tx is a transaction over the model. Reads see committed objects overlaid
// with the transaction's own staged writes; writes are staged and reach the
// store and the cache only when the whole operation succeeds. Objects are
// handed out as copies: change one and Put it back (or use Modify).
//
// Use the generic functions Get, List, Exists, Put, Delete, Modify and
// RemoveIn on it. A Tx is only valid during the callback or function it
// was passed to.
type Tx struct {
	r        *Registry
	writable bool

	mu      sync.Mutex // a callback may fan reads out to goroutines
	staged  map[objRef]stagedObj
	order   []objRef
	onAbort []func()
	done    bool
}

type objRef struct{ typ, key string }

type stagedObj struct {
	raw     []byte // canonical JSON; nil when deleted
	deleted bool
}

type txCtxKey struct{}

func inTx(ctx context.Context, r *Registry) bool {
	v, _ := ctx.Value(txCtxKey{}).(*Registry)
	return v == r
}

// view returns a read-only Tx over committed state.
func (r *Registry) view() *Tx { return &Tx{r: r} }

// View runs fn with a read-only Tx over committed state. It does not wait
// for running write transactions.
func (r *Registry) View(ctx context.Context, fn func(ctx context.Context, tx *Tx) error) error {
	tx := r.view()
	defer tx.finish()
	return fn(ctx, tx)
}

// Update runs fn in a write transaction: all writing operations of the
// registry are serialised, fn's staged writes are committed to the store
// and the cache if fn returns nil, and nothing changes otherwise (the
// functions registered with OnAbort then run). It must not be called from
// inside another transaction (ErrNestedTx).
func (r *Registry) Update(ctx context.Context, fn func(ctx context.Context, tx *Tx) error) error {
	if inTx(ctx, r) {
		return ErrNestedTx
	}
	r.opMu.Lock()
	defer r.opMu.Unlock()
	tx := &Tx{r: r, writable: true, staged: map[objRef]stagedObj{}}
	defer tx.finish()
	if err := fn(context.WithValue(ctx, txCtxKey{}, r), tx); err != nil {
		tx.abort()
		return err
	}
	if err := tx.commit(ctx); err != nil {
		tx.abort()
		return err
	}
	return nil
}

// OnAbort registers fn to run if the transaction is not committed (a later
// step failed, or the store refused the writes): callbacks use it to undo
// side effects outside the model, such as allocated tags.
func (tx *Tx) OnAbort(fn func()) {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	tx.onAbort = append(tx.onAbort, fn)
}

func (tx *Tx) abort() {
	tx.mu.Lock()
	fns := tx.onAbort
	tx.onAbort = nil
	tx.mu.Unlock()
	for i := len(fns) - 1; i >= 0; i-- {
		fns[i]()
	}
}

func (tx *Tx) finish() {
	tx.mu.Lock()
	tx.done = true
	tx.mu.Unlock()
}

// raw returns an object's canonical JSON as the transaction sees it.
func (tx *Tx) raw(typ, key string) ([]byte, bool, error) {
	tx.mu.Lock()
	if tx.done {
		tx.mu.Unlock()
		return nil, false, errors.New("contivmodel: transaction used after it ended")
	}
	st, ok := tx.staged[objRef{typ, key}]
	tx.mu.Unlock()
	if ok {
		return st.raw, !st.deleted, nil
	}
	raw, ok := tx.r.cached(typ, key)
	return raw, ok, nil
}

// keys returns the keys of a type as the transaction sees them, sorted.
func (tx *Tx) keys(typ string) ([]string, error) {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if tx.done {
		return nil, errors.New("contivmodel: transaction used after it ended")
	}
	set := map[string]bool{}
	for _, k := range tx.r.cachedKeys(typ) {
		set[k] = true
	}
	for ref, st := range tx.staged {
		if ref.typ == typ {
			set[ref.key] = !st.deleted
		}
	}
	keys := make([]string, 0, len(set))
	for k, live := range set {
		if live {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys, nil
}

func (tx *Tx) stage(typ, key string, raw []byte, deleted bool) error {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if tx.done {
		return errors.New("contivmodel: transaction used after it ended")
	}
	if !tx.writable {
		return fmt.Errorf("write %s %q: %w", typ, key, ErrReadOnly)
	}
	ref := objRef{typ, key}
	if _, seen := tx.staged[ref]; !seen {
		tx.order = append(tx.order, ref)
	}
	tx.staged[ref] = stagedObj{raw: raw, deleted: deleted}
	return nil
}

type undo struct {
	ref     objRef
	prev    []byte
	existed bool
}

// commit writes the staged changes to the store in staging order, then to
// the cache. If a store write fails, the writes already done are reverted
// (best effort) and the cache is left as it was.
func (tx *Tx) commit(ctx context.Context) error {
	r := tx.r
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.commitTimeout)
	defer cancel()
	var done []undo
	for _, ref := range tx.order {
		st := tx.staged[ref]
		prev, existed := r.cached(ref.typ, ref.key)
		skey := StoreKey(ref.typ, ref.key)
		var err error
		switch {
		case st.deleted && !existed:
			continue
		case st.deleted:
			err = r.kv.Delete(ctx, skey)
		case existed && bytes.Equal(prev, st.raw):
			continue
		default:
			_, err = r.kv.Put(ctx, skey, st.raw)
		}
		if err != nil {
			tx.revert(ctx, done)
			return fmt.Errorf("persist %s %q: %w", ref.typ, ref.key, err)
		}
		done = append(done, undo{ref: ref, prev: prev, existed: existed})
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ref := range tx.order {
		st := tx.staged[ref]
		if st.deleted {
			delete(r.items[ref.typ], ref.key)
		} else {
			r.items[ref.typ][ref.key] = st.raw
		}
	}
	return nil
}

func (tx *Tx) revert(ctx context.Context, done []undo) {
	for i := len(done) - 1; i >= 0; i-- {
		u := done[i]
		skey := StoreKey(u.ref.typ, u.ref.key)
		var err error
		if u.existed {
			_, err = tx.r.kv.Put(ctx, skey, u.prev)
		} else {
			err = tx.r.kv.Delete(ctx, skey)
		}
		if err != nil {
			tx.r.log.WithError(err).WithField("storeKey", skey).Error("cannot revert a partially committed transaction")
		}
	}
}

// Get returns a copy of the object of type T with key key, or an error
// wrapping ErrNotFound whose message is "<type> not found".
func Get[T any](tx *Tx, key string) (*T, error) {
	c, err := lookup[T](tx.r)
	if err != nil {
		return nil, err
	}
	return c.get(tx, key)
}

// Exists reports whether an object of type T with key key exists.
func Exists[T any](tx *Tx, key string) (bool, error) {
	c, err := lookup[T](tx.r)
	if err != nil {
		return false, err
	}
	_, ok, err := tx.raw(c.s.name, key)
	return ok, err
}

// List returns copies of all objects of type T, sorted by key.
func List[T any](tx *Tx) ([]*T, error) {
	c, err := lookup[T](tx.r)
	if err != nil {
		return nil, err
	}
	keys, err := tx.keys(c.s.name)
	if err != nil {
		return nil, err
	}
	out := make([]*T, 0, len(keys))
	for _, k := range keys {
		obj, err := c.get(tx, k)
		if err != nil {
			return nil, err
		}
		out = append(out, obj)
	}
	return out, nil
}

// Put stages obj (created or replaced) under obj's key. The object is
// stored as given: callbacks are not run and it is not validated.
func Put[T any](tx *Tx, obj *T) error {
	c, err := lookup[T](tx.r)
	if err != nil {
		return err
	}
	return c.put(tx, obj)
}

// Delete stages the removal of the object of type T with key key, without
// running its Delete callback (see RemoveIn for that). Deleting an absent
// object is not an error.
func Delete[T any](tx *Tx, key string) error {
	c, err := lookup[T](tx.r)
	if err != nil {
		return err
	}
	if c.s.inspectOnly {
		return fmt.Errorf("delete %s %q: %w: inspect-only type", c.s.name, key, ErrInvalid)
	}
	return tx.stage(c.s.name, key, nil, true)
}

// Modify reads the object of type T with key key, lets fn change it and
// stages the result: the way to add or remove links and link-set members
// on other objects, e.g.
//
//	err := Modify(tx, tenantKey, func(t *Tenant) error {
//		t.LinkSets.Networks.Add(NewLink(TypeNetwork, netKey))
//		return nil
//	})
func Modify[T any](tx *Tx, key string, fn func(obj *T) error) error {
	c, err := lookup[T](tx.r)
	if err != nil {
		return err
	}
	obj, err := c.get(tx, key)
	if err != nil {
		return err
	}
	if err := fn(obj); err != nil {
		return err
	}
	if got := c.s.key(reflect.ValueOf(obj).Elem()); got != key {
		return fmt.Errorf("modify %s %q: %w: key changed to %q", c.s.name, key, ErrInvalid, got)
	}
	return c.put(tx, obj)
}
