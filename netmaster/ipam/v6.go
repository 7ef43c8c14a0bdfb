package ipam

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"

	"github.com/contiv/netplugin/netmaster/ipam/v4store"
	"github.com/contiv/netplugin/objdb"
)

// IPv6 pool storage (prefix P = "<keyPrefix><poolID>/v6/"):
//
//	P+"header"      JSON header6 (prefix, gateway)
//	P+"last"        JSON {"last":"<32 hex digits>"}: the last host ID handed out
//	P+"host/<hex>"  one key per taken host ID (32 hex digits; value: address)
//
// Taking an address is a create-only write of its key, so two netmasters can
// never take the same one; the cost of an allocation does not depend on the
// prefix length. Order (docs/daemons.md §4.8): the host ID after the last
// one handed out, skipping taken ones, wrapping from the end of the host
// space to ::1; "Reached MaxHosts" when all 2^(128−len)−1 are taken.

// V6 allocates IPv6 addresses. Allocations from one pool are serialised
// inside the process (so its goroutines do not race each other for the same
// host ID); across processes the create-only writes decide. The only state
// kept in memory is the per-pool lock and the "last" cursor hint.
type V6 struct {
	kv   objdb.KV
	opts options

	mu    sync.Mutex
	locks map[string]chan struct{} // one-slot semaphores
	last  map[string]u128
}

// NewV6 returns an IPv6 allocator over kv.
func NewV6(kv objdb.KV, opts ...Option) *V6 {
	return &V6{kv: kv, opts: applyOptions(opts), locks: map[string]chan struct{}{}, last: map[string]u128{}}
}

// lock serialises allocations from pool id in this process.
func (a *V6) lock(ctx context.Context, id string) (unlock func(), err error) {
	a.mu.Lock()
	sem := a.locks[id]
	if sem == nil {
		sem = make(chan struct{}, 1)
		a.locks[id] = sem
	}
	a.mu.Unlock()
	select {
	case sem <- struct{}{}:
		return func() { <-sem }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Prefix lengths an IPv6 network subnet may have (docs/rest-api.md §2.4
// step 5).
const (
	MinV6PrefixLen = 16
	MaxV6PrefixLen = 128
)

type header6 struct {
	Subnet  string `json:"subnet"`
	Gateway string `json:"gateway,omitempty"`
}

type last6 struct {
	Last string `json:"last"`
}

// ParseSubnetV6 parses "addr/len" with 16 ≤ len ≤ 128 ("subnet length <n>
// not supported" otherwise) and masks it.
func ParseSubnetV6(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(strings.TrimSpace(s))
	if err != nil || !p.Addr().Is6() || p.Addr().Is4In6() {
		return netip.Prefix{}, userErr(ErrInvalid, "invalid ipv6 subnet %q", s)
	}
	if p.Bits() < MinV6PrefixLen || p.Bits() > MaxV6PrefixLen {
		return netip.Prefix{}, userErr(ErrInvalid, "subnet length %d not supported", p.Bits())
	}
	return p.Masked(), nil
}

// u128 is a 128-bit host ID.
type u128 struct{ hi, lo uint64 }

func fromAddr(a netip.Addr) u128 {
	b := a.As16()
	return u128{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}
}

func (x u128) addr() netip.Addr {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], x.hi)
	binary.BigEndian.PutUint64(b[8:], x.lo)
	return netip.AddrFrom16(b)
}

func (x u128) and(y u128) u128 { return u128{x.hi & y.hi, x.lo & y.lo} }
func (x u128) or(y u128) u128  { return u128{x.hi | y.hi, x.lo | y.lo} }
func (x u128) isZero() bool    { return x.hi == 0 && x.lo == 0 }
func (x u128) hex() string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], x.hi)
	binary.BigEndian.PutUint64(b[8:], x.lo)
	return hex.EncodeToString(b[:])
}

func parseHex128(s string) (u128, bool) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 16 {
		return u128{}, false
	}
	return u128{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}, true
}

