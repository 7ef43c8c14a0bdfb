package reclaim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"sort"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/contiv/netplugin/netmaster/ipam"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/state"
)

// SweepReport is what the last sweep of the term found (GET /debug/sweep).
type SweepReport struct {
	// At is when the sweep finished; Err is set when it failed part way.
	At  time.Time `json:"at"`
	Err string    `json:"error,omitempty"`
	// Released lists "<pool> <address>" of addresses taken without an
	// owner, given back.
	Released []string `json:"released"`
	// DoubleOwned lists "<pool> <address>: <owner>, <owner>…" of addresses
	// with two or more owners. They are kept as they are (which owner is
	// right is for the operator to decide) and logged as errors: a sound
	// store never has one (docs/allocation-integrity.md).
	DoubleOwned []string `json:"doubleOwned"`
	// Retaken lists "<pool> <address>: <owner>" of owned addresses found
	// free in their pool, taken again so that they are not handed out to a
	// second owner.
	Retaken []string `json:"retaken"`
}

// lastSweep returns the report of the term's last sweep (nil before it).
func (m *Collector) lastSweep() *SweepReport {
	m.sweepMu.Lock()
	defer m.sweepMu.Unlock()
	return m.sweepRep
}

func (m *Collector) addSweepRoute(r *mux.Router) {
	r.Methods(http.MethodGet).Path("/debug/sweep").HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		rep := m.lastSweep()
		if rep == nil {
			http.Error(w, "no sweep has run in this leadership term yet", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(rep)
	})
}

// Sweep checks every address taken in a network or group pool (IPv4)
// or a network's IPv6 pool against its owners (endpoint records,
// allocAddress and service VIP records, the gateway): it releases those
// without an owner, reports those with two or more, and takes again owned
// ones found free; then it corrects the counters. Endpoint operations of
// this process wait meanwhile. The report is kept for /debug/sweep.
func (m *Collector) Sweep(ctx context.Context) (err error) {
	m.topo.Lock()
	defer m.topo.Unlock()
	rep := &SweepReport{Released: []string{}, DoubleOwned: []string{}, Retaken: []string{}}
	defer func() {
		rep.At = time.Now()
		if err != nil {
			rep.Err = err.Error()
		}
		m.sweepMu.Lock()
		m.sweepRep = rep
		m.sweepMu.Unlock()
	}()
	nets, _, err := m.st.Networks.ReadAll(ctx)
	if err != nil {
		return fmt.Errorf("sweep: read networks: %w", err)
	}
	groups, _, err := m.st.EndpointGroups.ReadAll(ctx)
	if err != nil {
		return fmt.Errorf("sweep: read groups: %w", err)
	}
	owners, groupPool, carved, err := m.owners(ctx, nets, groups)
	if err != nil {
		return err
	}
	for _, pool := range owners.pools() {
		for _, a := range sortedAddrs(owners[pool]) {
			if who := owners[pool][a]; len(who) > 1 {
				line := fmt.Sprintf("%s %s: %s", pool, a, strings.Join(who, ", "))
				rep.DoubleOwned = append(rep.DoubleOwned, line)
				m.log.WithField("pool", pool).Errorf("address %s has %d owners: %s", a, len(who), strings.Join(who, ", "))
			}
		}
	}
	for _, n := range nets {
		spans := carved[n.ID]
		err := m.sweepPool(ctx, rep, owners, n.ID, func(x netip.Addr) bool {
			for _, s := range spans {
				if x.Compare(s.lo) >= 0 && x.Compare(s.hi) <= 0 {
					return true
				}
			}
			return false
		})
		if err != nil && !errors.Is(err, objdb.ErrNotFound) && !errors.Is(err, ipam.ErrPoolNotFound) {
			return err
		}
	}
	for id := range groupPool {
		if err := m.sweepPool(ctx, rep, owners, id, func(netip.Addr) bool { return false }); err != nil && !errors.Is(err, objdb.ErrNotFound) && !errors.Is(err, ipam.ErrPoolNotFound) {
			return err
		}
	}
	for _, n := range nets {
		if n.IPv6Subnet == "" {
			continue
		}
		released, err := m.sweepV6(ctx, n.ID, func(x netip.Addr) bool { return owners[n.ID][x] != nil })
		for _, x := range released {
			rep.Released = append(rep.Released, n.ID+" "+x.String())
		}
		if err != nil {
			return err
		}
	}
	return m.ReconcileCounters(ctx)
}

// span is an inclusive address range.
type span struct{ lo, hi netip.Addr }

