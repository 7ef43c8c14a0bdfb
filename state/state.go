// Package state is the typed persisted state of docs/daemons.md §3, stored
// as one JSON value per object through objdb (never a second store client).
//
// Each kind of object is a Collection: a key prefix plus a Go type whose
// JSON field names are the original's. Read, Write, Clear, ReadAll and Watch
// are the same for every kind.
package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/contiv/netplugin/objdb"
)

// Object is a state object: it knows the ID its key is built from.
type Object interface {
	StateID() string
}

// Common is embedded by every state object: the `id` JSON field.
type Common struct {
	ID string `json:"id"`
}

// StateID is the key suffix of the object.
func (c Common) StateID() string { return c.ID }

// Collection is one kind of state object, stored at Prefix+ID.
type Collection[T Object] struct {
	kv     objdb.KV
	prefix string // relative to the store root, ends in "/"
}

// NewCollection binds a kind of object to its key prefix.
func NewCollection[T Object](kv objdb.KV, prefix string) Collection[T] {
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return Collection[T]{kv: kv, prefix: prefix}
}

// Prefix is the relative key prefix of the collection.
func (c Collection[T]) Prefix() string { return c.prefix }

// Key is the relative key of the object with this ID.
func (c Collection[T]) Key(id string) string { return c.prefix + id }

func checkID(id string) error {
	if id == "" || strings.Contains(id, "/") {
		return fmt.Errorf("%w: state id %q (must be non-empty, without '/')", objdb.ErrInvalid, id)
	}
	return nil
}

// Read returns the object with this ID; a missing one is an error wrapping
// objdb.ErrNotFound (its text contains "key not found").
func (c Collection[T]) Read(ctx context.Context, id string) (T, error) {
	var zero T
	if err := checkID(id); err != nil {
		return zero, err
	}
	kv, err := c.kv.Get(ctx, c.Key(id))
	if err != nil {
		return zero, fmt.Errorf("read state %q: %w", c.Key(id), err)
	}
	return c.decode(kv)
}

// ReadVersion is Read plus the stored version, for compare-and-swap writes.
func (c Collection[T]) ReadVersion(ctx context.Context, id string) (T, int64, error) {
	var zero T
	if err := checkID(id); err != nil {
		return zero, 0, err
	}
	kv, err := c.kv.Get(ctx, c.Key(id))
	if err != nil {
		return zero, 0, fmt.Errorf("read state %q: %w", c.Key(id), err)
	}
	v, err := c.decode(kv)
	return v, kv.Version, err
}

func (c Collection[T]) decode(kv objdb.KeyValue) (T, error) {
	var v T
	if err := json.Unmarshal(kv.Value, &v); err != nil {
		return v, fmt.Errorf("decode state %q: %w", kv.Key, err)
	}
	return v, nil
}

// Write stores the object under its StateID. Options (objdb.WithPrevVersion,
// objdb.WithCreateOnly) make it a compare-and-swap.
func (c Collection[T]) Write(ctx context.Context, v T, opts ...objdb.OpOption) (int64, error) {
	key, b, err := c.encode(v)
	if err != nil {
		return 0, err
	}
	ver, err := c.kv.Put(ctx, key, b, opts...)
	if err != nil {
		return 0, fmt.Errorf("write state %q: %w", key, err)
	}
	return ver, nil
}

// encode checks v's StateID and returns its key and JSON.
func (c Collection[T]) encode(v T) (string, []byte, error) {
	id := v.StateID()
	if err := checkID(id); err != nil {
		return "", nil, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", nil, fmt.Errorf("encode state %q: %w", c.Key(id), err)
	}
	return c.Key(id), b, nil
}

// WriteResolved is Write for an object whose stored bytes are this
// writer's own while the write is in flight (an endpoint record naming an
// address only this request was given, a counter only one writer of this
// process updates): a write of unknown outcome is settled by reading it
// back (objdb.PutResolved), so the result is definite unless the store
// stays unreachable (then the error wraps objdb.ErrUncertain). Values
// another writer may store identically, such as tag bitmaps, must use
// Write and re-read on conflict instead.
func (c Collection[T]) WriteResolved(ctx context.Context, v T, opts ...objdb.OpOption) (int64, error) {
	key, b, err := c.encode(v)
	if err != nil {
		return 0, err
	}
	ver, err := objdb.PutResolved(ctx, c.kv, key, b, opts...)
	if err != nil {
		return 0, fmt.Errorf("write state %q: %w", key, err)
	}
	return ver, nil
}

// Clear deletes the object. Clearing a missing object is not an error.
func (c Collection[T]) Clear(ctx context.Context, id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	if err := c.kv.Delete(ctx, c.Key(id)); err != nil {
		return fmt.Errorf("clear state %q: %w", c.Key(id), err)
	}
	return nil
}