// hostMask has the low 128-plen bits set.
func hostMask(plen int) u128 {
	hb := 128 - plen
	switch {
	case hb <= 0:
		return u128{}
	case hb >= 128:
		return u128{^uint64(0), ^uint64(0)}
	case hb >= 64:
		return u128{^uint64(0) >> uint(128-hb), ^uint64(0)}
	default:
		return u128{0, ^uint64(0) >> uint(64-hb)}
	}
}

// nextHost is h+1 inside the host space, wrapping to 1.
func nextHost(h, m u128) u128 {
	n := h
	n.lo++
	if n.lo == 0 {
		n.hi++
	}
	n = n.and(m)
	if n.isZero() {
		n = u128{0, 1}
	}
	return n
}

type pool6 struct {
	id     string
	prefix netip.Prefix
	mask   u128
	hdr    header6
}

// maxHosts is the number of allocatable host IDs, or -1 when it does not
// fit in an int64 (never exhausted in practice).
func (p *pool6) maxHosts() int64 {
	hb := 128 - p.prefix.Bits()
	if hb >= 63 {
		return -1
	}
	return int64(1)<<uint(hb) - 1
}

func (p *pool6) host(a netip.Addr) (u128, error) {
	if !a.Is6() || a.Is4In6() || !p.prefix.Contains(a) {
		return u128{}, userErr(ErrOutOfSubnet, "ipv6 address %s is outside subnet %s", a, p.prefix)
	}
	return fromAddr(a).and(p.mask), nil
}

func (p *pool6) addr(h u128) netip.Addr { return fromAddr(p.prefix.Addr()).or(h).addr() }

func (a *V6) key(id, rest string) string { return a.opts.prefix + id + "/v6/" + rest }

// CreatePool creates the IPv6 pool id for subnet "addr/len" (16…128). With
// WithGateway the gateway (inside the subnet) is reserved. An identical
// existing pool is accepted; another definition fails with ErrPoolExists.
func (a *V6) CreatePool(ctx context.Context, id, subnet string, opts ...PoolOption) (netip.Prefix, error) {
	if err := v4store.CheckPoolID(id); err != nil {
		return netip.Prefix{}, err
	}
	wrap := func(err error) error { return fmt.Errorf("create ipv6 pool %q: %w", id, err) }
	pfx, err := ParseSubnetV6(subnet)
	if err != nil {
		return netip.Prefix{}, wrap(err)
	}
	p := &pool6{id: id, prefix: pfx, mask: hostMask(pfx.Bits()), hdr: header6{Subnet: pfx.String()}}
	po := applyPoolOptions(opts)
	var gw netip.Addr
	if po.gateway != "" {
		if gw, err = netip.ParseAddr(po.gateway); err != nil {
			return netip.Prefix{}, wrap(userErr(ErrInvalid, "invalid ipv6 gateway %q", po.gateway))
		}
		if _, err := p.host(gw); err != nil {
			return netip.Prefix{}, wrap(err)
		}
		p.hdr.Gateway = gw.String()
	}
	val, _ := json.Marshal(p.hdr)
	if _, err := a.kv.Put(ctx, a.key(id, "header"), val, objdb.WithCreateOnly()); err != nil {
		if !errors.Is(err, objdb.ErrConflict) {
			return netip.Prefix{}, wrap(err)
		}
		cur, err := a.pool(ctx, id)
		if err != nil {
			return netip.Prefix{}, wrap(err)
		}
		if cur.hdr != p.hdr {
			return netip.Prefix{}, wrap(userErr(ErrPoolExists, "ipv6 pool %s exists with subnet %s", id, cur.hdr.Subnet))
		}
	}
	if gw.IsValid() {
		if _, err := a.AllocateSpecific(ctx, id, gw); err != nil && !errors.Is(err, ErrInUse) && !errors.Is(err, ErrNotAllocatable) {
			return netip.Prefix{}, wrap(fmt.Errorf("reserve gateway: %w", err))
		}
	}
	return pfx, nil
}

