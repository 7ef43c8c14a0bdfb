package ipam

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/contiv/netplugin/netmaster/ipam/v4store"
	"github.com/contiv/netplugin/objdb"
)

// V4 allocates IPv4 addresses from pools kept in the store (docs/architecture.md
// decisions 2 and 3).
//
// Allocation order: the lowest free address of the pool, as the original.
//
// Concurrency: requests for one pool made concurrently in this process are
// batched: one committer goroutine per busy pool applies every queued
// request to its cached copy of the touched chunk and writes that chunk
// once, by compare-and-swap on its version. A batch therefore costs one
// store write whatever its size and the subnet's size. Another process
// (a second netmaster) writing the same chunk makes the CAS fail; the
// committer re-reads the chunk and applies the requests again, so an
// address is never handed out twice. A chunk write whose outcome the store
// left unknown (a timed-out attempt it may have applied) is read back
// before anything it took is handed out or its requests run again
// (putChunk, docs/allocation-integrity.md).
//
// The per-pool "full" summary lets the search skip full chunks. It is only
// a hint: a chunk wrongly marked not full costs one read and is fixed; a
// chunk wrongly marked full (possible only when two processes race on it)
// is found again by the full re-scan that runs before exhaustion is
// reported, so exhaustion is never reported while an address is free.
//
// A V4 caches pool state (header, chunks, summary). Correctness never
// rests on the cache: every write is a CAS on the version read, and a
// decision that writes nothing ("address in use", "release of a free
// address", "exhausted") is confirmed on a fresh read first. Only the
// lowest-free order across processes is best effort. Create one V4 per
// netmaster leadership term and Close it when the term ends.
type V4 struct {
	kv   objdb.KV
	opts options

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // committer goroutines

	mu     sync.Mutex
	closed bool
	pools  map[string]*pool4

	id string         // random: marks this allocator's chunk writes (Store.PutChunk)
	st *v4store.Store // the pools in the store

	txn objdb.Txner // nil: the store has no transactions (v4join.go)
}

// NewV4 returns an IPv4 allocator over kv.
func NewV4(kv objdb.KV, opts ...Option) *V4 {
	ctx, cancel := context.WithCancel(context.Background())
	a := &V4{kv: kv, opts: applyOptions(opts), ctx: ctx, cancel: cancel, pools: map[string]*pool4{},
		id: strconv.FormatUint(rand.Uint64(), 36), txn: objdb.TxnOf(kv)}
	a.st = v4store.NewStore(kv, a.opts.prefix, a.id)
	return a
}

// Close gives back the pools' reserves (best effort, a few seconds at
// most), fails requests still queued and waits for the committers to stop.
func (a *V4) Close() {
	ctx, cancel := context.WithTimeout(a.ctx, closeFlushTimeout)
	a.flushAll(ctx)
	cancel()
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	a.cancel()
	a.wg.Wait()
}

// closeFlushTimeout bounds the reserve hand-back at Close.
const closeFlushTimeout = 3 * time.Second

// PoolInfo describes a pool.
type PoolInfo struct {
	ID      string
	Subnet  Subnet     // the network's subnet (a sub-pool's parent's)
	First   netip.Addr // the pool's range
	Last    netip.Addr
	Gateway string // "" when none
	Parent  string // sub-pool: the pool it is carved from
	Pool    string // sub-pool: its "a-b" string
}

func poolInfo(l *v4store.Layout) PoolInfo {
	return PoolInfo{ID: l.ID, Subnet: l.Subnet, First: l.First, Last: l.Last,
		Gateway: l.Hdr.Gateway, Parent: l.Hdr.Parent, Pool: l.Hdr.Pool}
}

// CreatePool creates the IPv4 pool id for subnet ("a.b.c.d/len" or
// "a.b.c.d-e.f.g.h/len", see ParseSubnet). With WithGateway the gateway is
// reserved. Creating a pool that exists with the same definition succeeds
// (and reserves the gateway if that had not happened); with another
// definition it fails with ErrPoolExists.
func (a *V4) CreatePool(ctx context.Context, id, subnet string, opts ...PoolOption) (PoolInfo, error) {
	if err := v4store.CheckPoolID(id); err != nil {
		return PoolInfo{}, err
	}
	sn, err := ParseSubnet(subnet)
	if err != nil {
		return PoolInfo{}, fmt.Errorf("create pool %q: %w", id, err)
	}
	po := applyPoolOptions(opts)
	var gw netip.Addr
	if po.gateway != "" {
		if gw, err = sn.CheckHost(po.gateway); err != nil {
			return PoolInfo{}, fmt.Errorf("create pool %q: gateway: %w", id, err)
		}
	}
	h := v4store.Header{Subnet: sn.String(), First: sn.First.String(), Last: sn.Last.String()}
	if gw.IsValid() {
		h.Gateway = gw.String()
	}
	l, err := a.st.PutHeader(ctx, id, h)
	if err != nil {
		return PoolInfo{}, fmt.Errorf("create pool %q: %w", id, err)
	}
	if gw.IsValid() {
		if _, err := a.AllocateSpecific(ctx, id, gw); err != nil &&
			!errors.Is(err, ErrInUse) && !errors.Is(err, ErrNotAllocatable) {
			return PoolInfo{}, fmt.Errorf("create pool %q: reserve gateway: %w", id, err)
		}
	}
	return poolInfo(l), nil
}

