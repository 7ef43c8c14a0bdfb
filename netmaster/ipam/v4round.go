package ipam

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sort"

	"github.com/contiv/netplugin/netmaster/ipam/v4store"
	"github.com/contiv/netplugin/objdb"
)

// One committer round of a pool (see V4): a batch of requests becomes at
// most one compare-and-swap write per touched chunk. The steps, in order:
//
//  1. filter:  drop requests whose callers gave up (releases always run);
//  2. sync:    load the pool's layout, re-scan the store if a request
//     waits for it;
//  3. compute: apply each request, in arrival order, to working copies of
//     the chunks it touches;
//  4. reserve: take spare addresses in the chunks written anyway;
//  5. compare-and-swap: write each changed chunk on its version, then
//     answer its requests, or run them again after a lost race;
//  6. mark full: record chunks found full in the pool's summary.

type pending struct {
	r   *request
	res result
}

// round4 is the working state of one round, owned by the committer.
type round4 struct {
	ctx    context.Context
	a      *V4
	p      *pool4
	l      *v4store.Layout
	live   []*request
	synced bool // the store was re-scanned in this round

	work map[int]*[v4store.ChunkWords]uint64
	// fresh: chunks read from the store in this round. A decision that
	// writes nothing (address already taken, release of a free address)
	// is only trusted on a fresh chunk, or on one whose write succeeded;
	// otherwise the chunk is re-read and the request runs again.
	fresh    map[int]bool
	dirty    map[int]bool
	perChunk map[int][]pending
	extras   map[int][]netip.Addr // reserve addresses taken per chunk
	seenFull []int
	retry    []*request
	rides    int             // joined requests placed in this round (maxRides)
	rideKeys map[string]bool // their Ride.Key
}

// round applies one batch, and refills the reserve when asked or when the
// batch shows concurrent demand. It returns the requests to run again
// (lost a CAS race, or waiting for a re-scan).
func (p *pool4) round(a *V4, batch []*request, refill bool) []*request {
	ctx, cancel := context.WithTimeout(a.ctx, a.opts.commitTimeout)
	defer cancel()

	live := p.filterLive(batch)
	if len(live) == 0 && !refill {
		return nil
	}
	r := &round4{ctx: ctx, a: a, p: p, live: live,
		work: map[int]*[v4store.ChunkWords]uint64{}, fresh: map[int]bool{}, dirty: map[int]bool{},
		perChunk: map[int][]pending{}, extras: map[int][]netip.Addr{}}
	if err := r.sync(); err != nil {
		return r.abort(err)
	}
	for _, req := range live {
		if err := r.apply(req); err != nil {
			return r.abort(err)
		}
	}
	r.reserve()
	r.compareAndSwap()
	r.markFull()
	return r.retry
}

// filterLive drops the requests whose callers gave up (a release runs
// anyway) and notes the batch's concurrent demand for the reserve.
func (p *pool4) filterLive(batch []*request) []*request {
	live := batch[:0]
	autos := 0
	for _, r := range batch {
		if r.state.Load() != stateAbandoned || r.kind == reqRelease {
			live = append(live, r)
			if r.kind == reqAuto && r.ride == nil {
				autos++
			}
		}
	}
	p.noteConcurrency(autos)
	return live
}

// abort ends the round on err: a pool deleted and re-created behind this
// process drops the cache and runs the unanswered requests again; any
// other error answers every request.
func (r *round4) abort(err error) []*request {
	if errors.Is(err, v4store.ErrStale) {
		r.p.stale()
		return notDone(r.live)
	}
	for _, req := range r.live {
		r.p.complete(req, result{err: err})
	}
	return nil
}

// sync loads the pool's layout if not cached and re-scans the store when
// a request waits for it (docs/allocation-integrity.md).
func (r *round4) sync() error {
	p := r.p
	if p.invalid.Swap(false) {
		p.reset()
	}
	if p.lay == nil {
		l, err := r.a.st.ReadLayout(r.ctx, p.id)
		if err != nil {
			return err
		}
		p.lay, p.chunks = l, map[int]*cachedChunk{}
	}
	if p.needSync {
		if err := p.resync(r.ctx, r.a); err != nil {
			return err
		}
		p.needSync, r.synced = false, true
	}
	r.l = p.lay
	return nil
}

