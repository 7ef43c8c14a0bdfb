package stall

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/state"
)

// Ownership is what the store says about one network's addresses
// (docs/allocation-integrity.md).
type Ownership struct {
	// Records are the network's endpoint records; IPs maps each record's
	// EndpointID (the container's id; its ID when it has none) to its
	// address.
	Records int
	IPs     map[string]string
	// DoubleOwned lists "address: owner, owner" for addresses with two or
	// more owners (endpoint records, allocAddress records, the gateway).
	DoubleOwned []string
	// Unmarked lists owned addresses that are free in the pool.
	Unmarked []string
	// Leaked counts addresses taken in the pool without an owner.
	Leaked int
	// EpCount, EpAddrCount are the network's counters; WantEps, WantAddrs
	// what the records say they must be.
	EpCount, EpAddrCount, WantEps, WantAddrs int
}

// Failures lists what breaks an invariant: an address with two owners,
// an owned address free in the pool, counters that differ from the
// records. Leaked addresses are not failures.
func (o Ownership) Failures() []string {
	var out []string
	if len(o.DoubleOwned) > 0 {
		out = append(out, "addresses with two owners: "+strings.Join(o.DoubleOwned, "; "))
	}
	if len(o.Unmarked) > 0 {
		out = append(out, "owned addresses free in the pool: "+strings.Join(o.Unmarked, ", "))
	}
	if o.EpCount != o.WantEps || o.EpAddrCount != o.WantAddrs {
		out = append(out, fmt.Sprintf("counters (%d endpoints, %d addresses), records say (%d, %d)",
			o.EpCount, o.EpAddrCount, o.WantEps, o.WantAddrs))
	}
	return out
}

// CheckNetwork reads network netID (e.g. "net.tenant") with gateway
// address gateway ("" for none) from the store and reports who owns which
// address.
func CheckNetwork(ctx context.Context, st objdb.Store, netID, gateway string) (Ownership, error) {
	o := Ownership{IPs: map[string]string{}}
	ss := state.New(st)
	eps, _, err := ss.Endpoints.ReadAll(ctx)
	if err != nil {
		return o, fmt.Errorf("read endpoints: %w", err)
	}
	recs, err := st.List(ctx, "state/ipalloc/"+netID+"/")
	if err != nil {
		return o, fmt.Errorf("read address records: %w", err)
	}
	ns, err := ss.Networks.Read(ctx, netID)
	if err != nil {
		return o, fmt.Errorf("read network %s: %w", netID, err)
	}
	owners := map[string][]string{}
	if gateway != "" {
		owners[gateway] = []string{"gateway"}
	}
	for _, ep := range eps {
		if ep.NetID != netID {
			continue
		}
		o.Records++
		who := ep.EndpointID
		if who == "" {
			who = ep.ID
		}
		o.IPs[who] = ep.IPAddress
		if ep.IPAddress != "" {
			owners[ep.IPAddress] = append(owners[ep.IPAddress], "endpoint "+ep.ID)
		}
	}
	allocs := 0
	for _, r := range recs {
		ip := r.Key[strings.LastIndex(r.Key, "/")+1:]
		owners[ip] = append(owners[ip], "record "+r.Key)
		allocs++
	}
	taken, err := takenIn(ctx, st, netID)
	if err != nil {
		return o, fmt.Errorf("read pool: %w", err)
	}
	for ip, who := range owners {
		if len(who) > 1 {
			o.DoubleOwned = append(o.DoubleOwned, ip+": "+strings.Join(who, ", "))
		}
		if a, err := netip.ParseAddr(ip); err != nil || !taken[a] {
			o.Unmarked = append(o.Unmarked, ip)
		}
	}
	for a := range taken {
		if _, ok := owners[a.String()]; !ok {
			o.Leaked++
		}
	}
	o.EpCount, o.EpAddrCount = ns.EpCount, ns.EpAddrCount
	o.WantEps, o.WantAddrs = o.Records, o.Records+allocs
	return o, nil
}