// Pool describes the pool id.
func (a *V4) Pool(ctx context.Context, id string) (PoolInfo, error) {
	if err := v4store.CheckPoolID(id); err != nil {
		return PoolInfo{}, err
	}
	l, err := a.st.ReadLayout(ctx, id)
	if err != nil {
		return PoolInfo{}, fmt.Errorf("read pool %q: %w", id, err)
	}
	return poolInfo(l), nil
}

// Allocate hands out the lowest free address of the pool. It fails with
// ErrExhausted ("auto allocation failed - address exhaustion in subnet
// <base>/<len>" or "… in pool <a-b>") when none is left.
func (a *V4) Allocate(ctx context.Context, id string) (netip.Addr, error) {
	res, err := a.submit(ctx, id, &request{kind: reqAuto})
	if err != nil {
		return netip.Addr{}, fmt.Errorf("allocate address in pool %q: %w", id, err)
	}
	return res.addr, nil
}

// AllocateSpecific takes ip (a preferred address). It fails with ErrInUse
// ("ip address <ip> is not available") when it is already taken,
// ErrNotAllocatable when the pool never hands it out (network, broadcast,
// outside the range) and ErrOutOfSubnet outside the subnet; nothing changes
// then. A caller that lets an endpoint re-request the address it was given
// checks its own records when it gets ErrInUse.
func (a *V4) AllocateSpecific(ctx context.Context, id string, ip netip.Addr) (netip.Addr, error) {
	if !ip.Is4() {
		return netip.Addr{}, fmt.Errorf("allocate address %s in pool %q: %w", ip, id, userErr(ErrInvalid, "unable to convert hostIP %s to uint32", ip))
	}
	res, err := a.submit(ctx, id, &request{kind: reqSpecific, ip: ip})
	if err != nil {
		return netip.Addr{}, fmt.Errorf("allocate address %s in pool %q: %w", ip, id, err)
	}
	return res.addr, nil
}

// Release frees ip. Releasing a free address, or one the pool never hands
// out, is a no-op; released reports whether the address was taken.
func (a *V4) Release(ctx context.Context, id string, ip netip.Addr) (released bool, err error) {
	if !ip.Is4() {
		return false, fmt.Errorf("release address %s in pool %q: %w", ip, id, userErr(ErrInvalid, "unable to convert hostIP %s to uint32", ip))
	}
	res, err := a.submit(ctx, id, &request{kind: reqRelease, ip: ip})
	if err != nil {
		return false, fmt.Errorf("release address %s in pool %q: %w", ip, id, err)
	}
	return res.changed, nil
}

type reqKind int

const (
	reqAuto reqKind = iota
	reqSpecific
	reqRelease
)

const (
	statePending int32 = iota
	stateDone
	stateAbandoned
)

type request struct {
	kind      reqKind
	ip        netip.Addr // reqSpecific, reqRelease
	conflicts int
	waitSync  bool  // an auto request that found nothing before a full re-scan
	ride      *Ride // joined writes (v4join.go); nil: none
	state     atomic.Int32
	done      chan result
}

type result struct {
	addr    netip.Addr
	changed bool
	err     error
	version int64 // a joined request's transaction (v4join.go); 0: unknown
}

func (a *V4) submit(ctx context.Context, id string, r *request) (result, error) {
	if err := v4store.CheckPoolID(id); err != nil {
		return result{}, err
	}
	if err := ctx.Err(); err != nil {
		return result{}, err
	}
	r.done = make(chan result, 1)
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return result{}, ErrClosed
	}
	p := a.pools[id]
	if p == nil {
		p = &pool4{id: id, keys: a.st.Keys(id)}
		a.pools[id] = p
	}
	if r.kind == reqAuto && r.ride == nil {
		if addr, ok, start := p.popReserve(); ok {
			if start {
				a.wg.Add(1)
				go p.run(a)
			}
			a.mu.Unlock()
			return result{addr: addr, changed: true}, nil
		}
	}
	if p.enqueue(r) {
		a.wg.Add(1)
		go p.run(a)
	}
	a.mu.Unlock()

	if r.ride != nil {
		// A joined request is never abandoned: its writes may land
		// with the chunk's, and only the committer knows. The round
		// is bounded by the commit timeout.
		res := <-r.done
		return res, res.err
	}
	select {
	case res := <-r.done:
		return res, res.err
	case <-ctx.Done():
		if r.state.CompareAndSwap(statePending, stateAbandoned) {
			// The committer undoes an allocation it completes for an
			// abandoned request.
			return result{}, ctx.Err()
		}
		res := <-r.done
		return res, res.err
	}
}