// Take deletes the object and returns it, in one atomic store operation:
// of several concurrent Takes exactly one gets it, the others an error
// wrapping objdb.ErrNotFound, as does a Take of a missing object. A stored
// value that does not decode is removed all the same, and the error says so.
func (c Collection[T]) Take(ctx context.Context, id string) (T, error) {
	var zero T
	if err := checkID(id); err != nil {
		return zero, err
	}
	var prev objdb.KeyValue
	if err := c.kv.Delete(ctx, c.Key(id), objdb.WithPrevKV(&prev)); err != nil {
		return zero, fmt.Errorf("take state %q: %w", c.Key(id), err)
	}
	if prev.Version == 0 {
		return zero, fmt.Errorf("take state %q: %w", c.Key(id), objdb.ErrNotFound)
	}
	return c.decode(prev)
}

// ReadAll returns every object directly under the prefix, sorted by ID, and
// the version to watch from: the store's version of the listing where the
// backend tells it (objdb.VersionLister), else the highest version seen. A
// Watch started from it misses nothing; after a compaction the store's
// version is past the compacted history even when no key under the prefix
// changed since (the highest key version may not be). Keys deeper than one
// segment are not objects of this kind and are ignored.
func (c Collection[T]) ReadAll(ctx context.Context) ([]T, int64, error) {
	kvs, ver, err := objdb.ListVersion(ctx, c.kv, c.prefix)
	if err != nil {
		return nil, 0, fmt.Errorf("read all state under %q: %w", c.prefix, err)
	}
	out := make([]T, 0, len(kvs))
	for _, kv := range kvs {
		if strings.Contains(strings.TrimPrefix(kv.Key, c.prefix), "/") {
			continue
		}
		v, err := c.decode(kv)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, v)
	}
	return out, ver, nil
}

// Each calls fn with every object directly under the prefix, in ID order,
// as ReadAll returns them, but reads and decodes them a page at a time
// (objdb.ListPages, objdb.DefaultPageSize keys): a walk over many objects
// (every endpoint at a term start) holds one page of them, not all. The
// walk is one snapshot where the store pages (etcd). It returns the
// highest version seen; an error of fn stops the walk and is returned as
// it is.
func (c Collection[T]) Each(ctx context.Context, fn func(T) error) (int64, error) {
	var maxVer int64
	var stop error // fn's or a decode error: returned as it is
	err := objdb.ListPages(ctx, c.kv, c.prefix, objdb.DefaultPageSize, func(page []objdb.KeyValue) error {
		for _, kv := range page {
			maxVer = max(maxVer, kv.Version)
			if strings.Contains(strings.TrimPrefix(kv.Key, c.prefix), "/") {
				continue
			}
			v, err := c.decode(kv)
			if err == nil {
				err = fn(v)
			}
			if err != nil {
				stop = err
				return err
			}
		}
		return nil
	})
	if stop != nil {
		return 0, stop
	}
	if err != nil {
		return 0, fmt.Errorf("read state under %q: %w", c.prefix, err)
	}
	return maxVer, nil
}

// Change is one watched change. Curr is nil on delete; Prev is nil on
// create (or when the store did not know the previous value).
type Change[T Object] struct {
	Curr, Prev *T
	ID         string
	Version    int64
	Err        error // decode or watch error; the watch goes on after a decode error
}

// Watch streams changes of this kind of object until ctx ends. Pass
// objdb.WithStartVersion(version from ReadAll) to continue exactly where a
// ReadAll left off. A value that does not decode is reported with Err and
// skipped. The channel is closed when ctx ends or the store watch fails.
func (c Collection[T]) Watch(ctx context.Context, opts ...objdb.WatchOption) (<-chan Change[T], error) {
	evs, err := c.kv.Watch(ctx, c.prefix, opts...)
	if err != nil {
		return nil, fmt.Errorf("watch state under %q: %w", c.prefix, err)
	}
	out := make(chan Change[T])
	go func() {
		defer close(out)
		for ev := range evs {
			ch := c.change(ev)
			if ch == nil {
				continue
			}
			select {
			case out <- *ch:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

func (c Collection[T]) change(ev objdb.Event) *Change[T] {
	if ev.Err != nil {
		return &Change[T]{Err: fmt.Errorf("watch state under %q: %w", c.prefix, ev.Err)}
	}
	id := strings.TrimPrefix(ev.Key, c.prefix)
	if strings.Contains(id, "/") {
		return nil
	}
	ch := &Change[T]{ID: id, Version: ev.Version}
	decode := func(b []byte) *T {
		if len(b) == 0 {
			return nil
		}
		var v T
		if err := json.Unmarshal(b, &v); err != nil {
			ch.Err = errors.Join(ch.Err, fmt.Errorf("decode state %q: %w", ev.Key, err))
			return nil
		}
		return &v
	}
	if ev.Type == objdb.EventPut {
		ch.Curr = decode(ev.Value)
	}
	ch.Prev = decode(ev.PrevValue)
	return ch
}
