package v4store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"net/netip"
	"sort"

	"github.com/contiv/netplugin/objdb"
)

// Store reads and writes IPv4 pools in the store, by compare-and-swap
// and without a cache (layout.go has the stored form).
type Store struct {
	kv     objdb.KV
	prefix string // where pools live: "<prefix><poolID>/v4/..."
	writer string // marks this writer's chunk writes (PutChunk)
}

// NewStore returns the pools under prefix of kv; writer is the id PutChunk
// marks its writes with.
func NewStore(kv objdb.KV, prefix, writer string) *Store {
	return &Store{kv: kv, prefix: prefix, writer: writer}
}

// PutChunk writes chunk c of pool l (bits b) by compare-and-swap on
// version base (0: create), marked with the writer id of the Store. A write of
// unknown outcome is resolved by reading the chunk back
// (objdb.PutResolved): the result is success, a definite ErrConflict, or,
// only while the store stays unreachable, an error wrapping
// objdb.ErrUncertain.
//
// The stored value is this write's own: another process (or another
// leadership term's allocator) marks its writes with another id, and the
// allocator owning this Store has one write of a pool in flight at a time,
// its committer's (or a sub-pool operation's, which the caller keeps from
// running concurrently with allocations). So reading back exactly the bytes written
// proves the write was applied (docs/allocation-integrity.md). One id per
// allocator rather than per write keeps a chunk byte-identical when a
// rollback frees what a refused request took.
func (s *Store) PutChunk(ctx context.Context, l *Layout, c int, b *[ChunkWords]uint64, base int64) (int64, error) {
	return objdb.PutResolved(ctx, s.kv, s.Keys(l.ID).Chunk(c), l.EncodeChunk(c, b, s.writer), CASOpt(base))
}

// Keys are the keys of pool id.
func (s *Store) Keys(id string) Keys { return Keys{p: s.prefix + id + "/v4/"} }

// PutHeader writes a new header, or accepts an identical existing one.
func (s *Store) PutHeader(ctx context.Context, id string, h Header) (*Layout, error) {
	val, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	ver, err := s.kv.Put(ctx, s.Keys(id).Header(), val, objdb.WithCreateOnly())
	if err == nil {
		return NewLayout(id, h, ver)
	}
	if !errors.Is(err, objdb.ErrConflict) {
		return nil, err
	}
	l, err := s.ReadLayout(ctx, id)
	if err != nil {
		return nil, err
	}
	if l.Hdr != h {
		return nil, userErr(ErrPoolExists, "pool %s exists with subnet %s range %s-%s", id, l.Hdr.Subnet, l.Hdr.First, l.Hdr.Last)
	}
	return l, nil
}

// ReadLayout reads the header of pool id.
func (s *Store) ReadLayout(ctx context.Context, id string) (*Layout, error) {
	kv, err := s.kv.Get(ctx, s.Keys(id).Header())
	if errors.Is(err, objdb.ErrNotFound) {
		return nil, userErr(ErrPoolNotFound, "ip pool %s not found", id)
	}
	if err != nil {
		return nil, err
	}
	var h Header
	if err := json.Unmarshal(kv.Value, &h); err != nil {
		return nil, fmt.Errorf("pool %q: decode header: %w", id, err)
	}
	return NewLayout(id, h, kv.Version)
}

// modifyChunk is a compare-and-swap loop on chunk c of the pool l.
func (s *Store) modifyChunk(ctx context.Context, l *Layout, c int, fn func(b *[ChunkWords]uint64) (changed bool, err error)) error {
	k := s.Keys(l.ID)
	for try := 0; ; try++ {
		if try > MaxConflicts {
			return fmt.Errorf("chunk %d: gave up after %d conflicts: %w", c, MaxConflicts, objdb.ErrConflict)
		}
		var b *[ChunkWords]uint64
		var ver int64
		kv, err := s.kv.Get(ctx, k.Chunk(c))
		switch {
		case errors.Is(err, objdb.ErrNotFound):
			cur, err := s.ReadLayout(ctx, l.ID)
			if err != nil {
				return err
			}
			if cur.Gen != l.Gen {
				return ErrStale
			}
			b = new([ChunkWords]uint64)
		case err != nil:
			return err
		default:
			if b, err = DecodeChunk(l, c, kv.Value); err != nil {
				return err
			}
			ver = kv.Version
		}
		changed, err := fn(b)
		if err != nil || !changed {
			return err
		}
		_, err = s.PutChunk(ctx, l, c, b, ver)
		if errors.Is(err, objdb.ErrConflict) && !errors.Is(err, objdb.ErrUncertain) {
			continue
		}
		return err
	}
}

