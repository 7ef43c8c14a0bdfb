package consul

import (
	"context"
	"fmt"
	"sort"

	"github.com/hashicorp/consul/api"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/utils/ctxutil"
)

// maxDeleteLookups bounds the per-round requests that place deletes in
// store order (see deleteIndex); a round with more deletes (a tree
// delete) gives them all the round's index.
const maxDeleteLookups = 16

// Watch streams changes under prefix. It runs blocking list queries on the
// prefix and diffs each answer against an in-memory copy: a new key or a
// changed ModifyIndex is an EventPut (PrevValue from the copy), a vanished
// key an EventDelete carrying the last value seen.
//
// Limits of consul (it keeps no readable history):
//   - One answer may cover several changes. Puts are ordered by their
//     ModifyIndex; a delete is placed at the index of the key's tombstone
//     when consul still reports it, otherwise at the answer's index. A key
//     written and deleted between two answers produces no event, and of
//     several writes of one key only the last is seen.
//   - WithStartVersion(v) first delivers every key whose ModifyIndex is
//     above v, as puts. A key deleted after v is not reported: consul shows
//     no deleted keys to a client, so a List-then-Watch consumer learns of
//     such a delete only by re-listing.
//   - When the agent's index goes backwards (an agent restarted without its
//     data) the next answer is a full listing and is diffed against the
//     copy like any other, so consumers converge on the new state.
//
// Transient errors are retried with backoff (and logged); the channel
// stays open until ctx ends or the client is closed. No event carries Err.
func (c *Client) Watch(ctx context.Context, prefix string, opts ...objdb.WatchOption) (<-chan objdb.Event, error) {
	if err := c.checkOpen(); err != nil {
		return nil, fmt.Errorf("watch %q: %w", prefix, err)
	}
	if err := checkPrefix(prefix); err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	wo := objdb.ApplyWatchOps(opts)
	p := &poller{c: c, prefix: c.full(prefix)}
	pairs, err := p.list(ctx, fmt.Sprintf("watch %q", prefix))
	if err != nil {
		return nil, err
	}
	cache := make(map[string]*api.KVPair, len(pairs))
	var replay []objdb.Event
	for _, kv := range pairs {
		cache[kv.Key] = kv
		if wo.AfterVersion > 0 && int64(kv.ModifyIndex) > wo.AfterVersion {
			replay = append(replay, objdb.Event{Type: objdb.EventPut, Key: c.rel(kv.Key), Value: kv.Value, Version: int64(kv.ModifyIndex)})
		}
	}
	sortEvents(replay)

	ch, err := startPump(c, ctx, replay, func(ctx context.Context) ([]objdb.Event, error) {
		pairs, prev, err := p.next(ctx)
		if err != nil {
			return nil, err
		}
		return c.diff(ctx, cache, pairs, prev, p.idx), nil
	})
	if err != nil {
		return nil, fmt.Errorf("watch %q: %w", prefix, err)
	}
	return ch, nil
}

// startPump runs pump in a goroutine the client owns, until ctx ends or
// the client is closed; the returned channel is closed when it stops.
func startPump[E any](c *Client, ctx context.Context, initial []E, round func(context.Context) ([]E, error)) (<-chan E, error) {
	ch := make(chan E)
	wctx, cancel := context.WithCancel(ctx)
	err := c.goOwned(func() {
		defer close(ch)
		defer cancel()
		stop := context.AfterFunc(c.base, cancel)
		defer stop()
		pump(wctx, ch, initial, round)
	})
	if err != nil {
		cancel()
		return nil, err
	}
	return ch, nil
}

// maxQueued bounds the events a watch holds for a slow consumer; above
// it, polling pauses and later changes are seen merged.
const maxQueued = 4096

// pump sends initial, then the events of successive poll rounds, to out
// until ctx ends. Rounds run in their own goroutine and their events wait
// in a queue, so a consumer that reads late does not stall polling (consul
// shows only the state after each round: the sooner the next query, the
// fewer changes one answer merges). round returns an error only when ctx
// has ended. pump returns after its goroutine has stopped.
func pump[E any](ctx context.Context, out chan<- E, initial []E, round func(context.Context) ([]E, error)) {
	ctx, cancel := context.WithCancel(ctx)
	results := make(chan []E)
	done := make(chan struct{})
	go func() { // owned by pump: it cancels ctx and waits for done
		defer close(done)
		for {
			evs, err := round(ctx)
			if err != nil {
				return
			}
			if len(evs) == 0 {
				continue
			}
			select {
			case results <- evs:
			case <-ctx.Done():
				return
			}
		}
	}()
	defer func() {
		cancel()
		<-done
	}()
	queue := initial
	for {
		var send chan<- E
		var head E
		if len(queue) > 0 {
			send, head = out, queue[0]
		}
		recv := results
		if len(queue) >= maxQueued {
			recv = nil
		}
		select {
		case send <- head:
			var zero E
			queue[0] = zero
			queue = queue[1:]
		case evs := <-recv:
			queue = append(queue, evs...)
		case <-ctx.Done():
			return
		}
	}
}

func sortEvents(evs []objdb.Event) {
	sort.SliceStable(evs, func(i, j int) bool {
		if evs[i].Version != evs[j].Version {
			return evs[i].Version < evs[j].Version
		}
		return evs[i].Key < evs[j].Key
	})
}

