package reclaim

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/contiv/netplugin/netmaster/ipam"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/state"
)

// Scan is what the term start needs from the endpoint records, read
// in one walk a page at a time (docs/scale.md): a term start over many
// endpoints neither holds them all nor decodes them twice.
type Scan struct {
	NetEPs, GrpEPs map[string]int   // endpoints per network / group id
	Providers      []state.Endpoint // endpoints that can be service providers
}

// ScanEndpoints walks the endpoint records once for the counter
// reconcile and the service restore.
func (m *Collector) ScanEndpoints(ctx context.Context) (Scan, error) {
	sc := Scan{NetEPs: map[string]int{}, GrpEPs: map[string]int{}}
	if _, err := m.st.Endpoints.Each(ctx, func(ep state.Endpoint) error {
		sc.NetEPs[ep.NetID]++
		if ep.EndpointGroupKey != "" {
			sc.GrpEPs[ep.EndpointGroupKey]++
		}
		// Only an endpoint with labels and a container can be a
		// provider (svclb.Cache.Restore).
		if len(ep.Labels) > 0 && ep.ContainerID != "" {
			sc.Providers = append(sc.Providers, ep)
		}
		return nil
	}); err != nil {
		return Scan{}, fmt.Errorf("read endpoints: %w", err)
	}
	return sc, nil
}

// ReconcileCounters recomputes, at the start of a leadership term, the
// endpoint counters of every network and group from the endpoint records
// (counted by ScanEndpoints), and each network's count of handed-out
// addresses from its IPAM pools.
//
// On the stepwise path (docs/allocation-integrity.md) the endpoint record,
// the address allocation and the counters are separate store writes, so a
// netmaster killed in the middle of a create or delete can leave a counter
// off by the endpoints it was handling; the records are the truth. The
// joined path writes them in one transaction.
func (m *Collector) ReconcileCounters(ctx context.Context) error {
	sc, err := m.ScanEndpoints(ctx)
	if err != nil {
		return err
	}
	return m.CorrectCounters(ctx, sc)
}

// CorrectCounters is ReconcileCounters on the counts of a scan.
func (m *Collector) CorrectCounters(ctx context.Context, sc Scan) error {
	netEPs, grpEPs := sc.NetEPs, sc.GrpEPs
	groups, _, err := m.st.EndpointGroups.ReadAll(ctx)
	if err != nil {
		return fmt.Errorf("read endpoint groups: %w", err)
	}
	subPools := map[string][]string{} // netID -> group pool ids
	for _, g := range groups {
		if g.EpCount != grpEPs[g.ID] {
			m.log.WithField("group", g.ID).Warnf("endpoint count %d corrected to %d", g.EpCount, grpEPs[g.ID])
			if _, err := m.st.EndpointGroups.Update(ctx, g.ID, func(cur *state.EndpointGroup) error {
				cur.EpCount = grpEPs[g.ID]
				return nil
			}); err != nil {
				return fmt.Errorf("correct endpoint count of group %q: %w", g.ID, err)
			}
		}
		if g.IPPool != "" {
			id := state.NetworkID(g.TenantName, g.NetworkName)
			subPools[id] = append(subPools[id], g.ID)
		}
	}
	nets, _, err := m.st.Networks.ReadAll(ctx)
	if err != nil {
		return fmt.Errorf("read networks: %w", err)
	}
	for _, n := range nets {
		addrs, err := m.handedOut(ctx, n, subPools[n.ID])
		if err != nil {
			return err
		}
		if n.EpCount == netEPs[n.ID] && n.EpAddrCount == addrs {
			continue
		}
		m.log.WithField("network", n.ID).Warnf("counters (%d endpoints, %d addresses) corrected to (%d, %d)",
			n.EpCount, n.EpAddrCount, netEPs[n.ID], addrs)
		if _, err := m.st.Networks.Update(ctx, n.ID, func(cur *state.Network) error {
			cur.EpCount, cur.EpAddrCount = netEPs[n.ID], addrs
			return nil
		}); err != nil {
			return fmt.Errorf("correct counters of network %q: %w", n.ID, err)
		}
	}
	return nil
}

// handedOut counts the addresses of a network given out by allocation:
// taken in its pool, minus the gateway and the groups' pool ranges, plus
// what the groups' pools gave out.
func (m *Collector) handedOut(ctx context.Context, n state.Network, groupPools []string) (int, error) {
	u, err := m.v4.Usage(ctx, n.ID)
	if errors.Is(err, ipam.ErrPoolNotFound) || errors.Is(err, objdb.ErrNotFound) {
		return n.EpAddrCount, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read address usage of %q: %w", n.ID, err)
	}
	used := u.Used
	if gw, err := netip.ParseAddr(n.Gateway); err == nil {
		if taken, err := m.v4.IsAllocated(ctx, n.ID, gw); err == nil && taken {
			used--
		}
	}
	for _, id := range groupPools {
		gu, err := m.v4.Usage(ctx, id)
		if err != nil {
			continue
		}
		used += gu.Used - gu.Size
	}
	return int(used), nil
}