// ReserveRange takes the hosts lo…hi of pool l, all or none.
func (s *Store) ReserveRange(ctx context.Context, l *Layout, lo, hi int64) error {
	var full []int
	for c := int(lo / ChunkBits); c <= int(hi/ChunkBits); c++ {
		clo, chi := max(lo, int64(c)*ChunkBits), min(hi, int64(c)*ChunkBits+ChunkBits-1)
		isFull := false
		err := s.modifyChunk(ctx, l, c, func(b *[ChunkWords]uint64) (bool, error) {
			for h := clo; h <= chi; h++ {
				// Network, broadcast and out-of-range addresses count
				// as taken, as in the original's bitmap.
				if !l.Allocatable(h) || b[(h%ChunkBits)/64]&(1<<uint(h%64)) != 0 {
					return false, userErr(ErrInUse, "ip address %s is not available", l.Addr(h))
				}
			}
			for h := clo; h <= chi; h++ {
				b[(h%ChunkBits)/64] |= 1 << uint(h%64)
			}
			_, free := l.FreeIn(c, b)
			isFull = !free
			return true, nil
		})
		if err != nil {
			if c > int(lo/ChunkBits) {
				if cerr := s.ClearRange(ctx, l, lo, int64(c)*ChunkBits-1); cerr != nil {
					err = errors.Join(err, fmt.Errorf("undo partial reservation: %w", cerr))
				}
			}
			return err
		}
		if isFull {
			full = append(full, c)
		}
	}
	if len(full) > 0 && l.CLo < l.CHi {
		// Hint only: the committers find full chunks themselves too.
		_ = s.SetFullHints(ctx, l, full, true)
	}
	return nil
}

