package endpoints

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/contiv/netplugin/api/pluginapi"
	"github.com/contiv/netplugin/netmaster/apierr"
	"github.com/contiv/netplugin/netmaster/ipam"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/state"
	"github.com/contiv/netplugin/utils/usererr"
)

// releaseAddress frees an address allocAddress handed out, or one without
// any owner. An endpoint's address, a gateway, a service VIP or an address
// of a group's IP pool is refused (ErrOwned, naming the owner) and nothing
// changes (docs/allocation-integrity.md).
func (m *Service) releaseAddress(ctx context.Context, req *pluginapi.AddressReleaseRequest) (pluginapi.AddressReleaseResponse, error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	m.topo.RLock()
	defer m.topo.RUnlock()
	ref := parseNetworkID(req.NetworkID)
	ns, err := m.netState(ctx, ref.netID)
	if err != nil {
		return pluginapi.AddressReleaseResponse{}, apierr.Store("read network state "+ref.netID, err)
	}
	addrStr, _, _ := strings.Cut(req.IPv4Address, "/")
	if a, err := netip.ParseAddr(addrStr); err == nil && a.Is6() {
		if _, err := m.releaseChecked(ctx, ref.netID, ref.netID, a, ns.Gateway, ns.IPv6Gateway); err != nil {
			return pluginapi.AddressReleaseResponse{}, err
		}
		return pluginapi.AddressReleaseResponse{Status: "success"}, nil
	}
	pool, err := m.poolOf(ctx, ref)
	if err != nil {
		return pluginapi.AddressReleaseResponse{}, err
	}
	sn, err := ipam.ParseSubnet(fmt.Sprintf("%s/%d", ns.SubnetIP, ns.SubnetLen))
	if err != nil {
		return pluginapi.AddressReleaseResponse{}, err
	}
	ip, err := sn.CheckHost(addrStr)
	if err != nil {
		return pluginapi.AddressReleaseResponse{}, err
	}
	released, err := m.releaseChecked(ctx, ref.netID, pool, ip, ns.Gateway, ns.IPv6Gateway)
	if err != nil {
		return pluginapi.AddressReleaseResponse{}, err
	}
	if released {
		if err := m.bumpNetwork(ctx, ref.netID, 0, -1); err != nil {
			m.needRepair(err)
			return pluginapi.AddressReleaseResponse{}, err
		}
	}
	return pluginapi.AddressReleaseResponse{Status: "success"}, nil
}

// ErrOwned is the cause of a refused /plugin/releaseAddress: the address
// belongs to an endpoint, is a network's gateway, a service VIP or part of
// a group's IP pool. Only an address allocAddress handed out (its record
// names the network) or one without any owner is released
// (docs/allocation-integrity.md). It wraps ipam.ErrInUse.
var ErrOwned = fmt.Errorf("endpoints: address has another owner: %w", ipam.ErrInUse)

// ownedBy refuses a release of ip, naming its owner.
func ownedBy(ip netip.Addr, owner string) error {
	return usererr.New(ErrOwned, "address %s is %s and cannot be released; release it through its owner", ip, owner)
}

