package ipam

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/contiv/netplugin/netmaster/ipam/v4store"
	"github.com/contiv/netplugin/objdb"
)

// Restoring pools carries allocation state written elsewhere (the original
// Contiv's bitmaps, docs/upgrade.md) into this package's layout in one
// pass: the header and every chunk are written whole, instead of one
// compare-and-swap per address. Restore never changes an allocation that
// is already stored: a chunk holding other bits is a conflict.

// PoolDef is an IPv4 pool's definition for Restore: Subnet "base/len",
// the allocatable range First-Last, the reserved gateway (or ""), and for
// a group's sub-pool the Parent pool id and the user's Pool string.
type PoolDef struct {
	Subnet  string
	First   string
	Last    string
	Gateway string
	Parent  string
	Pool    string
}

func (d PoolDef) header() v4store.Header {
	return v4store.Header{Subnet: d.Subnet, First: d.First, Last: d.Last, Gateway: d.Gateway, Parent: d.Parent, Pool: d.Pool}
}

// RestoreOption configures Restore.
type RestoreOption func(*restoreOptions)

type restoreOptions struct{ checkOnly bool }

// RestoreCheckOnly makes Restore compare without writing: it reports
// whether a write would be needed, or the conflict.
func RestoreCheckOnly() RestoreOption { return func(o *restoreOptions) { o.checkOnly = true } }

// Restore makes the IPv4 pool id hold exactly def with the addresses taken
// taken (each allocatable in def; the gateway among them when reserved).
// A missing pool is created; an identical stored pool is left alone
// (changed false); a stored pool with another header, or a chunk with other
// bits, fails with ErrRestoreConflict and writes nothing more. Chunks are
// written one at a time, each create-only, so a Restore cut short can run
// again. The caller makes sure nothing allocates from the pool meanwhile.
func (a *V4) Restore(ctx context.Context, id string, def PoolDef, taken []netip.Addr, opts ...RestoreOption) (changed bool, err error) {
	var o restoreOptions
	for _, f := range opts {
		f(&o)
	}
	if err := v4store.CheckPoolID(id); err != nil {
		return false, fmt.Errorf("restore ip pool %q: %w", id, err)
	}
	changed, err = a.st.Restore(ctx, id, def.header(), taken, o.checkOnly)
	if err != nil {
		return changed, fmt.Errorf("restore ip pool %q: %w", id, err)
	}
	if !o.checkOnly || !changed {
		a.invalidate(id)
	}
	return changed, nil
}

// RestoreV6Keys returns the keys, relative to the store root, that hold the
// IPv6 pool id of subnet with gateway (or "") reserved, the addresses taken
// taken and the allocation cursor after last (zero Addr: none), as V6
// writes them. The caller writes them create-only.
func RestoreV6Keys(id, subnet, gateway string, taken []netip.Addr, last netip.Addr, opts ...Option) ([]objdb.KeyValue, error) {
	o := applyOptions(opts)
	wrap := func(err error) error { return fmt.Errorf("restore ipv6 pool %q: %w", id, err) }
	if err := v4store.CheckPoolID(id); err != nil {
		return nil, wrap(err)
	}
	pfx, err := ParseSubnetV6(subnet)
	if err != nil {
		return nil, wrap(err)
	}
	p := &pool6{id: id, prefix: pfx, mask: hostMask(pfx.Bits()), hdr: header6{Subnet: pfx.String()}}
	key := func(rest string) string { return o.prefix + id + "/v6/" + rest }
	if gateway != "" {
		gw, err := netip.ParseAddr(gateway)
		if err != nil {
			return nil, wrap(userErr(ErrInvalid, "invalid ipv6 gateway %q", gateway))
		}
		if _, err := p.host(gw); err != nil {
			return nil, wrap(err)
		}
		p.hdr.Gateway = gw.String()
	}
	hv, _ := json.Marshal(p.hdr)
	out := []objdb.KeyValue{{Key: key("header"), Value: hv}}
	seen := map[u128]bool{}
	for _, ip := range taken {
		h, err := p.host(ip)
		if err != nil {
			return nil, wrap(err)
		}
		if h.isZero() {
			return nil, wrap(userErr(ErrNotAllocatable, "address %s is the prefix itself", ip))
		}
		if seen[h] {
			continue
		}
		seen[h] = true
		out = append(out, objdb.KeyValue{Key: key("host/" + h.hex()), Value: []byte(p.addr(h).String())})
	}
	if last.IsValid() {
		h, err := p.host(last)
		if err != nil {
			return nil, wrap(err)
		}
		lv, _ := json.Marshal(last6{Last: h.hex()})
		out = append(out, objdb.KeyValue{Key: key("last"), Value: lv})
	}
	sort.Slice(out, func(i, j int) bool { return strings.Compare(out[i].Key, out[j].Key) < 0 })
	return out, nil
}