// diff updates cache to pairs (the state at index idx, previous answer at
// prev) and returns the changes in store order.
func (c *Client) diff(ctx context.Context, cache map[string]*api.KVPair, pairs api.KVPairs, prev, idx uint64) []objdb.Event {
	var evs []objdb.Event
	seen := make(map[string]bool, len(pairs))
	for _, kv := range pairs {
		seen[kv.Key] = true
		old := cache[kv.Key]
		if old != nil && old.ModifyIndex == kv.ModifyIndex {
			continue
		}
		ev := objdb.Event{Type: objdb.EventPut, Key: c.rel(kv.Key), Value: kv.Value, Version: int64(kv.ModifyIndex)}
		if old != nil {
			ev.PrevValue = old.Value
		}
		evs = append(evs, ev)
		cache[kv.Key] = kv
	}
	var gone []string
	for k := range cache {
		if !seen[k] {
			gone = append(gone, k)
		}
	}
	sort.Strings(gone)
	for _, k := range gone {
		v := idx
		if len(gone) <= maxDeleteLookups && prev < idx {
			v = c.deleteIndex(ctx, k, prev, idx)
		}
		evs = append(evs, objdb.Event{Type: objdb.EventDelete, Key: c.rel(k), PrevValue: cache[k].Value, Version: int64(v)})
		delete(cache, k)
	}
	sortEvents(evs)
	return evs
}

// deleteIndex places the delete of full, seen between the answers at lo
// and hi, in store order. A prefix list of exactly the deleted key is
// answered with the index of its tombstone (consul keeps tombstones until
// its tombstone GC), or with a later index when a longer key with that
// prefix ("k1" → "k10") changed after the delete: such a delete may be
// placed a little late. If the index is not within (lo, hi] (the key came
// back, or the lookup failed) the delete is placed at hi.
func (c *Client) deleteIndex(ctx context.Context, full string, lo, hi uint64) uint64 {
	rctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	pairs, meta, err := c.api.KV().List(full, qopts(rctx))
	if err != nil || meta == nil {
		return hi
	}
	for _, kv := range pairs {
		if kv.Key == full {
			return hi
		}
	}
	if meta.LastIndex > lo && meta.LastIndex <= hi {
		return meta.LastIndex
	}
	return hi
}

// poller runs blocking list queries on one consul prefix.
type poller struct {
	c      *Client
	prefix string
	idx    uint64 // index of the last answer
}

// list reads the prefix now (with the retry budget) and sets the index.
func (p *poller) list(ctx context.Context, what string) (api.KVPairs, error) {
	var pairs api.KVPairs
	err := p.c.retry(ctx, what, func(ctx context.Context) error {
		kvs, meta, err := p.c.api.KV().List(p.prefix, qopts(ctx))
		if err != nil {
			return err
		}
		pairs, p.idx = kvs, meta.LastIndex
		return nil
	})
	return pairs, err
}

// next waits until the prefix's index moves and returns the new listing
// and the index of the previous answer. Errors are retried with backoff
// for as long as ctx lasts; only ctx's end is returned.
func (p *poller) next(ctx context.Context) (api.KVPairs, uint64, error) {
	failures := 0
	bo := p.c.cfg.newBackoff()
	verify := false
	for {
		rctx, cancel := context.WithTimeout(ctx, p.c.blockingTimeout())
		q := &api.QueryOptions{WaitIndex: p.idx, WaitTime: p.c.cfg.WaitTime}
		if failures > 0 || verify {
			// After a failure, read at once: if the agent restarted
			// with a lower index, a blocking query would wait its full
			// time before telling. And read consistently: a restarted
			// server answers default-mode reads while it still replays
			// its log, with a partial state and a lower index, which
			// would look like every later key was deleted. Consistent
			// reads wait for the leader's barrier (state fully applied).
			q.WaitIndex = 0
			q.RequireConsistent = true
		}
		kvs, meta, err := p.c.api.KV().List(p.prefix, q.WithContext(rctx))
		cancel()
		if ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		if err != nil {
			d := bo.NextBackOff()
			entry := p.c.log.WithError(err).WithField("prefix", p.prefix)
			if failures == 0 {
				entry.Warnf("consul watch query failed, retrying in %v", d)
			} else {
				entry.Debugf("consul watch query failed again (%d), retrying in %v", failures+1, d)
			}
			failures++
			if !ctxutil.Sleep(ctx, d) {
				return nil, 0, ctx.Err()
			}
			continue
		}
		if failures > 0 {
			p.c.log.WithField("prefix", p.prefix).Infof("consul watch query works again after %d failures", failures)
			failures = 0
			bo.Reset()
		}
		prev, idx := p.idx, meta.LastIndex
		if idx == prev {
			continue // the wait timed out with no change
		}
		if idx < prev {
			if !q.RequireConsistent {
				verify = true // confirm with a consistent read first
				continue
			}
			p.c.log.WithField("prefix", p.prefix).Warnf("consul index went back from %d to %d (store reset?): re-listing", prev, idx)
		}
		verify = false
		if idx == 0 {
			idx = 1 // never block on 0 ("no wait") in a loop
		}
		p.idx = idx
		return kvs, prev, nil
	}
}