// forget drops the cached state of pool id in this process (after it was
// deleted or its range changed by a direct store operation).
func (a *V4) forget(id string) {
	a.mu.Lock()
	if p := a.pools[id]; p != nil {
		p.invalid.Store(true)
		delete(a.pools, id)
	}
	a.mu.Unlock()
}

func (a *V4) invalidate(id string) {
	a.mu.Lock()
	if p := a.pools[id]; p != nil {
		p.invalid.Store(true)
	}
	a.mu.Unlock()
}

// pool4 is one pool's request queue and, owned by its committer
// goroutine, its cached store state.
type pool4 struct {
	id   string
	keys v4store.Keys

	mu      sync.Mutex
	queue   []*request
	running bool
	// The reserve (v4reserve.go), guarded by mu.
	reserve []netip.Addr // taken in the store, not handed out; ascending
	target  int          // size the committer refills the reserve to
	refill  bool         // the committer should refill
	lastPop time.Time
	trim    *time.Timer // gives back an idle reserve

	invalid atomic.Bool // drop the cache before the next round

	// owned by the committer
	lay      *v4store.Layout
	chunks   map[int]*cachedChunk
	full     []uint64 // nil: not loaded
	fullVer  int64
	needSync bool
}

type cachedChunk struct {
	bits    [v4store.ChunkWords]uint64
	version int64 // 0: absent from the store
}

// enqueue adds r and reports whether the caller must start a committer.
func (p *pool4) enqueue(r *request) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queue = append(p.queue, r)
	if p.running {
		return false
	}
	p.running = true
	return true
}