// ClearRange frees the hosts lo…hi of pool l. The "full" hints of the
// chunks are cleared first.
func (s *Store) ClearRange(ctx context.Context, l *Layout, lo, hi int64) error {
	cFirst, cLast := int(lo/ChunkBits), int(hi/ChunkBits)
	if l.CLo < l.CHi {
		if err := s.clearFullHints(ctx, l, cFirst, cLast); err != nil {
			return err
		}
	}
	for c := cFirst; c <= cLast; c++ {
		clo, chi := max(lo, int64(c)*ChunkBits), min(hi, int64(c)*ChunkBits+ChunkBits-1)
		err := s.modifyChunk(ctx, l, c, func(b *[ChunkWords]uint64) (bool, error) {
			changed := false
			for h := clo; h <= chi; h++ {
				if m := uint64(1) << uint(h%64); b[(h%ChunkBits)/64]&m != 0 {
					b[(h%ChunkBits)/64] &^= m
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

func (s *Store) clearFullHints(ctx context.Context, l *Layout, cFirst, cLast int) error {
	var cs []int
	for c := cFirst; c <= cLast; c++ {
		cs = append(cs, c)
	}
	return s.SetFullHints(ctx, l, cs, false)
}

// SetFullHints sets or clears the "full" hints of chunks cs.
func (s *Store) SetFullHints(ctx context.Context, l *Layout, cs []int, full bool) error {
	n := l.NChunks()
	_, err := objdb.Update(ctx, s.kv, s.Keys(l.ID).Full(), func(cur []byte, exists bool) ([]byte, error) {
		b := make([]uint64, (n+63)/64)
		if exists {
			var f Full
			if err := json.Unmarshal(cur, &f); err != nil {
				return nil, fmt.Errorf("decode full summary: %w", err)
			}
			var err error
			if b, err = DecodeBitmap(f.Full, n); err != nil {
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
		return json.Marshal(Full{Full: EncodeBitmap(b, n)})
	})
	return err
}

// DeleteKeys deletes the chunks, the summary and last the header of pool
// id.
func (s *Store) DeleteKeys(ctx context.Context, id string) error {
	k := s.Keys(id)
	kvs, err := s.kv.List(ctx, k.ChunkPrefix())
	if err != nil {
		return err
	}
	for _, kv := range kvs {
		if err := s.kv.Delete(ctx, kv.Key); err != nil {
			return err
		}
	}
	if err := s.kv.Delete(ctx, k.Full()); err != nil {
		return err
	}
	return s.kv.Delete(ctx, k.Header())
}

// Snapshot reads the pool's header and every stored chunk.
func (s *Store) Snapshot(ctx context.Context, id string) (*Layout, map[int]*[ChunkWords]uint64, error) {
	l, err := s.ReadLayout(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	k := s.Keys(id)
	kvs, err := s.kv.List(ctx, k.ChunkPrefix())
	if err != nil {
		return nil, nil, err
	}
	chunks := map[int]*[ChunkWords]uint64{}
	for _, kv := range kvs {
		c := ChunkNum(kv.Key, k.ChunkPrefix())
		if c < 0 {
			continue
		}
		b, err := DecodeChunk(l, c, kv.Value)
		if errors.Is(err, ErrStale) {
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

// Count is the usage of pool l with chunks (Store.Snapshot).
func Count(l *Layout, chunks map[int]*[ChunkWords]uint64) Usage {
	var u Usage
	if l.Lo <= l.Hi {
		u.Size = l.Hi - l.Lo + 1
	}
	for c, b := range chunks {
		u.Used += int64(l.Used(c, b))
	}
	return u
}

// Ranges lists the taken and the free addresses of pool l with chunks
// (Store.Snapshot) as the spec's range strings ("60.1.1.1-60.1.1.3,
// 60.1.1.254"; "" when none).
func Ranges(l *Layout, chunks map[int]*[ChunkWords]uint64) (used, free string) {
	var ul, fl rangeList
	var zero [ChunkWords]uint64
	for c := l.CLo; c <= l.CHi; c++ {
		b := chunks[c]
		if b == nil {
			b = &zero
		}
		for w := 0; w < ChunkWords; w++ {
			m := l.WordMask(c, w)
			if m == 0 {
				continue
			}
			start := l.Base + uint32(c*ChunkBits+w*64)
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
	return ul.String(), fl.String()
}

// Taken reports whether host h of pool l is taken in its stored chunk.
func (s *Store) Taken(ctx context.Context, l *Layout, h int64) (bool, error) {
	c := int(h / ChunkBits)
	kv, err := s.kv.Get(ctx, s.Keys(l.ID).Chunk(c))
	if errors.Is(err, objdb.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	b, err := DecodeChunk(l, c, kv.Value)
	if err != nil {
		return false, err
	}
	return b[(h%ChunkBits)/64]&(1<<uint(h%64)) != 0, nil
}

// Restore makes pool id hold exactly the header h with the addresses
// taken (netmaster/ipam.V4.Restore); checkOnly compares without writing. A conflict
// wraps ErrRestoreConflict.
func (s *Store) Restore(ctx context.Context, id string, h Header, taken []netip.Addr, checkOnly bool) (changed bool, err error) {
	l, err := NewLayout(id, h, 0)
	if err != nil {
		return false, err
	}
	want, err := wantChunks(l, taken)
	if err != nil {
		return false, err
	}
	k := s.Keys(id)
	hkv, err := s.kv.Get(ctx, k.Header())
	switch {
	case errors.Is(err, objdb.ErrNotFound):
		if checkOnly {
			return true, nil
		}
		val, err := json.Marshal(h)
		if err != nil {
			return false, err
		}
		ver, err := s.kv.Put(ctx, k.Header(), val, objdb.WithCreateOnly())
		if err != nil {
			return false, fmt.Errorf("write header: %w", err)
		}
		changed = true
		l.Gen = ver
	case err != nil:
		return false, err
	default:
		var cur Header
		if err := json.Unmarshal(hkv.Value, &cur); err != nil {
			return false, fmt.Errorf("decode stored header: %w", err)
		}
		if cur != h {
			return false, fmt.Errorf("%w: header %+v, restoring %+v", ErrRestoreConflict, cur, h)
		}
		l.Gen = hkv.Version
	}
	have := map[int]objdb.KeyValue{}
	kvs, err := s.kv.List(ctx, k.ChunkPrefix())
	if err != nil {
		return false, err
	}
	for _, kv := range kvs {
		if c := ChunkNum(kv.Key, k.ChunkPrefix()); c >= 0 {
			have[c] = kv
		}
	}
	cs := make([]int, 0, len(want)+len(have))
	for c := range want {
		cs = append(cs, c)
	}
	for c := range have {
		if want[c] == nil {
			cs = append(cs, c)
		}
	}
	sort.Ints(cs)
	for _, c := range cs {
		w := want[c]
		if w == nil {
			w = new([ChunkWords]uint64)
		}
		kv, stored := have[c]
		cur := new([ChunkWords]uint64)
		if stored {
			if cur, err = DecodeChunk(l, c, kv.Value); err != nil {
				return changed, err
			}
		}
		if *cur == *w {
			continue
		}
		if *cur != ([ChunkWords]uint64{}) {
			return changed, fmt.Errorf("%w: chunk %d holds other allocations", ErrRestoreConflict, c)
		}
		if checkOnly {
			return true, nil
		}
		if _, err := s.kv.Put(ctx, k.Chunk(c), l.EncodeChunk(c, w, restoreWriter), CASOpt(kv.Version)); err != nil {
			return changed, fmt.Errorf("write chunk %d: %w", c, err)
		}
		changed = true
	}
	return changed, nil
}

// wantChunks is the chunks of pool l with the addresses taken set.
func wantChunks(l *Layout, taken []netip.Addr) (map[int]*[ChunkWords]uint64, error) {
	want := map[int]*[ChunkWords]uint64{}
	for _, ip := range taken {
		host, err := l.Host(ip)
		if err != nil {
			return nil, err
		}
		if !l.Allocatable(host) {
			return nil, userErr(ErrNotAllocatable, "address %s is outside pool range %s-%s", ip, l.Hdr.First, l.Hdr.Last)
		}
		c := int(host / ChunkBits)
		b := want[c]
		if b == nil {
			b = new([ChunkWords]uint64)
			want[c] = b
		}
		i := host % ChunkBits
		b[i/64] |= 1 << uint(i%64)
	}
	return want, nil
}
