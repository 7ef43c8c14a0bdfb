package ipam

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"net/netip"
	"strings"

	"github.com/contiv/netplugin/objdb"
)

// CreateSubPool carves the pool id out of the pool parentID: pool is an
// endpoint group's "a.b.c.d-e.f.g.h" (see ParsePool for its checks). Every
// address of the range must be free in the parent ("ip address <a> is not
// available", ErrInUse); they are then taken in the parent, so the parent
// never hands them out, and the sub-pool hands them out to the group's
// endpoints (docs/daemons.md §4.8). Creating an identical sub-pool again
// succeeds without change.
func (a *V4) CreateSubPool(ctx context.Context, parentID, id, pool string) (PoolInfo, error) {
	if err := checkPoolID(parentID); err != nil {
		return PoolInfo{}, err
	}
	if err := checkPoolID(id); err != nil {
		return PoolInfo{}, err
	}
	wrap := func(err error) error { return fmt.Errorf("create ip pool %q in pool %q: %w", id, parentID, err) }
	if err := a.flushReserve(ctx, parentID); err != nil {
		return PoolInfo{}, wrap(err)
	}
	pl, err := a.readLayout(ctx, parentID)
	if err != nil {
		return PoolInfo{}, wrap(err)
	}
	first, last, err := ParsePool(pl.subnet, pool)
	if err != nil {
		return PoolInfo{}, wrap(err)
	}
	h := header4{Subnet: pl.hdr.Subnet, First: first.String(), Last: last.String(), Parent: parentID, Pool: pool}
	if l, err := a.readLayout(ctx, id); err == nil {
		if l.hdr != h {
			return PoolInfo{}, wrap(userErr(ErrPoolExists, "pool %s exists with range %s-%s", id, l.hdr.First, l.hdr.Last))
		}
		return l.info(), nil
	} else if !errors.Is(err, ErrPoolNotFound) {
		return PoolInfo{}, wrap(err)
	}
	lo, hi := int64(u32(first)-pl.base), int64(u32(last)-pl.base)
	if err := a.reserveRange(ctx, pl, lo, hi); err != nil {
		return PoolInfo{}, wrap(err)
	}
	a.invalidate(parentID)
	l, err := a.putHeader(ctx, id, h)
	if err != nil {
		if cerr := a.clearRange(ctx, pl, lo, hi); cerr != nil {
			err = errors.Join(err, fmt.Errorf("give back range: %w", cerr))
		}
		return PoolInfo{}, wrap(err)
	}
	return l.info(), nil
}

// DeletePool removes the pool and, for a sub-pool, gives its range back to
// the parent. Deleting a missing pool is not an error. The caller makes
// sure nothing allocates from the pool meanwhile.
func (a *V4) DeletePool(ctx context.Context, id string) error {
	if err := checkPoolID(id); err != nil {
		return err
	}
	wrap := func(err error) error { return fmt.Errorf("delete ip pool %q: %w", id, err) }
	l, err := a.readLayout(ctx, id)
	if errors.Is(err, ErrPoolNotFound) {
		a.forget(id)
		return nil
	}
	if err != nil {
		return wrap(err)
	}
	a.forget(id)
	k := a.keys(id)
	kvs, err := a.kv.List(ctx, k.chunkPrefix())
	if err != nil {
		return wrap(err)
	}
	for _, kv := range kvs {
		if err := a.kv.Delete(ctx, kv.Key); err != nil {
			return wrap(err)
		}
	}
	if err := a.kv.Delete(ctx, k.full()); err != nil {
		return wrap(err)
	}
	if err := a.kv.Delete(ctx, k.header()); err != nil {
		return wrap(err)
	}
	if l.hdr.Parent == "" {
		return nil
	}
	pl, err := a.readLayout(ctx, l.hdr.Parent)
	if errors.Is(err, ErrPoolNotFound) {
		return nil
	}
	if err != nil {
		return wrap(err)
	}
	lo, hi := int64(u32(l.first)-pl.base), int64(u32(l.last)-pl.base)
	if err := a.clearRange(ctx, pl, lo, hi); err != nil {
		return wrap(fmt.Errorf("give range back to pool %q: %w", l.hdr.Parent, err))
	}
	a.invalidate(l.hdr.Parent)
	return nil
}

// modifyChunk is a compare-and-swap loop on chunk c of the pool l.
func (a *V4) modifyChunk(ctx context.Context, l *layout, c int, fn func(b *[chunkWords]uint64) (changed bool, err error)) error {
	k := a.keys(l.id)
	for try := 0; ; try++ {
		if try > maxConflicts {
			return fmt.Errorf("chunk %d: gave up after %d conflicts: %w", c, maxConflicts, objdb.ErrConflict)
		}
		var b *[chunkWords]uint64
		var ver int64
		kv, err := a.kv.Get(ctx, k.chunk(c))
		switch {
		case errors.Is(err, objdb.ErrNotFound):
			cur, err := a.readLayout(ctx, l.id)
			if err != nil {
				return err
			}
			if cur.gen != l.gen {
				return errStale
			}
			b = new([chunkWords]uint64)
		case err != nil:
			return err
		default:
			if b, err = decodeChunk(l, c, kv.Value); err != nil {
				return err
			}
			ver = kv.Version
		}
		changed, err := fn(b)
		if err != nil || !changed {
			return err
		}
		_, err = a.putChunk(ctx, l, c, b, ver)
		if errors.Is(err, objdb.ErrConflict) && !errors.Is(err, objdb.ErrUncertain) {
			continue
		}
		return err
	}
}