// releaseOwner names the owner of ip that forbids releasing it through
// /plugin/releaseAddress ("" when there is none): the gateway of netID, a
// range carved out for a group's IP pool (when releasing from the network's
// own pool), an endpoint, or a service VIP record.
func (m *Service) releaseOwner(ctx context.Context, netID, pool string, ip netip.Addr, gw, gw6 string) (string, error) {
	if g, err := netip.ParseAddr(gw); err == nil && g == ip {
		return "the gateway of network " + netID, nil
	}
	if g, err := netip.ParseAddr(gw6); err == nil && g == ip {
		return "the gateway of network " + netID, nil
	}
	if ip.Is4() && pool == netID {
		groups, _, err := m.st.EndpointGroups.ReadAll(ctx)
		if err != nil {
			return "", fmt.Errorf("read endpoint groups: %w", err)
		}
		for _, g := range groups {
			if g.IPPool == "" || state.NetworkID(g.TenantName, g.NetworkName) != netID {
				continue
			}
			lo, hi, _ := strings.Cut(g.IPPool, "-")
			a, err1 := netip.ParseAddr(lo)
			b, err2 := netip.ParseAddr(hi)
			if err1 == nil && err2 == nil && ip.Compare(a) >= 0 && ip.Compare(b) <= 0 {
				return "in the IP pool " + g.IPPool + " of group " + g.ID, nil
			}
		}
	}
	holder, err := m.endpointHolding(ctx, netID, ip)
	if err != nil {
		return "", err
	}
	if holder != "" {
		return "held by endpoint " + holder, nil
	}
	rec, err := m.kv.Get(ctx, ipallocKey(pool, ip))
	switch {
	case errors.Is(err, objdb.ErrNotFound):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("read address record %s: %w", ip, err)
	case strings.HasPrefix(string(rec.Value), vipRecordPrefix):
		return "the VIP of service " + strings.TrimPrefix(string(rec.Value), vipRecordPrefix), nil
	}
	return "", nil
}

// takeRecord removes the allocAddress record of ip in pool, atomically:
// of a release and an endpoint taking the address over, exactly one gets
// the record. had reports whether there was one; a service VIP record is
// put back and refused.
func (m *Service) takeRecord(ctx context.Context, pool string, ip netip.Addr) (had bool, err error) {
	var prev objdb.KeyValue
	if err := m.kv.Delete(ctx, ipallocKey(pool, ip), objdb.WithPrevKV(&prev)); err != nil {
		if errors.Is(err, objdb.ErrNotFound) && !errors.Is(err, objdb.ErrUncertain) {
			return false, nil
		}
		return false, fmt.Errorf("take address record %s: %w", ip, err)
	}
	if prev.Version == 0 {
		return false, nil
	}
	if v := string(prev.Value); strings.HasPrefix(v, vipRecordPrefix) {
		if perr := m.putRecordBack(pool, ip, prev.Value); perr != nil {
			return true, perr
		}
		return false, ownedBy(ip, "the VIP of service "+strings.TrimPrefix(v, vipRecordPrefix))
	}
	return true, nil
}

// putRecordBack restores an address record taken by a release that is then
// refused.
func (m *Service) putRecordBack(pool string, ip netip.Addr, val []byte) error {
	ctx, cancel := UndoContext()
	defer cancel()
	if _, err := m.kv.Put(ctx, ipallocKey(pool, ip), val, objdb.WithCreateOnly()); err != nil && !errors.Is(err, objdb.ErrConflict) {
		m.log.WithError(err).WithField("pool", pool).Error("put address record back")
		return fmt.Errorf("put address record %s back: %w", ip, err)
	}
	return nil
}

// releaseChecked frees ip in pool (IPv4) or in netID's IPv6 pool after the
// ownership checks; released reports whether it was taken.
func (m *Service) releaseChecked(ctx context.Context, netID, pool string, ip netip.Addr, gw, gw6 string) (released bool, err error) {
	owner, err := m.releaseOwner(ctx, netID, pool, ip, gw, gw6)
	if err != nil {
		return false, err
	}
	if owner != "" {
		return false, ownedBy(ip, owner)
	}
	had, err := m.takeRecord(ctx, pool, ip)
	if err != nil {
		return false, err
	}
	// An endpoint may have taken the address over meanwhile (it writes
	// its record before it takes the allocAddress record): it owns it.
	holder, err := m.endpointHolding(ctx, netID, ip)
	if err == nil && holder != "" {
		err = ownedBy(ip, "held by endpoint "+holder)
	}
	if err != nil {
		if had {
			if perr := m.putRecordBack(pool, ip, []byte(netID)); perr != nil {
				err = errors.Join(err, perr)
			}
		}
		return false, err
	}
	if ip.Is6() {
		return m.v6.Release(ctx, netID, ip)
	}
	return m.v4.Release(ctx, pool, ip)
}
