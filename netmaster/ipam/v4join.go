package ipam

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/contiv/netplugin/netmaster/ipam/v4store"
	"github.com/contiv/netplugin/objdb"
)

// Joined writes: a caller whose own writes must land together with an
// allocation or a release (the endpoint record and the counters of a
// createEndpoint or deleteEndpoint) hands them to the committer as a Ride.
// The committer writes the chunk and the rides of its batch in one store
// transaction (objdb.Txner): the address is taken (or freed) exactly when
// the rides' writes land, in one round trip for the whole batch
// (docs/allocation-integrity.md, "One transaction").

// ErrNotJoined: the request could not join a chunk write (the store has no
// transactions, or the address is one no chunk holds); nothing was
// written, and the caller writes its part separately.
var ErrNotJoined = errors.New("ipam: request cannot join a chunk write")

// maxRides bounds the joined requests of one transaction (consul accepts
// at most 64 operations in one).
const maxRides = 24

// Ride is what a joined request adds to its chunk's transaction.
type Ride struct {
	// Key is the request's own store key (its record): rides of one key
	// never share a transaction, the later one waits for the next round.
	Key string
	// Build returns the request's own operations and its tally deltas for
	// the address it was given (changed: the chunk's bit changed, i.e.
	// the address was taken, or freed, by this request). It must be pure:
	// a batch that lost a race is built again.
	Build func(addr netip.Addr, changed bool) ([]objdb.TxnOp, []TallyDelta)
}

// TallyDelta adds D to tally T.
type TallyDelta struct {
	T Tally
	D [2]int
}

// Tally is a stored pair of counts that the joined requests of a batch
// update together: one compare-and-swap operation per tally and batch,
// their deltas summed.
type Tally interface {
	// ID names the tally; a transaction stages its tallies in ID order.
	ID() string
	// Stage takes the tally for one transaction (other stages wait until
	// Done or Abort) and returns the operation adding d.
	Stage(ctx context.Context, d [2]int) (objdb.TxnOp, error)
	// Done ends a stage whose transaction was applied, at version (0:
	// applied, version unknown).
	Done(version int64)
	// Abort ends a stage whose transaction was not applied, or whose
	// outcome is unknown.
	Abort()
}

// CanJoin reports whether requests can join chunk writes (the store has
// transactions).
func (a *V4) CanJoin() bool { return a.txn != nil }

// AllocateJoined is Allocate (ip invalid) or AllocateSpecific (ip valid)
// whose address is taken in the same transaction as ride's writes. It
// returns the store version the transaction wrote at (every key of one
// transaction gets it; 0 when unknown). A
// failed ride condition (its record exists) fails the request with an
// error wrapping objdb.ErrConflict and nothing is taken. An error wrapping
// objdb.ErrUncertain means the transaction may have been applied.
func (a *V4) AllocateJoined(ctx context.Context, id string, ip netip.Addr, ride Ride) (netip.Addr, int64, error) {
	if a.txn == nil {
		return netip.Addr{}, 0, ErrNotJoined
	}
	r := &request{kind: reqAuto, ride: &ride}
	if ip.IsValid() {
		if !ip.Is4() {
			return netip.Addr{}, 0, fmt.Errorf("allocate address %s in pool %q: %w", ip, id, userErr(ErrInvalid, "unable to convert hostIP %s to uint32", ip))
		}
		r.kind, r.ip = reqSpecific, ip
	}
	res, err := a.submit(ctx, id, r)
	if err != nil {
		return netip.Addr{}, 0, fmt.Errorf("allocate address in pool %q: %w", id, err)
	}
	return res.addr, res.version, nil
}

// ReleaseJoined is Release in the same transaction as ride's writes;
// released reports whether the address was taken.
func (a *V4) ReleaseJoined(ctx context.Context, id string, ip netip.Addr, ride Ride) (released bool, err error) {
	if a.txn == nil || !ip.Is4() {
		return false, ErrNotJoined
	}
	res, err := a.submit(ctx, id, &request{kind: reqRelease, ip: ip, ride: &ride})
	if err != nil {
		return false, fmt.Errorf("release address %s in pool %q: %w", ip, id, err)
	}
	return res.changed, nil
}

// joinChunk puts a joined request whose answer needs no bit change into
// chunk c's write anyway: its rides land only with a chunk write.
func (r *round4) joinChunk(c int, pd pending) error {
	if _, err := r.getWork(c); err != nil {
		return err
	}
	r.dirty[c] = true
	r.perChunk[c] = append(r.perChunk[c], pd)
	return nil
}

// hasRides reports whether chunk c's write carries joined requests.
func (r *round4) hasRides(c int) bool {
	for _, pd := range r.perChunk[c] {
		if pd.r.ride != nil && pd.res.err == nil {
			return true
		}
	}
	return false
}

