package ipam

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/contiv/netplugin/netmaster/ipam/v4store"
)

// CreateSubPool carves the pool id out of the pool parentID: pool is an
// endpoint group's "a.b.c.d-e.f.g.h" (see ParsePool for its checks). Every
// address of the range must be free in the parent ("ip address <a> is not
// available", ErrInUse); they are then taken in the parent, so the parent
// never hands them out, and the sub-pool hands them out to the group's
// endpoints (docs/daemons.md §4.8). Creating an identical sub-pool again
// succeeds without change.
func (a *V4) CreateSubPool(ctx context.Context, parentID, id, pool string) (PoolInfo, error) {
	if err := v4store.CheckPoolID(parentID); err != nil {
		return PoolInfo{}, err
	}
	if err := v4store.CheckPoolID(id); err != nil {
		return PoolInfo{}, err
	}
	wrap := func(err error) error { return fmt.Errorf("create ip pool %q in pool %q: %w", id, parentID, err) }
	if err := a.flushReserve(ctx, parentID); err != nil {
		return PoolInfo{}, wrap(err)
	}
	pl, err := a.st.ReadLayout(ctx, parentID)
	if err != nil {
		return PoolInfo{}, wrap(err)
	}
	first, last, err := ParsePool(pl.Subnet, pool)
	if err != nil {
		return PoolInfo{}, wrap(err)
	}
	h := v4store.Header{Subnet: pl.Hdr.Subnet, First: first.String(), Last: last.String(), Parent: parentID, Pool: pool}
	if l, err := a.st.ReadLayout(ctx, id); err == nil {
		if l.Hdr != h {
			return PoolInfo{}, wrap(userErr(ErrPoolExists, "pool %s exists with range %s-%s", id, l.Hdr.First, l.Hdr.Last))
		}
		return poolInfo(l), nil
	} else if !errors.Is(err, ErrPoolNotFound) {
		return PoolInfo{}, wrap(err)
	}
	lo, hi := int64(v4store.U32(first)-pl.Base), int64(v4store.U32(last)-pl.Base)
	if err := a.st.ReserveRange(ctx, pl, lo, hi); err != nil {
		return PoolInfo{}, wrap(err)
	}
	a.invalidate(parentID)
	l, err := a.st.PutHeader(ctx, id, h)
	if err != nil {
		if cerr := a.st.ClearRange(ctx, pl, lo, hi); cerr != nil {
			err = errors.Join(err, fmt.Errorf("give back range: %w", cerr))
		}
		return PoolInfo{}, wrap(err)
	}
	return poolInfo(l), nil
}

// DeletePool removes the pool and, for a sub-pool, gives its range back to
// the parent. Deleting a missing pool is not an error. The caller makes
// sure nothing allocates from the pool meanwhile.
func (a *V4) DeletePool(ctx context.Context, id string) error {
	if err := v4store.CheckPoolID(id); err != nil {
		return err
	}
	wrap := func(err error) error { return fmt.Errorf("delete ip pool %q: %w", id, err) }
	l, err := a.st.ReadLayout(ctx, id)
	if errors.Is(err, ErrPoolNotFound) {
		a.forget(id)
		return nil
	}
	if err != nil {
		return wrap(err)
	}
	a.forget(id)
	if err := a.st.DeleteKeys(ctx, id); err != nil {
		return wrap(err)
	}
	if l.Hdr.Parent == "" {
		return nil
	}
	pl, err := a.st.ReadLayout(ctx, l.Hdr.Parent)
	if errors.Is(err, ErrPoolNotFound) {
		return nil
	}
	if err != nil {
		return wrap(err)
	}
	lo, hi := int64(v4store.U32(l.First)-pl.Base), int64(v4store.U32(l.Last)-pl.Base)
	if err := a.st.ClearRange(ctx, pl, lo, hi); err != nil {
		return wrap(fmt.Errorf("give range back to pool %q: %w", l.Hdr.Parent, err))
	}
	a.invalidate(l.Hdr.Parent)
	return nil
}

// snapshot reads the pool's header and every stored chunk, once this
// process has given back its reserve.
func (a *V4) snapshot(ctx context.Context, id string) (*v4store.Layout, map[int]*[v4store.ChunkWords]uint64, error) {
	if err := v4store.CheckPoolID(id); err != nil {
		return nil, nil, err
	}
	if err := a.flushReserve(ctx, id); err != nil {
		return nil, nil, err
	}
	return a.st.Snapshot(ctx, id)
}

// Usage reads the pool's counts (one List of its chunks).
func (a *V4) Usage(ctx context.Context, id string) (Usage, error) {
	l, chunks, err := a.snapshot(ctx, id)
	if err != nil {
		return Usage{}, fmt.Errorf("read usage of pool %q: %w", id, err)
	}
	return v4store.Count(l, chunks), nil
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
	used, free = v4store.Ranges(l, chunks)
	return used, free, nil
}

// IsAllocated reports whether ip is taken in the pool (false for
// addresses the pool never hands out).
func (a *V4) IsAllocated(ctx context.Context, id string, ip netip.Addr) (bool, error) {
	if err := v4store.CheckPoolID(id); err != nil {
		return false, err
	}
	if err := a.flushReserve(ctx, id); err != nil {
		return false, fmt.Errorf("check address %s in pool %q: %w", ip, id, err)
	}
	l, err := a.st.ReadLayout(ctx, id)
	if err != nil {
		return false, fmt.Errorf("check address %s in pool %q: %w", ip, id, err)
	}
	h, err := l.Host(ip)
	if err != nil {
		return false, fmt.Errorf("check address %s in pool %q: %w", ip, id, err)
	}
	if !l.Allocatable(h) {
		return false, nil
	}
	taken, err := a.st.Taken(ctx, l, h)
	if err != nil {
		return false, fmt.Errorf("check address %s in pool %q: %w", ip, id, err)
	}
	return taken, nil
}