func (a *V6) pool(ctx context.Context, id string) (*pool6, error) {
	if err := v4store.CheckPoolID(id); err != nil {
		return nil, err
	}
	kv, err := a.kv.Get(ctx, a.key(id, "header"))
	if errors.Is(err, objdb.ErrNotFound) {
		return nil, userErr(ErrPoolNotFound, "ipv6 pool %s not found", id)
	}
	if err != nil {
		return nil, err
	}
	var h header6
	if err := json.Unmarshal(kv.Value, &h); err != nil {
		return nil, fmt.Errorf("decode ipv6 pool header: %w", err)
	}
	pfx, err := ParseSubnetV6(h.Subnet)
	if err != nil {
		return nil, err
	}
	return &pool6{id: id, prefix: pfx, mask: hostMask(pfx.Bits()), hdr: h}, nil
}

// Subnet returns the pool's prefix.
func (a *V6) Subnet(ctx context.Context, id string) (netip.Prefix, error) {
	p, err := a.pool(ctx, id)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("read ipv6 pool %q: %w", id, err)
	}
	return p.prefix, nil
}

// take creates the key of host h; false when it is taken already.
func (a *V6) take(ctx context.Context, p *pool6, h u128) (bool, error) {
	_, err := a.kv.Put(ctx, a.key(p.id, "host/"+h.hex()), []byte(p.addr(h).String()), objdb.WithCreateOnly())
	if errors.Is(err, objdb.ErrConflict) {
		return false, nil
	}
	return err == nil, err
}

// taken lists the taken host IDs.
func (a *V6) taken(ctx context.Context, p *pool6) (map[u128]bool, error) {
	pre := a.key(p.id, "host/")
	kvs, err := a.kv.List(ctx, pre)
	if err != nil {
		return nil, err
	}
	set := make(map[u128]bool, len(kvs))
	for _, kv := range kvs {
		if h, ok := parseHex128(strings.TrimPrefix(kv.Key, pre)); ok {
			set[h] = true
		}
	}
	return set, nil
}

// Allocate hands out the next free address after the last one handed out.
// It fails with ErrExhausted ("Reached MaxHosts") when none is left.
func (a *V6) Allocate(ctx context.Context, id string) (netip.Addr, error) {
	wrap := func(err error) error { return fmt.Errorf("allocate ipv6 address in pool %q: %w", id, err) }
	p, err := a.pool(ctx, id)
	if err != nil {
		return netip.Addr{}, wrap(err)
	}
	exhausted := userErr(ErrExhausted, "Reached MaxHosts")
	maxH := p.maxHosts()
	if maxH == 0 {
		return netip.Addr{}, wrap(exhausted)
	}
	unlock, err := a.lock(ctx, id)
	if err != nil {
		return netip.Addr{}, wrap(err)
	}
	defer unlock()
	a.mu.Lock()
	last, cached := a.last[id]
	a.mu.Unlock()
	if !cached {
		lastKV, err := a.kv.Get(ctx, a.key(id, "last"))
		switch {
		case err == nil:
			var l last6
			if json.Unmarshal(lastKV.Value, &l) == nil {
				last, _ = parseHex128(l.Last)
			}
		case !errors.Is(err, objdb.ErrNotFound):
			return netip.Addr{}, wrap(err)
		}
	}
	cand := nextHost(last.and(p.mask), p.mask)
	for try := 0; try < v4store.MaxConflicts; try++ {
		ok, err := a.take(ctx, p, cand)
		if err != nil {
			return netip.Addr{}, wrap(err)
		}
		if ok {
			// The cursor is a hint: a lost update only makes the next
			// allocation probe a taken ID first.
			val, _ := json.Marshal(last6{Last: cand.hex()})
			if _, err := a.kv.Put(ctx, a.key(id, "last"), val); err != nil {
				return netip.Addr{}, wrap(err)
			}
			a.mu.Lock()
			a.last[id] = cand
			a.mu.Unlock()
			return p.addr(cand), nil
		}
		// Taken: find the next free ID from the list of taken ones.
		set, err := a.taken(ctx, p)
		if err != nil {
			return netip.Addr{}, wrap(err)
		}
		if maxH > 0 && int64(len(set)) >= maxH {
			return netip.Addr{}, wrap(exhausted)
		}
		for i := 0; i <= len(set) && set[cand]; i++ {
			cand = nextHost(cand, p.mask)
		}
	}
	return netip.Addr{}, wrap(fmt.Errorf("gave up after %d conflicts: %w", v4store.MaxConflicts, objdb.ErrConflict))
}