// joined is one transaction under construction: the chunk's put (op 0,
// the witness: its value carries the allocator id), the rides' operations
// and one operation per tally.
type joined struct {
	ops     []objdb.TxnOp
	owner   []int // pending index of each op, -1: chunk or tally
	tallies []Tally
	tallyAt int // index of the first tally op
}

// buildJoined assembles chunk c's transaction and stages its tallies.
func (r *round4) buildJoined(c int, w *[v4store.ChunkWords]uint64, base int64) (*joined, error) {
	l := r.l
	chunkOp := objdb.TxnOp{Kind: objdb.TxnPut, Key: r.a.st.Keys(l.ID).Chunk(c), Value: l.EncodeChunk(c, w, r.a.id)}
	if base == 0 {
		chunkOp.Absent = true
	} else {
		chunkOp.PrevVersion = base
	}
	j := &joined{ops: []objdb.TxnOp{chunkOp}, owner: []int{-1}}
	sums := map[string]*TallyDelta{}
	for i, pd := range r.perChunk[c] {
		if pd.r.ride == nil || pd.res.err != nil {
			continue
		}
		ops, ds := pd.r.ride.Build(pd.res.addr, pd.res.changed)
		for _, op := range ops {
			j.ops = append(j.ops, op)
			j.owner = append(j.owner, i)
		}
		for _, d := range ds {
			s := sums[d.T.ID()]
			if s == nil {
				s = &TallyDelta{T: d.T}
				sums[d.T.ID()] = s
			}
			s.D[0] += d.D[0]
			s.D[1] += d.D[1]
		}
	}
	ids := make([]string, 0, len(sums))
	for id := range sums {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	j.tallyAt = len(j.ops)
	for _, id := range ids {
		s := sums[id]
		if s.D == [2]int{} {
			continue
		}
		op, err := s.T.Stage(r.ctx, s.D)
		if err != nil {
			j.abort()
			return nil, fmt.Errorf("stage tally %s: %w", id, err)
		}
		j.tallies = append(j.tallies, s.T)
		j.ops = append(j.ops, op)
		j.owner = append(j.owner, -1)
	}
	return j, nil
}

func (j *joined) abort() {
	for _, t := range j.tallies {
		t.Abort()
	}
}

// writeJoined writes chunk c and its rides in one transaction and answers
// the requests: all of them on success; on a definite conflict, a request
// whose own condition failed with that conflict and the others again on a
// fresh read; on any other failure, all of them with the error (it wraps
// objdb.ErrUncertain when the transaction may have been applied: then
// nothing it took is handed out twice and nothing it freed is reused by
// this round).
func (r *round4) writeJoined(c int, w *[v4store.ChunkWords]uint64, old *cachedChunk, hasFree, multi bool) {
	p := r.p
	j, err := r.buildJoined(c, w, old.version)
	if err != nil {
		delete(p.chunks, c)
		for _, pd := range r.perChunk[c] {
			p.complete(pd.r, result{err: err})
		}
		return
	}
	vers, err := objdb.TxnResolved(r.ctx, r.a.txn, r.a.kv, j.ops, 0)
	if err == nil {
		for k, t := range j.tallies {
			t.Done(vers[j.tallyAt+k])
		}
		p.chunks[c] = &cachedChunk{bits: *w, version: vers[0]}
		for _, pd := range r.perChunk[c] {
			if pd.res.err == nil {
				pd.res.version = vers[0]
			}
			p.complete(pd.r, pd.res)
		}
		p.addReserve(r.a, r.extras[c])
		if multi && !hasFree && !p.isFull(c) {
			r.seenFull = append(r.seenFull, c)
		}
		return
	}
	j.abort()
	var conflict *objdb.TxnConflict
	if !errors.As(err, &conflict) || errors.Is(err, objdb.ErrUncertain) || r.ctx.Err() != nil {
		delete(p.chunks, c)
		for _, pd := range r.perChunk[c] {
			p.complete(pd.r, result{err: err})
		}
		return
	}
	if conflict.FailedOp(0) {
		delete(p.chunks, c)
	}
	failed := map[int]bool{}
	for _, i := range conflict.Failed {
		if i < len(j.owner) && j.owner[i] >= 0 {
			failed[j.owner[i]] = true
		}
	}
	for i, pd := range r.perChunk[c] {
		if failed[i] {
			p.complete(pd.r, result{err: err})
			continue
		}
		if pd.r.conflicts++; pd.r.conflicts > v4store.MaxConflicts {
			p.complete(pd.r, result{err: fmt.Errorf("gave up after %d conflicts: %w", v4store.MaxConflicts, err)})
			continue
		}
		r.retry = append(r.retry, pd.r)
	}
}
