package endpoints

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/contiv/netplugin/api/pluginapi"
	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/netmaster/apierr"
	"github.com/contiv/netplugin/netmaster/endpoints/reclaim"
	"github.com/contiv/netplugin/netmaster/ipam"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/state"
	"github.com/contiv/netplugin/utils/daemonflags"
)

// allocAddress hands out an IPv4 (or, for an IPv6 AddressPool, IPv6)
// address of a network or group pool and records it under ipallocPrefix,
// so that releaseAddress and the sweep know allocAddress owns it
// (docs/rest-api.md §3.1). Steps: resolve the network (parseNetworkID, or
// parseAddressPool and findNetworkByPool), allocate (allocV6 or poolOf and
// allocV4), write the record, count the address (bumpNetwork); a failing
// step gives back what the earlier ones took (releaseV6, releaseV4,
// forgetRecord).
func (m *Service) allocAddress(ctx context.Context, req *pluginapi.AddressAllocRequest) (pluginapi.AddressAllocResponse, error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	resp := pluginapi.AddressAllocResponse{NetworkID: req.NetworkID}
	if err := checkAllocAddress(req); err != nil {
		return resp, err
	}
	m.topo.RLock()
	defer m.topo.RUnlock()
	ref := parseNetworkID(req.NetworkID)
	v6 := false
	if req.NetworkID == "" {
		pfx, tenant, ok := parseAddressPool(req.AddressPool)
		if !ok {
			return resp, contivmodel.Invalidf("AddressPool %q is not a subnet", req.AddressPool)
		}
		v6 = pfx.Addr().Is6()
		id, err := m.findNetworkByPool(ctx, pfx, tenant)
		if err != nil {
			return resp, err
		}
		if id == "" {
			if m.cfg.ClusterMode == daemonflags.ModeSwarm {
				resp.IPv4Address = fmt.Sprintf("%s/%d", pfx.Addr().Next(), pfx.Bits())
				return resp, nil
			}
			return resp, contivmodel.Missingf("AddressPool %s: no network has subnet %s", req.AddressPool, pfx)
		}
		ref.netID = id
	}
	ns, err := m.netState(ctx, ref.netID)
	if err != nil {
		return resp, apierr.Store("read network state "+ref.netID, err)
	}
	if v6 {
		a, err := m.allocV6(ctx, ref.netID, req.PreferredIPv4Address)
		if err != nil {
			return resp, err
		}
		if _, err := m.kv.Put(ctx, ipallocKey(ref.netID, a), []byte(ref.netID)); err != nil {
			m.releaseV6(ref.netID, a)
			return resp, fmt.Errorf("record address %s: %w", a, err)
		}
		resp.IPv4Address = fmt.Sprintf("%s/%d", a, ns.IPv6SubnetLen)
		return resp, nil
	}
	pool, err := m.poolOf(ctx, ref)
	if err != nil {
		return resp, err
	}
	a, err := m.allocV4(ctx, &ns, pool, req.PreferredIPv4Address)
	if err != nil {
		return resp, err
	}
	if _, err := objdb.PutResolved(ctx, m.kv, ipallocKey(pool, a), []byte(ref.netID)); err != nil {
		if !errors.Is(err, objdb.ErrUncertain) {
			// Never an address a record may still name
			// (docs/allocation-integrity.md): released only when the
			// record surely does not exist.
			m.releaseV4(ref.netID, pool, a)
		}
		return resp, fmt.Errorf("record address %s: %w", a, err)
	}
	if err := m.bumpNetwork(ctx, ref.netID, 0, 1); err != nil {
		m.needRepair(err)
		if derr := m.forgetRecord(pool, a); derr != nil {
			// The record stays: so does its address.
			return resp, errors.Join(err, derr)
		}
		m.releaseV4(ref.netID, pool, a)
		return resp, err
	}
	resp.IPv4Address = fmt.Sprintf("%s/%d", a, ns.SubnetLen)
	return resp, nil
}

// netRef is a resolved NetworkID.
type netRef struct {
	netID string // "<net>.<tenant>"
	epgID string // "<group>:<tenant>" or ""
}

// parseNetworkID reads "<net>.<tenant>" or "<net>:<group>.<tenant>"; a
// Docker pool suffix "|…" is dropped (docs/daemons.md §5.4.2).
func parseNetworkID(s string) netRef {
	s, _, _ = strings.Cut(s, "|")
	net, rest, hasGroup := strings.Cut(s, ":")
	if !hasGroup {
		return netRef{netID: s}
	}
	group, tenant, _ := strings.Cut(rest, ".")
	return netRef{netID: net + "." + tenant, epgID: group + ":" + tenant}
}