// getWork returns the working copy of chunk c, reading it if needed.
func (r *round4) getWork(c int) (*[v4store.ChunkWords]uint64, error) {
	if w := r.work[c]; w != nil {
		return w, nil
	}
	if _, cached := r.p.chunks[c]; !cached || r.synced {
		r.fresh[c] = true
	}
	ch, err := r.p.chunk(r.ctx, r.a, c)
	if err != nil {
		return nil, err
	}
	w := ch.bits
	r.work[c] = &w
	return &w, nil
}

// take marks host taken in its working chunk and returns the chunk.
func (r *round4) take(host int64) int {
	c := int(host / v4store.ChunkBits)
	r.work[c][(host%v4store.ChunkBits)/64] |= 1 << uint(host%64)
	r.dirty[c] = true
	return c
}

// apply computes one request on the working copies. An error aborts the
// round.
func (r *round4) apply(req *request) error {
	if req.ride != nil {
		if r.rides >= maxRides || r.rideKeys[req.ride.Key] {
			r.retry = append(r.retry, req)
			return nil
		}
		if r.rideKeys == nil {
			r.rideKeys = map[string]bool{}
		}
		r.rides++
		r.rideKeys[req.ride.Key] = true
	}
	if req.kind == reqAuto {
		return r.applyAuto(req)
	}
	return r.applyAddress(req)
}

// applyAuto takes the lowest free address, or one from the reserve, or
// waits for a re-scan before answering "exhausted".
func (r *round4) applyAuto(req *request) error {
	p, l := r.p, r.l
	host, found, full, err := p.search(r.ctx, r.a, r.work, r.getWork)
	r.seenFull = append(r.seenFull, full...)
	if err != nil {
		return err
	}
	if !found {
		switch addr, ok := p.takeReserved(); {
		case ok && req.ride != nil:
			host, err := l.Host(addr)
			if err != nil {
				return err
			}
			return r.joinChunk(int(host/v4store.ChunkBits), pending{req, result{addr: addr, changed: true}})
		case ok:
			p.complete(req, result{addr: addr, changed: true})
		case r.synced || req.waitSync:
			p.complete(req, result{err: userErr(ErrExhausted, "auto allocation failed - address exhaustion in %s", l.Desc)})
		default:
			req.waitSync = true
			p.needSync = true
			r.retry = append(r.retry, req)
		}
		return nil
	}
	c := r.take(host)
	r.perChunk[c] = append(r.perChunk[c], pending{req, result{addr: l.Addr(host), changed: true}})
	return nil
}

// applyAddress takes (reqSpecific) or frees (reqRelease) one address.
func (r *round4) applyAddress(req *request) error {
	p, l := r.p, r.l
	if req.kind == reqRelease {
		// Releasing a reserved address (a caller that never got it)
		// must not leave it in the reserve once freed.
		p.claimReserved(req.ip)
	}
	host, err := l.Host(req.ip)
	if err != nil {
		p.complete(req, result{err: err})
		return nil
	}
	if !l.Allocatable(host) {
		if req.ride != nil {
			p.complete(req, result{err: ErrNotJoined})
			return nil
		}
		if req.kind == reqRelease {
			p.complete(req, result{addr: req.ip})
		} else {
			p.complete(req, result{err: userErr(ErrNotAllocatable, "ip address %s is not available: outside the allocatable range %s-%s of %s",
				req.ip, l.Addr(l.Lo), l.Addr(l.Hi), l.Desc)})
		}
		return nil
	}
	c := int(host / v4store.ChunkBits)
	w, err := r.getWork(c)
	if err != nil {
		return err
	}
	word, bit := (host%v4store.ChunkBits)/64, uint64(1)<<uint(host%64)
	taken := w[word]&bit != 0
	switch {
	case req.kind == reqSpecific && taken && req.ride != nil && p.claimReserved(req.ip):
		return r.joinChunk(c, pending{req, result{addr: req.ip, changed: true}})
	case req.kind == reqSpecific && taken && p.claimReserved(req.ip):
		p.complete(req, result{addr: req.ip, changed: true})
	case req.kind == reqSpecific && taken:
		r.perChunk[c] = append(r.perChunk[c], pending{req, result{err: userErr(ErrInUse, "ip address %s is not available", req.ip)}})
	case req.kind == reqSpecific:
		w[word] |= bit
		r.dirty[c] = true
		r.perChunk[c] = append(r.perChunk[c], pending{req, result{addr: req.ip, changed: true}})
	case !taken && req.ride != nil:
		return r.joinChunk(c, pending{req, result{addr: req.ip}})
	case !taken:
		r.perChunk[c] = append(r.perChunk[c], pending{req, result{addr: req.ip}})
	default:
		w[word] &^= bit
		r.dirty[c] = true
		r.perChunk[c] = append(r.perChunk[c], pending{req, result{addr: req.ip, changed: true}})
	}
	return nil
}