// AllocateSpecific takes ip. ErrInUse when it is taken, ErrOutOfSubnet
// outside the prefix, ErrNotAllocatable for host ID 0 (the prefix itself).
func (a *V6) AllocateSpecific(ctx context.Context, id string, ip netip.Addr) (netip.Addr, error) {
	wrap := func(err error) error { return fmt.Errorf("allocate ipv6 address %s in pool %q: %w", ip, id, err) }
	p, err := a.pool(ctx, id)
	if err != nil {
		return netip.Addr{}, wrap(err)
	}
	h, err := p.host(ip)
	if err != nil {
		return netip.Addr{}, wrap(err)
	}
	if h.isZero() {
		return netip.Addr{}, wrap(userErr(ErrNotAllocatable, "ipv6 address %s is not available", ip))
	}
	ok, err := a.take(ctx, p, h)
	if err != nil {
		return netip.Addr{}, wrap(err)
	}
	if !ok {
		return netip.Addr{}, wrap(userErr(ErrInUse, "ip address %s is not available", ip))
	}
	return p.addr(h), nil
}

// Release frees ip (no-op when free); released reports whether it was
// taken. It uses the pool's IPv6 prefix only (docs/daemons.md §10 #7).
func (a *V6) Release(ctx context.Context, id string, ip netip.Addr) (released bool, err error) {
	wrap := func(err error) error { return fmt.Errorf("release ipv6 address %s in pool %q: %w", ip, id, err) }
	p, err := a.pool(ctx, id)
	if err != nil {
		return false, wrap(err)
	}
	h, err := p.host(ip)
	if err != nil {
		return false, wrap(err)
	}
	k := a.key(id, "host/"+h.hex())
	kv, err := a.kv.Get(ctx, k)
	if errors.Is(err, objdb.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, wrap(err)
	}
	if err := a.kv.Delete(ctx, k, objdb.WithPrevVersion(kv.Version)); err != nil {
		if errors.Is(err, objdb.ErrNotFound) || errors.Is(err, objdb.ErrConflict) {
			return false, nil // released (or re-taken) meanwhile by someone else
		}
		return false, wrap(err)
	}
	return true, nil
}

// Allocated lists the taken addresses in ascending order (gateway
// included).
func (a *V6) Allocated(ctx context.Context, id string) ([]netip.Addr, error) {
	p, err := a.pool(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("list ipv6 pool %q: %w", id, err)
	}
	pre := a.key(id, "host/")
	kvs, err := a.kv.List(ctx, pre)
	if err != nil {
		return nil, fmt.Errorf("list ipv6 pool %q: %w", id, err)
	}
	out := make([]netip.Addr, 0, len(kvs))
	for _, kv := range kvs {
		if h, ok := parseHex128(strings.TrimPrefix(kv.Key, pre)); ok {
			out = append(out, p.addr(h))
		}
	}
	return out, nil
}

// DeletePool removes the pool and all its allocations. Deleting a missing
// pool is not an error.
func (a *V6) DeletePool(ctx context.Context, id string) error {
	if err := v4store.CheckPoolID(id); err != nil {
		return err
	}
	a.mu.Lock()
	delete(a.last, id)
	a.mu.Unlock()
	kvs, err := a.kv.List(ctx, a.key(id, ""))
	if err != nil {
		return fmt.Errorf("delete ipv6 pool %q: %w", id, err)
	}
	hdr := a.key(id, "header")
	for _, kv := range kvs {
		if kv.Key == hdr {
			continue
		}
		if err := a.kv.Delete(ctx, kv.Key); err != nil {
			return fmt.Errorf("delete ipv6 pool %q: %w", id, err)
		}
	}
	if err := a.kv.Delete(ctx, hdr); err != nil {
		return fmt.Errorf("delete ipv6 pool %q: %w", id, err)
	}
	return nil
}
