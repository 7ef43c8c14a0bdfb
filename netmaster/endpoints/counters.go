package endpoints

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/state"
)

// counters batches the counter updates of one state object: while one
// compare-and-swap write is in flight, further deltas accumulate and the
// next write applies them all (group commit). Correctness rests on the
// compare-and-swap, not on this batching.
type counters struct {
	mu      sync.Mutex
	pending *counterBatch
	running bool

	// wmu is held by the one writer of the object at a time: the batching
	// writer above, or a joined transaction's stage (tally.go), from
	// its read of the hint to its write's outcome.
	wmu    sync.Mutex
	hint   any // *casHint[T] of the object, guarded by wmu
	staged any // the value a stage is writing (tally.go), guarded by wmu
}

type counterBatch struct {
	d    [2]int
	done chan struct{}
	err  error
}

func (m *Service) counterFor(id string) *counters {
	m.ctrMu.Lock()
	defer m.ctrMu.Unlock()
	c, ok := m.ctrs[id]
	if !ok {
		c = &counters{}
		m.ctrs[id] = c
	}
	return c
}

// addCounters adds d to the counters of id through apply, batched with
// concurrent calls for the same id; it returns once d is stored (or failed).
func (m *Service) addCounters(ctx context.Context, id string, d [2]int, apply func(ctx context.Context, d [2]int, c *counters) error) error {
	c := m.counterFor(id)
	c.mu.Lock()
	if c.pending == nil {
		c.pending = &counterBatch{done: make(chan struct{})}
	}
	mine := c.pending
	mine.d[0] += d[0]
	mine.d[1] += d[1]
	if c.running {
		c.mu.Unlock()
		<-mine.done // bounded: the running writer uses its own timeout
		return mine.err
	}
	c.running = true
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	for {
		b := c.pending
		c.pending = nil
		c.mu.Unlock()
		b.err = apply(wctx, b.d, c)
		close(b.done)
		c.mu.Lock()
		if c.pending == nil {
			c.running = false
			c.mu.Unlock()
			return mine.err
		}
	}
}

// casHint is the last value written by casUpdateHinted and its version:
// the next update tries it first and re-reads only on conflict.
type casHint[T any] struct {
	val T
	ver int64
	ok  bool
}

func hintOf[T any](c *counters) *casHint[T] {
	h, ok := c.hint.(*casHint[T])
	if !ok {
		h = &casHint[T]{}
		c.hint = h
	}
	return h
}

// casUpdateHinted is state.Collection.Update starting from the hinted value, if any.
func casUpdateHinted[T state.Object](ctx context.Context, c state.Collection[T], id string, h *casHint[T], fn func(cur *T) error) error {
	for {
		var cur T
		var ver int64
		if h.ok {
			cur, ver, h.ok = h.val, h.ver, false
		} else {
			var err error
			if cur, ver, err = c.ReadVersion(ctx, id); err != nil {
				return err
			}
		}
		if err := fn(&cur); err != nil {
			return err
		}
		// This process's counter writer is the only one of the object
		// (addCounters), so its value is its own: an attempt of unknown
		// outcome is settled by reading it back, never applied twice.
		nv, err := c.WriteResolved(ctx, cur, objdb.WithPrevVersion(ver))
		if (errors.Is(err, objdb.ErrConflict) || errors.Is(err, objdb.ErrNotFound)) && !errors.Is(err, objdb.ErrUncertain) {
			if err := ctx.Err(); err != nil {
				return err
			}
			continue // re-read
		}
		if err != nil {
			return err
		}
		h.val, h.ver, h.ok = cur, nv, true
		return nil
	}
}

// bumpNetwork adds to a network state's endpoint and address counters.
func (m *Service) bumpNetwork(ctx context.Context, netID string, eps, addrs int) error {
	if eps == 0 && addrs == 0 {
		return nil
	}
	err := m.addCounters(ctx, "net/"+netID, [2]int{eps, addrs}, func(ctx context.Context, d [2]int, c *counters) error {
		c.wmu.Lock()
		defer c.wmu.Unlock()
		return casUpdateHinted(ctx, m.st.Networks, netID, hintOf[state.Network](c), func(n *state.Network) error {
			addNetwork(n, d)
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("update counters of network %q: %w", netID, err)
	}
	return nil
}

// bumpGroup adds to a group state's endpoint counter.
func (m *Service) bumpGroup(ctx context.Context, epgID string, eps int) error {
	err := m.addCounters(ctx, "epg/"+epgID, [2]int{eps, 0}, func(ctx context.Context, d [2]int, c *counters) error {
		c.wmu.Lock()
		defer c.wmu.Unlock()
		return casUpdateHinted(ctx, m.st.EndpointGroups, epgID, hintOf[state.EndpointGroup](c), func(g *state.EndpointGroup) error {
			addGroup(g, d)
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("update endpoint count of group %q: %w", epgID, err)
	}
	return nil
}

// addNetwork adds d (endpoints, handed-out addresses) to a network's
// counters.
func addNetwork(n *state.Network, d [2]int) {
	n.EpCount += d[0]
	n.EpAddrCount += d[1]
	if n.EpAddrCount < 0 {
		n.EpAddrCount = 0
	}
}

// addGroup adds d[0] endpoints to a group's counter.
func addGroup(g *state.EndpointGroup, d [2]int) { g.EpCount += d[0] }