// reserveRange takes the hosts lo…hi of pool l, all or none.
func (a *V4) reserveRange(ctx context.Context, l *layout, lo, hi int64) error {
	var full []int
	for c := int(lo / chunkBits); c <= int(hi/chunkBits); c++ {
		clo, chi := max(lo, int64(c)*chunkBits), min(hi, int64(c)*chunkBits+chunkBits-1)
		isFull := false
		err := a.modifyChunk(ctx, l, c, func(b *[chunkWords]uint64) (bool, error) {
			for h := clo; h <= chi; h++ {
				// Network, broadcast and out-of-range addresses count
				// as taken, as in the original's bitmap.
				if !l.allocatable(h) || b[(h%chunkBits)/64]&(1<<uint(h%64)) != 0 {
					return false, userErr(ErrInUse, "ip address %s is not available", l.addr(h))
				}
			}
			for h := clo; h <= chi; h++ {
				b[(h%chunkBits)/64] |= 1 << uint(h%64)
			}
			_, free := l.freeIn(c, b)
			isFull = !free
			return true, nil
		})
		if err != nil {
			if c > int(lo/chunkBits) {
				if cerr := a.clearRange(ctx, l, lo, int64(c)*chunkBits-1); cerr != nil {
					err = errors.Join(err, fmt.Errorf("undo partial reservation: %w", cerr))
				}
			}
			return err
		}
		if isFull {
			full = append(full, c)
		}
	}
	if len(full) > 0 && l.cLo < l.cHi {
		// Hint only: the committers find full chunks themselves too.
		_ = a.setFullHints(ctx, l, full, true)
	}
	return nil
}