func (p *pool4) run(a *V4) {
	defer a.wg.Done()
	for {
		p.mu.Lock()
		batch, refill := p.queue, p.refill
		p.queue, p.refill = nil, false
		if len(batch) == 0 && !refill {
			p.running = false
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		if retry := p.round(a, batch, refill); len(retry) > 0 {
			p.mu.Lock()
			p.queue = append(retry, p.queue...)
			p.mu.Unlock()
		}
	}
}

func (p *pool4) reset() {
	p.lay, p.chunks, p.full, p.fullVer = nil, nil, nil, 0
}

// stale drops everything cached, the reserve included: the pool was
// deleted and re-created behind this process.
func (p *pool4) stale() {
	p.reset()
	p.dropReserve()
}

// complete delivers res to r's caller; if the caller gave up, an address
// taken for it is given back.
func (p *pool4) complete(r *request, res result) {
	if r.state.CompareAndSwap(statePending, stateDone) {
		r.done <- res
		return
	}
	if res.err == nil && res.changed && r.kind != reqRelease {
		p.mu.Lock()
		p.queue = append(p.queue, &request{kind: reqRelease, ip: res.addr, done: make(chan result, 1)})
		p.mu.Unlock()
	}
}

// notDone drops the requests already answered (to run a batch again).
func notDone(rs []*request) []*request {
	out := rs[:0:0]
	for _, r := range rs {
		if r.state.Load() != stateDone {
			out = append(out, r)
		}
	}
	return out
}

// search finds the lowest free host, loading chunks as needed. full lists
// chunks it found full although the summary did not say so.
func (p *pool4) search(ctx context.Context, a *V4, work map[int]*[v4store.ChunkWords]uint64,
	getWork func(int) (*[v4store.ChunkWords]uint64, error)) (host int64, found bool, full []int, err error) {
	l := p.lay
	multi := l.CLo < l.CHi
	if multi && p.full == nil {
		if err := p.loadFull(ctx, a); err != nil {
			return 0, false, nil, err
		}
	}
	for c := l.CLo; c <= l.CHi; c++ {
		if multi && work[c] == nil && p.isFull(c) {
			continue
		}
		w, err := getWork(c)
		if err != nil {
			return 0, false, full, err
		}
		if h, ok := l.FreeIn(c, w); ok {
			return h, true, full, nil
		}
		if multi && !p.isFull(c) {
			full = append(full, c)
		}
	}
	return 0, false, full, nil
}

// chunk returns the cached chunk c, reading it if needed.
func (p *pool4) chunk(ctx context.Context, a *V4, c int) (*cachedChunk, error) {
	if ch := p.chunks[c]; ch != nil {
		return ch, nil
	}
	kv, err := a.kv.Get(ctx, p.keys.Chunk(c))
	var ch *cachedChunk
	switch {
	case errors.Is(err, objdb.ErrNotFound):
		// A missing chunk is all free, but only if the pool is still
		// the one we know: a deleted and re-created pool has new rules.
		l, err := a.st.ReadLayout(ctx, p.id)
		if err != nil {
			return nil, err
		}
		if l.Gen != p.lay.Gen {
			return nil, v4store.ErrStale
		}
		ch = &cachedChunk{}
	case err != nil:
		return nil, err
	default:
		b, err := v4store.DecodeChunk(p.lay, c, kv.Value)
		if err != nil {
			return nil, err
		}
		ch = &cachedChunk{bits: *b, version: kv.Version}
	}
	p.chunks[c] = ch
	return ch, nil
}

func (p *pool4) isFull(c int) bool {
	return p.full != nil && c/64 < len(p.full) && p.full[c/64]&(1<<uint(c%64)) != 0
}

func (p *pool4) loadFull(ctx context.Context, a *V4) error {
	n := p.lay.NChunks()
	kv, err := a.kv.Get(ctx, p.keys.Full())
	if errors.Is(err, objdb.ErrNotFound) {
		p.full, p.fullVer = make([]uint64, (n+63)/64), 0
		return nil
	}
	if err != nil {
		return err
	}
	var f v4store.Full
	if err := json.Unmarshal(kv.Value, &f); err != nil {
		return fmt.Errorf("pool %q: decode full summary: %w", p.id, err)
	}
	b, err := v4store.DecodeBitmap(f.Full, n)
	if err != nil {
		return fmt.Errorf("pool %q: decode full summary: %w", p.id, err)
	}
	p.full, p.fullVer = b, kv.Version
	return nil
}

// setFull updates the summary hint of chunks cs by compare-and-swap. It is
// best effort: on a store error the cached summary is dropped and the
// chunks themselves stay the truth.
func (p *pool4) setFull(ctx context.Context, a *V4, cs []int, full bool) {
	for try := 0; try < 10; try++ {
		if p.full == nil {
			if err := p.loadFull(ctx, a); err != nil {
				return
			}
		}
		next := append([]uint64(nil), p.full...)
		for _, c := range cs {
			if full {
				next[c/64] |= 1 << uint(c%64)
			} else {
				next[c/64] &^= 1 << uint(c%64)
			}
		}
		if slices.Equal(next, p.full) {
			return
		}
		val, _ := json.Marshal(v4store.Full{Full: v4store.EncodeBitmap(next, p.lay.NChunks())})
		ver, err := a.kv.Put(ctx, p.keys.Full(), val, v4store.CASOpt(p.fullVer))
		if err == nil {
			p.full, p.fullVer = next, ver
			return
		}
		p.full = nil
		if !errors.Is(err, objdb.ErrConflict) {
			return
		}
	}
}

// resync re-reads every chunk of the pool and rewrites the summary from
// them. It runs before exhaustion is reported.
func (p *pool4) resync(ctx context.Context, a *V4) error {
	l := p.lay
	kvs, err := a.kv.List(ctx, p.keys.ChunkPrefix())
	if err != nil {
		return err
	}
	chunks := map[int]*cachedChunk{}
	for _, kv := range kvs {
		c := v4store.ChunkNum(kv.Key, p.keys.ChunkPrefix())
		if c < 0 {
			continue
		}
		b, err := v4store.DecodeChunk(l, c, kv.Value)
		if err != nil {
			return err
		}
		chunks[c] = &cachedChunk{bits: *b, version: kv.Version}
	}
	cur, err := a.st.ReadLayout(ctx, p.id)
	if err != nil {
		return err
	}
	if cur.Gen != l.Gen {
		return v4store.ErrStale
	}
	p.chunks = chunks
	if l.CLo >= l.CHi {
		return nil
	}
	if err := p.loadFull(ctx, a); err != nil {
		return err
	}
	var full, notFull []int
	for c := l.CLo; c <= l.CHi; c++ {
		ch := chunks[c]
		isFull := ch != nil
		if ch != nil {
			_, free := l.FreeIn(c, &ch.bits)
			isFull = !free
		}
		if isFull {
			full = append(full, c)
		} else {
			notFull = append(notFull, c)
		}
	}
	p.setFull(ctx, a, notFull, false)
	p.setFull(ctx, a, full, true)
	return nil
}
