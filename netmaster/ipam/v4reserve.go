package ipam

import (
	"context"
	"net/netip"
	"slices"
	"time"
)

// The reserve: under concurrent load a pool's committer takes a few
// addresses more than the batch asked for, in the same chunk write, and
// keeps them in memory. Later Allocate calls are answered from the reserve
// without a store round trip, and the committer refills it in the
// background when it runs low. A lone request (no concurrency seen) never
// builds a reserve, so the one-at-a-time order stays "lowest free".
//
// Reserved addresses are taken in the store like any allocation, so the
// no-double-allocation guarantee is unchanged; they are just not handed
// out yet. Every reader of a pool's usage (snapshot, IsAllocated) and
// CreateSubPool first gives the reserve back (flushReserve), so what a
// reader sees never includes them; a reserve unused for reserveIdle is
// given back by itself (WithReserveIdle); Close gives back what it can. A
// netmaster killed with a reserve leaves those addresses without an owner
// record, which the next leader's sweep releases, as for any interrupted
// allocation.

// maxReserve bounds the addresses one pool holds ahead of demand.
const maxReserve = 32

// noteConcurrency raises the reserve target after a batch that carried
// autos concurrent auto allocations (called by the committer).
func (p *pool4) noteConcurrency(autos int) {
	if autos < 2 {
		return
	}
	p.mu.Lock()
	p.target = min(maxReserve, max(p.target, 2*autos))
	p.mu.Unlock()
}

// popReserve hands out the lowest reserved address. When the reserve
// falls to half its target, the committer is asked to refill it; start
// reports that the caller (holding a.mu) must start the committer.
func (p *pool4) popReserve() (addr netip.Addr, ok, start bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if addr, ok = p.takeLowestLocked(); !ok {
		return netip.Addr{}, false, false
	}
	p.lastPop = time.Now()
	if len(p.reserve) <= p.target/2 {
		p.refill = true
		if !p.running {
			p.running = true
			start = true
		}
	}
	return addr, true, start
}

// takeReserved hands out a reserved address to a request the committer
// could not serve from the store (the pool is otherwise exhausted).
func (p *pool4) takeReserved() (netip.Addr, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.takeLowestLocked()
}

// takeLowestLocked removes and returns the lowest reserved address.
// p.mu must be held.
func (p *pool4) takeLowestLocked() (netip.Addr, bool) {
	if len(p.reserve) == 0 {
		return netip.Addr{}, false
	}
	addr := p.reserve[0]
	p.reserve = p.reserve[1:]
	return addr, true
}

// claimReserved removes ip from the reserve (a preferred-address request
// for it): it is then the caller's, already taken in the store.
func (p *pool4) claimReserved(ip netip.Addr) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := slices.Index(p.reserve, ip)
	if i < 0 {
		return false
	}
	p.reserve = slices.Delete(p.reserve, i, i+1)
	return true
}

// wantReserve is how many addresses the committer should add.
func (p *pool4) wantReserve() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return max(0, p.target-len(p.reserve))
}

// addReserve stores addresses the committer just took for the reserve and
// arms the idle timer.
func (p *pool4) addReserve(a *V4, addrs []netip.Addr) {
	if len(addrs) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reserve = append(p.reserve, addrs...)
	slices.SortFunc(p.reserve, func(x, y netip.Addr) int { return x.Compare(y) })
	p.lastPop = time.Now()
	if p.trim == nil {
		p.trim = time.AfterFunc(a.opts.reserveIdle, func() { a.trimReserve(p) })
	} else {
		p.trim.Reset(a.opts.reserveIdle)
	}
}

// dropReserve forgets the reserve without touching the store (the pool was
// deleted or re-created under this process).
func (p *pool4) dropReserve() {
	p.mu.Lock()
	p.reserve, p.target = nil, 0
	p.mu.Unlock()
}

// drainReserveLocked empties the reserve and stops refills until concurrency is
// seen again; it returns release requests for the drained addresses.
// Called with p.mu held.
func (p *pool4) drainReserveLocked() []*request {
	rs := make([]*request, 0, len(p.reserve))
	for _, ip := range p.reserve {
		rs = append(rs, &request{kind: reqRelease, ip: ip, done: make(chan result, 1)})
	}
	p.reserve, p.target = nil, 0
	return rs
}

// trimReserve gives back a reserve unused for the idle time (timer callback).
func (a *V4) trimReserve(p *pool4) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed || a.pools[p.id] != p {
		return
	}
	p.mu.Lock()
	if len(p.reserve) == 0 {
		p.mu.Unlock()
		return
	}
	if idle := time.Since(p.lastPop); idle < a.opts.reserveIdle {
		p.trim.Reset(a.opts.reserveIdle - idle)
		p.mu.Unlock()
		return
	}
	releases := p.drainReserveLocked()
	p.mu.Unlock()
	a.queueLocked(p, releases)
}

// queueLocked queues rs on p and starts its committer if it is idle.
// a.mu must be held (so Close cannot miss the committer).
func (a *V4) queueLocked(p *pool4, rs []*request) {
	start := false
	for _, r := range rs {
		if p.enqueue(r) {
			start = true
		}
	}
	if start {
		a.wg.Add(1)
		go p.run(a)
	}
}

// flushReserve gives pool id's reserve back to the store and waits until
// it is written, so that a reader sees only handed-out addresses.
func (a *V4) flushReserve(ctx context.Context, id string) error {
	a.mu.Lock()
	p := a.pools[id]
	if a.closed || p == nil {
		a.mu.Unlock()
		return nil
	}
	p.mu.Lock()
	rs := p.drainReserveLocked()
	if len(rs) == 0 {
		p.mu.Unlock()
		a.mu.Unlock()
		return nil
	}
	p.mu.Unlock()
	a.queueLocked(p, rs)
	a.mu.Unlock()
	for _, r := range rs {
		select {
		case res := <-r.done:
			if res.err != nil {
				return res.err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// flushAll gives back every pool's reserve (at Close), bounded by ctx.
func (a *V4) flushAll(ctx context.Context) {
	a.mu.Lock()
	ids := make([]string, 0, len(a.pools))
	for id, p := range a.pools {
		ids = append(ids, id)
		p.mu.Lock()
		if p.trim != nil {
			p.trim.Stop()
		}
		p.mu.Unlock()
	}
	a.mu.Unlock()
	for _, id := range ids {
		_ = a.flushReserve(ctx, id) // best effort: the sweep covers the rest
	}
}