// owners indexes the owners of the addresses of nets and groups: endpoint
// records, allocAddress and service VIP records, the gateways. It also
// returns the group pools (group state id -> pool id) and the ranges the
// groups' pools carve out of each network.
func (m *Collector) owners(ctx context.Context, nets []state.Network, groups []state.EndpointGroup) (owned, map[string]string, map[string][]span, error) {
	owners := owned{}
	groupPool := map[string]string{} // group state id -> pool id
	carved := map[string][]span{}    // network -> group pool ranges
	for _, g := range groups {
		if g.IPPool == "" {
			continue
		}
		groupPool[g.ID] = g.ID
		if lo, hi, ok := strings.Cut(g.IPPool, "-"); ok {
			a, err1 := netip.ParseAddr(lo)
			b, err2 := netip.ParseAddr(hi)
			if err1 == nil && err2 == nil {
				id := state.NetworkID(g.TenantName, g.NetworkName)
				carved[id] = append(carved[id], span{a, b})
			}
		}
	}
	// Endpoint and address records are read a page at a time: only the
	// owners index is kept, not every record (docs/scale.md).
	if _, err := m.st.Endpoints.Each(ctx, func(ep state.Endpoint) error {
		if a, err := netip.ParseAddr(ep.IPv6Address); err == nil {
			owners.add(ep.NetID, a, "endpoint "+ep.ID) // IPv6 pools are per network
		}
		a, err := netip.ParseAddr(ep.IPAddress)
		if err != nil {
			return nil
		}
		pool := ep.NetID
		if p, ok := groupPool[ep.EndpointGroupKey]; ok {
			pool = p
		}
		owners.add(pool, a, "endpoint "+ep.ID)
		return nil
	}); err != nil {
		return nil, nil, nil, fmt.Errorf("sweep: read endpoints: %w", err)
	}
	if err := objdb.ListPages(ctx, m.kv, IPAllocPrefix, objdb.DefaultPageSize, func(recs []objdb.KeyValue) error {
		for _, r := range recs {
			rest := strings.TrimPrefix(r.Key, IPAllocPrefix)
			i := strings.LastIndex(rest, "/")
			if i < 0 {
				continue
			}
			if a, err := netip.ParseAddr(rest[i+1:]); err == nil {
				who := "allocAddress record"
				if v := string(r.Value); strings.HasPrefix(v, VIPRecordPrefix) {
					who = "service " + strings.TrimPrefix(v, VIPRecordPrefix)
				}
				owners.add(rest[:i], a, who)
			}
		}
		return nil
	}); err != nil {
		return nil, nil, nil, fmt.Errorf("sweep: read address records: %w", err)
	}
	for _, n := range nets {
		if gw, err := netip.ParseAddr(n.Gateway); err == nil {
			owners.add(n.ID, gw, "gateway of "+n.ID)
		}
		if gw, err := netip.ParseAddr(n.IPv6Gateway); err == nil {
			owners.add(n.ID, gw, "gateway of "+n.ID)
		}
	}
	return owners, groupPool, carved, nil
}

// sweepPool releases the addresses taken in the IPv4 pool without an owner
// (but those skip keeps) and takes again the owned ones found free,
// recording both in rep.
func (m *Collector) sweepPool(ctx context.Context, rep *SweepReport, owners owned, pool string, skip func(netip.Addr) bool) error {
	taken, err := m.v4.Taken(ctx, pool)
	if err != nil {
		return fmt.Errorf("sweep: list pool %q: %w", pool, err)
	}
	for _, x := range sortedAddrs(taken) {
		if owners[pool][x] != nil || skip(x) {
			continue
		}
		if _, err := m.v4.Release(ctx, pool, x); err != nil {
			return fmt.Errorf("sweep: release %s in %q: %w", x, pool, err)
		}
		rep.Released = append(rep.Released, pool+" "+x.String())
		m.log.WithField("pool", pool).Warnf("released leaked address %s", x)
	}
	for _, x := range sortedAddrs(owners[pool]) {
		if taken[x] || !x.Is4() {
			continue
		}
		who := strings.Join(owners[pool][x], ", ")
		_, err := m.v4.AllocateSpecific(ctx, pool, x)
		if errors.Is(err, ipam.ErrNotAllocatable) || errors.Is(err, ipam.ErrOutOfSubnet) {
			continue // a gateway outside the range is never handed out
		}
		if err != nil && !errors.Is(err, ipam.ErrInUse) {
			return fmt.Errorf("sweep: take %s (%s) again in %q: %w", x, who, pool, err)
		}
		rep.Retaken = append(rep.Retaken, fmt.Sprintf("%s %s: %s", pool, x, who))
		m.log.WithField("pool", pool).Errorf("address %s of %s was free in its pool: taken again", x, who)
	}
	return nil
}

// owned maps pool -> address -> its owners.
type owned map[string]map[netip.Addr][]string

func (o owned) add(pool string, a netip.Addr, who string) {
	if o[pool] == nil {
		o[pool] = map[netip.Addr][]string{}
	}
	o[pool][a] = append(o[pool][a], who)
}

func (o owned) pools() []string {
	out := make([]string, 0, len(o))
	for k := range o {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedAddrs[V any](m map[netip.Addr]V) []netip.Addr {
	out := make([]netip.Addr, 0, len(m))
	for a := range m {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Less(out[j]) })
	return out
}

// sweepV6 releases the addresses of the IPv6 pool of netID not kept.
func (m *Collector) sweepV6(ctx context.Context, netID string, keep func(netip.Addr) bool) (released []netip.Addr, err error) {
	taken, err := m.v6.Allocated(ctx, netID)
	if errors.Is(err, ipam.ErrPoolNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	for _, x := range taken {
		if keep(x) {
			continue
		}
		if _, err := m.v6.Release(ctx, netID, x); err != nil {
			return released, fmt.Errorf("sweep: %w", err)
		}
		released = append(released, x)
		m.log.WithField("pool", netID).Warnf("released leaked address %s", x)
	}
	return released, nil
}
