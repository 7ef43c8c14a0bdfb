// Package follow keeps netplugin's caches of the cluster store in step with
// it: a Follower per state collection and Services for the live instances
// of a registered service. Each calls its handlers for every difference and
// re-lists after an outage, so changes missed while away are reported too.
// The reconcilers read the caches as their desired state
// (docs/architecture.md, "netplugin reconcilers").
package follow

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/state"

	"github.com/contiv/netplugin/utils/ctxutil"
)

// Handlers react to one kind of state object. put gets the previous value
// when the object was known before (nil on create).
type Handlers[T state.Object] struct {
	Put func(ctx context.Context, curr T, prev *T)
	Del func(ctx context.Context, prev T)
}

// Follower keeps a cache of one collection in step with the store and calls
// the handlers for every difference. After a store outage it re-lists and
// diffs against the cache, so deletions missed while away are applied too.
type Follower[T state.Object] struct {
	name  string
	coll  state.Collection[T]
	h     Handlers[T]
	log   logrus.FieldLogger
	retry time.Duration

	mu      sync.RWMutex // guards cache: the reconcilers read it
	cache   map[string]T
	version int64
	// Resyncs counts re-lists after a watch failure (nil: not counted).
	Resyncs interface{ Inc() }
}

// New makes the follower of coll; name labels its logs and metrics.
func New[T state.Object](name string, coll state.Collection[T], h Handlers[T], log logrus.FieldLogger, retry time.Duration) *Follower[T] {
	return &Follower[T]{name: name, coll: coll, h: h, log: log.WithField("state", name), retry: retry, cache: map[string]T{}}
}

// Sync lists the collection once and applies the differences to the cache.
func (f *Follower[T]) Sync(ctx context.Context) error {
	items, ver, err := f.coll.ReadAll(ctx)
	if err != nil {
		return err
	}
	seen := make(map[string]bool, len(items))
	for _, it := range items {
		id := it.StateID()
		seen[id] = true
		f.Apply(ctx, id, &it)
	}
	for _, id := range f.IDs() {
		if !seen[id] {
			f.Apply(ctx, id, nil)
		}
	}
	if ver > f.version {
		f.version = ver
	}
	return nil
}

// Apply moves the cache entry id to curr (nil = deleted), calling handlers
// only when the value really changed.
func (f *Follower[T]) Apply(ctx context.Context, id string, curr *T) {
	f.mu.Lock()
	prev, had := f.cache[id]
	switch {
	case curr == nil && had:
		delete(f.cache, id)
		f.mu.Unlock()
		f.h.Del(ctx, prev)
	case curr != nil && had:
		if sameJSON(prev, *curr) {
			f.mu.Unlock()
			return
		}
		f.cache[id] = *curr
		f.mu.Unlock()
		f.h.Put(ctx, *curr, &prev)
	case curr != nil:
		f.cache[id] = *curr
		f.mu.Unlock()
		f.h.Put(ctx, *curr, nil)
	default:
		f.mu.Unlock()
	}
}

// Name is the name the follower was made with.
func (f *Follower[T]) Name() string { return f.name }

// Get is the cached (desired) value of id.
func (f *Follower[T]) Get(id string) (T, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	v, ok := f.cache[id]
	return v, ok
}

// IDs lists the cached ids.
func (f *Follower[T]) IDs() []string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return slices.Collect(maps.Keys(f.cache))
}

// Run watches from the last synced version until ctx ends, re-listing after
// every watch failure.
func (f *Follower[T]) Run(ctx context.Context) {
	for ctx.Err() == nil {
		if err := f.watch(ctx); err != nil && ctx.Err() == nil {
			f.log.WithError(err).Warn("state watch interrupted; re-listing")
		}
		for ctx.Err() == nil {
			if !ctxutil.Sleep(ctx, f.retry) {
				return
			}
			if err := f.Sync(ctx); err != nil {
				f.log.WithError(err).Warn("state re-list failed; retrying")
				continue
			}
			if f.Resyncs != nil {
				f.Resyncs.Inc()
			}
			break
		}
	}
}

func (f *Follower[T]) watch(ctx context.Context) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := f.coll.Watch(wctx, objdb.WithStartVersion(f.version))
	if err != nil {
		return err
	}
	for c := range ch {
		if c.ID == "" && c.Err != nil {
			return c.Err
		}
		if c.Err != nil {
			f.log.WithError(c.Err).Warn("undecodable state change skipped")
		}
		if c.Version > f.version {
			f.version = c.Version
		}
		f.Apply(ctx, c.ID, c.Curr)
	}
	return ctx.Err()
}

func sameJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}