// clearRange frees the hosts lo…hi of pool l. The "full" hints of the
// chunks are cleared first.
func (a *V4) clearRange(ctx context.Context, l *layout, lo, hi int64) error {
	cFirst, cLast := int(lo/chunkBits), int(hi/chunkBits)
	if l.cLo < l.cHi {
		if err := a.clearFullHints(ctx, l, cFirst, cLast); err != nil {
			return err
		}
	}
	for c := cFirst; c <= cLast; c++ {
		clo, chi := max(lo, int64(c)*chunkBits), min(hi, int64(c)*chunkBits+chunkBits-1)
		err := a.modifyChunk(ctx, l, c, func(b *[chunkWords]uint64) (bool, error) {
			changed := false
			for h := clo; h <= chi; h++ {
				if m := uint64(1) << uint(h%64); b[(h%chunkBits)/64]&m != 0 {
					b[(h%chunkBits)/64] &^= m
					changed = true
				}
			}
			return changed, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (a *V4) clearFullHints(ctx context.Context, l *layout, cFirst, cLast int) error {
	var cs []int
	for c := cFirst; c <= cLast; c++ {
		cs = append(cs, c)
	}
	return a.setFullHints(ctx, l, cs, false)
}

// setFullHints sets or clears the "full" hints of chunks cs.
func (a *V4) setFullHints(ctx context.Context, l *layout, cs []int, full bool) error {
	n := l.nChunks()
	_, err := objdb.Update(ctx, a.kv, a.keys(l.id).full(), func(cur []byte, exists bool) ([]byte, error) {
		b := make([]uint64, (n+63)/64)
		if exists {
			var f full4
			if err := json.Unmarshal(cur, &f); err != nil {
				return nil, fmt.Errorf("decode full summary: %w", err)
			}
			var err error
			if b, err = decodeBitmap(f.Full, n); err != nil {
				return nil, fmt.Errorf("decode full summary: %w", err)
			}
		}
		for _, c := range cs {
			if full {
				b[c/64] |= 1 << uint(c%64)
			} else {
				b[c/64] &^= 1 << uint(c%64)
			}
		}
		return json.Marshal(full4{Full: encodeBitmap(b, n)})
	})
	return err
}

// snapshot reads the pool's header and every stored chunk.
func (a *V4) snapshot(ctx context.Context, id string) (*layout, map[int]*[chunkWords]uint64, error) {
	if err := checkPoolID(id); err != nil {
		return nil, nil, err
	}
	if err := a.flushReserve(ctx, id); err != nil {
		return nil, nil, err
	}
	l, err := a.readLayout(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	k := a.keys(id)
	kvs, err := a.kv.List(ctx, k.chunkPrefix())
	if err != nil {
		return nil, nil, err
	}
	chunks := map[int]*[chunkWords]uint64{}
	for _, kv := range kvs {
		c := chunkNum(kv.Key, k.chunkPrefix())
		if c < 0 {
			continue
		}
		b, err := decodeChunk(l, c, kv.Value)
		if errors.Is(err, errStale) {
			continue // left over from a deleted pool of the same id
		}
		if err != nil {
			return nil, nil, err
		}
		chunks[c] = b
	}
	return l, chunks, nil
}

// Usage counts a pool's allocatable addresses.
type Usage struct {
	Size int64 // addresses the pool can hand out (range minus network/broadcast)
	Used int64 // of those, taken (allocations, gateway, sub-pools)
}

// Free is Size - Used.
func (u Usage) Free() int64 { return u.Size - u.Used }

// Usage reads the pool's counts (one List of its chunks).
func (a *V4) Usage(ctx context.Context, id string) (Usage, error) {
	l, chunks, err := a.snapshot(ctx, id)
	if err != nil {
		return Usage{}, fmt.Errorf("read usage of pool %q: %w", id, err)
	}
	var u Usage
	if l.lo <= l.hi {
		u.Size = l.hi - l.lo + 1
	}
	for c, b := range chunks {
		u.Used += int64(l.used(c, b))
	}
	return u, nil
}

// InUse lists the pool's taken addresses as the spec's range string
// ("60.1.1.1-60.1.1.3, 60.1.1.254"; "" when none). Network, broadcast and
// addresses outside the range are never listed.
func (a *V4) InUse(ctx context.Context, id string) (string, error) {
	used, _, err := a.lists(ctx, id)
	if err != nil {
		return "", fmt.Errorf("list addresses in use in pool %q: %w", id, err)
	}
	return used, nil
}

// Taken is the set of the pool's taken addresses (InUse, expanded).
func (a *V4) Taken(ctx context.Context, id string) (map[netip.Addr]bool, error) {
	used, err := a.InUse(ctx, id)
	if err != nil {
		return nil, err
	}
	taken := map[netip.Addr]bool{}
	for _, run := range strings.Split(used, ", ") {
		if run == "" {
			continue
		}
		lo, hi, isRun := strings.Cut(run, "-")
		if !isRun {
			hi = lo
		}
		first, err1 := netip.ParseAddr(lo)
		last, err2 := netip.ParseAddr(hi)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("addresses in use in pool %q: %q: %w", id, used, err)
		}
		for x := first; x.IsValid() && x.Compare(last) <= 0; x = x.Next() {
			taken[x] = true
		}
	}
	return taken, nil
}

// Available lists the pool's free addresses in the same format.
func (a *V4) Available(ctx context.Context, id string) (string, error) {
	_, free, err := a.lists(ctx, id)
	if err != nil {
		return "", fmt.Errorf("list available addresses in pool %q: %w", id, err)
	}
	return free, nil
}

func (a *V4) lists(ctx context.Context, id string) (used, free string, err error) {
	l, chunks, err := a.snapshot(ctx, id)
	if err != nil {
		return "", "", err
	}
	var ul, fl rangeList
	var zero [chunkWords]uint64
	for c := l.cLo; c <= l.cHi; c++ {
		b := chunks[c]
		if b == nil {
			b = &zero
		}
		for w := 0; w < chunkWords; w++ {
			m := l.wordMask(c, w)
			if m == 0 {
				continue
			}
			start := l.base + uint32(c*chunkBits+w*64)
			lo, hi := uint32(bits.TrailingZeros64(m)), uint32(63-bits.LeadingZeros64(m))
			switch u := b[w] & m; u {
			case m:
				ul.addRun(start+lo, start+hi)
			case 0:
				fl.addRun(start+lo, start+hi)
			default:
				for j := lo; j <= hi; j++ {
					if u&(1<<j) != 0 {
						ul.add(start + j)
					} else {
						fl.add(start + j)
					}
				}
			}
		}
	}
	return ul.String(), fl.String(), nil
}

// IsAllocated reports whether ip is taken in the pool (false for
// addresses the pool never hands out).
func (a *V4) IsAllocated(ctx context.Context, id string, ip netip.Addr) (bool, error) {
	if err := checkPoolID(id); err != nil {
		return false, err
	}
	if err := a.flushReserve(ctx, id); err != nil {
		return false, fmt.Errorf("check address %s in pool %q: %w", ip, id, err)
	}
	l, err := a.readLayout(ctx, id)
	if err != nil {
		return false, fmt.Errorf("check address %s in pool %q: %w", ip, id, err)
	}
	h, err := l.host(ip)
	if err != nil {
		return false, fmt.Errorf("check address %s in pool %q: %w", ip, id, err)
	}
	if !l.allocatable(h) {
		return false, nil
	}
	c := int(h / chunkBits)
	kv, err := a.kv.Get(ctx, a.keys(id).chunk(c))
	if errors.Is(err, objdb.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("check address %s in pool %q: %w", ip, id, err)
	}
	b, err := decodeChunk(l, c, kv.Value)
	if err != nil {
		return false, fmt.Errorf("check address %s in pool %q: %w", ip, id, err)
	}
	return b[(h%chunkBits)/64]&(1<<uint(h%64)) != 0, nil
}