// reserve takes more addresses for the reserve (v4reserve.go) in the same
// chunk writes. A failed or impossible extra is just not taken: the
// requests above decide the round.
func (r *round4) reserve() {
	for n := r.p.wantReserve(); n > 0; n-- {
		host, found, full, err := r.p.search(r.ctx, r.a, r.work, r.getWork)
		r.seenFull = append(r.seenFull, full...)
		if err != nil || !found {
			return
		}
		c := r.take(host)
		if r.perChunk[c] == nil {
			r.perChunk[c] = []pending{}
		}
		r.extras[c] = append(r.extras[c], r.l.Addr(host))
	}
}

// compareAndSwap writes each changed chunk once, on the version it was
// read at, and answers its requests; a chunk nothing changed in answers
// its requests only if read fresh, else re-reads it and runs them again.
func (r *round4) compareAndSwap() {
	cs := make([]int, 0, len(r.perChunk))
	for c := range r.perChunk {
		cs = append(cs, c)
	}
	sort.Ints(cs)
	for _, c := range cs {
		if !r.dirty[c] {
			r.settleUnchanged(c)
			continue
		}
		r.writeChunk(c)
	}
}

func (r *round4) settleUnchanged(c int) {
	if r.fresh[c] {
		for _, pd := range r.perChunk[c] {
			r.p.complete(pd.r, pd.res)
		}
		return
	}
	delete(r.p.chunks, c) // re-read before trusting it
	for _, pd := range r.perChunk[c] {
		r.retry = append(r.retry, pd.r)
	}
}

func (r *round4) writeChunk(c int) {
	p, l := r.p, r.l
	multi := l.CLo < l.CHi
	w := r.work[c]
	old := p.chunks[c]
	wasFull := multi && p.isFull(c)
	_, hasFree := l.FreeIn(c, w)
	if wasFull && hasFree {
		// Clear the hint before freeing, so a crash in between
		// leaves a "not full" mark on a full chunk (harmless).
		p.setFull(r.ctx, r.a, []int{c}, false)
	}
	if r.hasRides(c) {
		r.writeJoined(c, w, old, hasFree, multi)
		return
	}
	ver, err := r.a.st.PutChunk(r.ctx, l, c, w, old.version)
	switch {
	case err == nil:
		p.chunks[c] = &cachedChunk{bits: *w, version: ver}
		for _, pd := range r.perChunk[c] {
			p.complete(pd.r, pd.res)
		}
		p.addReserve(r.a, r.extras[c])
		if multi && !hasFree && !p.isFull(c) {
			r.seenFull = append(r.seenFull, c)
		}
	case errors.Is(err, objdb.ErrConflict) && !errors.Is(err, objdb.ErrUncertain) && r.ctx.Err() == nil:
		// Definitely not written (putChunk resolved any doubt):
		// run the requests again on a fresh read.
		delete(p.chunks, c)
		for _, pd := range r.perChunk[c] {
			if pd.r.conflicts++; pd.r.conflicts > v4store.MaxConflicts {
				p.complete(pd.r, result{err: fmt.Errorf("gave up after %d conflicts: %w", v4store.MaxConflicts, err)})
				continue
			}
			r.retry = append(r.retry, pd.r)
		}
	default:
		// Failed, or (the store stayed unreachable) of unknown
		// outcome: nothing of it is handed out. If it was applied,
		// its addresses stay taken without an owner until a leader's
		// sweep gives them back; never twice.
		delete(p.chunks, c)
		for _, pd := range r.perChunk[c] {
			p.complete(pd.r, result{err: err})
		}
	}
}

// markFull records in the pool's summary the chunks this round found or
// left full (only pools of more than one chunk keep a summary).
func (r *round4) markFull() {
	p, l := r.p, r.l
	if l.CLo >= l.CHi {
		return
	}
	var nowFull []int
	for _, c := range r.seenFull {
		ch := p.chunks[c]
		if ch == nil || p.isFull(c) || slices.Contains(nowFull, c) {
			continue
		}
		if _, free := l.FreeIn(c, &ch.bits); !free {
			nowFull = append(nowFull, c)
		}
	}
	if len(nowFull) > 0 {
		p.setFull(r.ctx, r.a, nowFull, true)
	}
}
