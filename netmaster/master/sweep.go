package master

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/contiv/netplugin/netmaster/ipam"
	"github.com/contiv/netplugin/objdb"
)

// Addresses handed out by /plugin/allocAddress are recorded under
// "state/ipalloc/<pool>/<ip>" until released (or until an endpoint takes
// the address over). Together with the endpoint records this names the
// owner of every allocated address, so a leadership term can find the
// addresses a killed netmaster allocated but never recorded (it died
// between the allocation and the record) and give them back.
const ipallocPrefix = "state/ipalloc/"

func ipallocKey(pool string, ip netip.Addr) string { return ipallocPrefix + pool + "/" + ip.String() }

// sweepLeaks releases every address taken in a network or group pool (IPv4)
// or a network's IPv6 pool that no endpoint, allocAddress record or gateway
// accounts for, then corrects the counters. Endpoint operations of this process wait meanwhile.
func (m *master) sweepLeaks(ctx context.Context) error {
	m.topo.Lock()
	defer m.topo.Unlock()
	nets, _, err := m.st.Networks.ReadAll(ctx)
	if err != nil {
		return fmt.Errorf("sweep: read networks: %w", err)
	}
	groups, _, err := m.st.EndpointGroups.ReadAll(ctx)
	if err != nil {
		return fmt.Errorf("sweep: read groups: %w", err)
	}
	eps, err := m.allEndpoints(ctx)
	if err != nil {
		return err
	}
	recs, err := m.kv.List(ctx, ipallocPrefix)
	if err != nil {
		return fmt.Errorf("sweep: read address records: %w", err)
	}
	held := map[string]map[netip.Addr]bool{}
	hold := func(pool string, a netip.Addr) {
		if held[pool] == nil {
			held[pool] = map[netip.Addr]bool{}
		}
		held[pool][a] = true
	}
	groupPool := map[string]string{} // group state id -> pool id
	type span struct{ lo, hi netip.Addr }
	carved := map[string][]span{} // network -> group pool ranges
	for _, g := range groups {
		if g.IPPool == "" {
			continue
		}
		groupPool[g.ID] = g.ID
		if lo, hi, ok := strings.Cut(g.IPPool, "-"); ok {
			a, err1 := netip.ParseAddr(lo)
			b, err2 := netip.ParseAddr(hi)
			if err1 == nil && err2 == nil {
				id := netStateID(g.TenantName, g.NetworkName)
				carved[id] = append(carved[id], span{a, b})
			}
		}
	}
	for _, ep := range eps {
		if a, err := netip.ParseAddr(ep.IPv6Address); err == nil {
			hold(ep.NetID, a) // IPv6 pools are per network
		}
		a, err := netip.ParseAddr(ep.IPAddress)
		if err != nil {
			continue
		}
		pool := ep.NetID
		if p, ok := groupPool[ep.EndpointGroupKey]; ok {
			pool = p
		}
		hold(pool, a)
	}
	for _, r := range recs {
		rest := strings.TrimPrefix(r.Key, ipallocPrefix)
		i := strings.LastIndex(rest, "/")
		if i < 0 {
			continue
		}
		if a, err := netip.ParseAddr(rest[i+1:]); err == nil {
			hold(rest[:i], a)
		}
	}
	sweep := func(pool string, skip func(netip.Addr) bool) error {
		used, err := m.v4.InUse(ctx, pool)
		if err != nil {
			return fmt.Errorf("sweep: list pool %q: %w", pool, err)
		}
		for _, run := range strings.Split(used, ", ") {
			if run == "" {
				continue
			}
			lo, hi, isRun := strings.Cut(run, "-")
			if !isRun {
				hi = lo
			}
			a, err1 := netip.ParseAddr(lo)
			b, err2 := netip.ParseAddr(hi)
			if err1 != nil || err2 != nil {
				continue
			}
			for x := a; x.IsValid() && x.Compare(b) <= 0; x = x.Next() {
				if held[pool][x] || skip(x) {
					continue
				}
				if _, err := m.v4.Release(ctx, pool, x); err != nil {
					return fmt.Errorf("sweep: release %s in %q: %w", x, pool, err)
				}
				m.log.WithField("pool", pool).Warnf("released leaked address %s", x)
			}
		}
		return nil
	}
	for _, n := range nets {
		gw, _ := netip.ParseAddr(n.Gateway)
		spans := carved[n.ID]
		err := sweep(n.ID, func(x netip.Addr) bool {
			if x == gw {
				return true
			}
			for _, s := range spans {
				if x.Compare(s.lo) >= 0 && x.Compare(s.hi) <= 0 {
					return true
				}
			}
			return false
		})
		if err != nil && !errors.Is(err, objdb.ErrNotFound) {
			return err
		}
	}
	for id := range groupPool {
		if err := sweep(id, func(netip.Addr) bool { return false }); err != nil && !errors.Is(err, objdb.ErrNotFound) {
			return err
		}
	}
	for _, n := range nets {
		if n.IPv6Subnet == "" {
			continue
		}
		gw, _ := netip.ParseAddr(n.IPv6Gateway)
		if err := m.sweepV6(ctx, n.ID, func(x netip.Addr) bool { return held[n.ID][x] || x == gw }); err != nil {
			return err
		}
	}
	return m.reconcileCounters(ctx)
}

// sweepV6 releases the addresses of the IPv6 pool of netID not kept.
func (m *master) sweepV6(ctx context.Context, netID string, keep func(netip.Addr) bool) error {
	taken, err := m.v6.Allocated(ctx, netID)
	if errors.Is(err, ipam.ErrPoolNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	for _, x := range taken {
		if keep(x) {
			continue
		}
		if _, err := m.v6.Release(ctx, netID, x); err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
		m.log.WithField("pool", netID).Warnf("released leaked address %s", x)
	}
	return nil
}