// parseAddressPool reads "<subnet>/<len>[:<tenant>]".
func parseAddressPool(s string) (netip.Prefix, string, bool) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), "", true
	}
	i := strings.LastIndex(s, ":")
	if i < 0 {
		return netip.Prefix{}, "", false
	}
	p, err := netip.ParsePrefix(s[:i])
	if err != nil {
		return netip.Prefix{}, "", false
	}
	return p.Masked(), s[i+1:], true
}

// findNetworkByPool returns the network (of tenant, if given) whose subnet
// is pfx, or "".
func (m *Service) findNetworkByPool(ctx context.Context, pfx netip.Prefix, tenant string) (string, error) {
	nets, _, err := m.st.Networks.ReadAll(ctx)
	if err != nil {
		return "", fmt.Errorf("read networks: %w", err)
	}
	found := ""
	for _, n := range nets {
		if tenant != "" && n.Tenant != tenant {
			continue
		}
		if pfx.Addr().Is4() && n.SubnetIP == pfx.Addr().String() && int(n.SubnetLen) == pfx.Bits() {
			found = n.ID
		}
		if pfx.Addr().Is6() && n.IPv6Subnet != "" && int(n.IPv6SubnetLen) == pfx.Bits() {
			if a, err := netip.ParseAddr(n.IPv6Subnet); err == nil && a == pfx.Addr() {
				found = n.ID
			}
		}
	}
	return found, nil
}

// allocV6 takes the preferred IPv6 address (refused when in use) or the
// lowest free one of netID.
func (m *Service) allocV6(ctx context.Context, netID, preferred string) (netip.Addr, error) {
	if preferred == "" {
		a, err := m.v6.Allocate(ctx, netID)
		return a, err
	}
	ip, err := netip.ParseAddr(preferred)
	if err != nil || !ip.Is6() {
		return netip.Addr{}, contivmodel.Invalidf("invalid ipv6 address %s", preferred)
	}
	a, err := m.v6.AllocateSpecific(ctx, netID, ip)
	return a, err
}

// releaseV6 gives an IPv6 address back during a rollback.
func (m *Service) releaseV6(netID string, a netip.Addr) {
	ctx, cancel := UndoContext()
	defer cancel()
	if _, err := m.v6.Release(ctx, netID, a); err != nil {
		m.log.WithError(err).WithField("network", netID).Error("roll back ipv6 address")
	}
}

// poolOf returns the IPv4 pool addresses of (network, group) come from.
func (m *Service) poolOf(ctx context.Context, ref netRef) (string, error) {
	if ref.epgID == "" {
		return ref.netID, nil
	}
	gs, err := m.epgState(ctx, ref.epgID)
	if err != nil {
		return "", apierr.Store("read group state "+ref.epgID, err)
	}
	if gs.IPPool != "" {
		return ref.epgID, nil
	}
	return ref.netID, nil
}

// allocV4 takes the preferred address (refused when in use) or the lowest
// free one of pool.
func (m *Service) allocV4(ctx context.Context, ns *state.Network, pool, preferred string) (netip.Addr, error) {
	if preferred == "" {
		a, err := m.v4.Allocate(ctx, pool)
		if err != nil {
			return a, err
		}
		return a, nil
	}
	sn, err := ipam.ParseSubnet(fmt.Sprintf("%s/%d", ns.SubnetIP, ns.SubnetLen))
	if err != nil {
		return netip.Addr{}, err
	}
	ip, err := sn.CheckHost(preferred)
	if err != nil {
		return netip.Addr{}, err
	}
	a, err := m.v4.AllocateSpecific(ctx, pool, ip)
	if err != nil {
		return a, err
	}
	return a, nil
}

// releaseV4 gives an address back during a rollback.
func (m *Service) releaseV4(netID, pool string, a netip.Addr) {
	ctx, cancel := UndoContext()
	defer cancel()
	if _, err := m.v4.Release(ctx, pool, a); err != nil {
		m.log.WithError(err).WithField("network", netID).Error("roll back address")
	}
}

// forgetRecord removes the allocAddress record of a during a rollback.
func (m *Service) forgetRecord(pool string, a netip.Addr) error {
	ctx, cancel := UndoContext()
	defer cancel()
	if err := m.kv.Delete(ctx, ipallocKey(pool, a)); err != nil {
		m.log.WithError(err).WithField("pool", pool).Error("roll back address record")
		return fmt.Errorf("remove address record %s: %w", a, err)
	}
	return nil
}

// ipallocKey is the address record of ip in pool (reclaim.IPAllocKey).
func ipallocKey(pool string, ip netip.Addr) string { return reclaim.IPAllocKey(pool, ip) }
