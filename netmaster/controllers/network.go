package controllers

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/netmaster/apierr"
	"github.com/contiv/netplugin/netmaster/endpoints"
	"github.com/contiv/netplugin/netmaster/ipam"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/state"
)

// networkCtl is the network controller (docs/rest-api.md §2.4, docs/daemons.md
// §4.7). A refused create leaves nothing behind: every side effect is
// undone when a later step (or the model commit) fails.
type networkCtl struct{ m *Objects }

func modelKey(tenant, name string) string { return tenant + ":" + name }

func sortedKeys(s contivmodel.LinkSet) []string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// v4Span is the inclusive address span of a network's subnet for the
// overlap check ("a-b/len" → a…b, else the whole CIDR).
func v4Span(subnet string) (lo, hi uint32, ok bool) {
	addrPart, lenPart, found := strings.Cut(subnet, "/")
	if !found {
		return 0, 0, false
	}
	plen, err := strconv.Atoi(lenPart)
	if err != nil || plen < 0 || plen > 32 {
		return 0, 0, false
	}
	first, last, isRange := strings.Cut(addrPart, "-")
	a, err := netip.ParseAddr(first)
	if err != nil || !a.Is4() {
		return 0, 0, false
	}
	if isRange {
		b, err := netip.ParseAddr(last)
		if err != nil || !b.Is4() {
			return 0, 0, false
		}
		return ip4u(a), ip4u(b), true
	}
	mask := ^uint32(0)
	if plen < 32 {
		mask = ^(^uint32(0) >> plen)
	}
	if plen == 0 {
		mask = 0
	}
	base := ip4u(a) & mask
	return base, base | ^mask, true
}

func ip4u(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func v6Overlap(a, b string) bool {
	pa, err1 := netip.ParsePrefix(a)
	pb, err2 := netip.ParsePrefix(b)
	if err1 != nil || err2 != nil {
		return false
	}
	return pa.Masked().Overlaps(pb.Masked())
}

// Create runs the network create pipeline in the spec's order: the
// refusals (checkNetwork, networkState) before the first side effect,
// then the tags, the pools, the state, the Docker network and the link,
// each undone when the transaction aborts.
func (c networkCtl) Create(ctx context.Context, tx *contivmodel.Tx, nw *contivmodel.Network) error {
	m := c.m
	g, err := globalReady(tx, nw.Encap)
	if err != nil {
		return err
	}
	if err := checkNetwork(tx, nw); err != nil {
		return err
	}
	ns, v6, err := c.networkState(ctx, nw)
	if err != nil {
		return err
	}

	// Side effects from here on, each undone on failure.
	if err := c.allocTags(ctx, tx, g, nw, &ns); err != nil {
		return err
	}
	if err := c.createPools(ctx, tx, nw, ns.ID, v6); err != nil {
		return err
	}
	undo, err := m.eps.Snapshot(ctx, m.st.Networks.Key(ns.ID))
	if err != nil {
		return err
	}
	tx.OnAbort(undo)
	m.eps.ForgetNetwork(ns.ID)
	if _, err := m.st.Networks.Write(ctx, ns); err != nil {
		return fmt.Errorf("write network state %q: %w", ns.ID, err)
	}
	if m.dockerMode() && ns.NwType != "infra" && !isACI(tx) {
		if err := m.createDocknet(ctx, tx, ns, ""); err != nil {
			return err
		}
	}
	nw.Links.Tenant = contivmodel.NewLink(contivmodel.TypeTenant, nw.TenantName)
	return contivmodel.Modify(tx, nw.TenantName, func(t *contivmodel.Tenant) error {
		t.LinkSets.Networks.Add(contivmodel.NewLink(contivmodel.TypeNetwork, nw.Key))
		return nil
	})
}

// checkNetwork runs the create refusals on the model: the tenant, subnet
// overlaps with the tenant's other networks, a group of the same name.
func checkNetwork(tx *contivmodel.Tx, nw *contivmodel.Network) error {
	if nw.TenantName == "" {
		return contivmodel.Invalidf("Invalid tenant name")
	}
	if ok, err := contivmodel.Exists[contivmodel.Tenant](tx, nw.TenantName); err != nil {
		return err
	} else if !ok {
		return contivmodel.Missingf("Tenant %s not found", nw.TenantName)
	}
	nets, err := contivmodel.List[contivmodel.Network](tx)
	if err != nil {
		return err
	}
	lo, hi, okSpan := v4Span(nw.Subnet)
	for _, other := range nets {
		if other.TenantName != nw.TenantName {
			continue
		}
		if nw.Ipv6Subnet != "" && other.Ipv6Subnet != "" && v6Overlap(nw.Ipv6Subnet, other.Ipv6Subnet) {
			return contivmodel.Errorf("network %s conflicts with subnetv6  %s", other.NetworkName, nw.Ipv6Subnet)
		}
		if olo, ohi, ok := v4Span(other.Subnet); ok && okSpan && lo <= ohi && olo <= hi {
			return contivmodel.Errorf("network %s conflicts with subnet %s", other.NetworkName, nw.Subnet)
		}
	}
	if ok, err := contivmodel.Exists[contivmodel.EndpointGroup](tx, nw.Key); err != nil {
		return err
	} else if ok {
		return contivmodel.Errorf("EndpointGroup %s conflicts with the network name", nw.NetworkName)
	}
	return nil
}

// networkState parses the subnets, checks the gateways and composes the
// network's state; a state left without a model object is refused.
func (c networkCtl) networkState(ctx context.Context, nw *contivmodel.Network) (state.Network, netip.Prefix, error) {
	sn, err := ipam.ParseSubnet(nw.Subnet)
	if err != nil {
		return state.Network{}, netip.Prefix{}, err
	}
	var v6 netip.Prefix
	if nw.Ipv6Subnet != "" {
		if v6, err = ipam.ParseSubnetV6(nw.Ipv6Subnet); err != nil {
			return state.Network{}, netip.Prefix{}, err
		}
	}
	if err := checkGateways(nw, sn, v6); err != nil {
		return state.Network{}, netip.Prefix{}, err
	}
	netID := state.NetworkID(nw.TenantName, nw.NetworkName)
	ns := state.Network{
		Common: state.Common{ID: netID}, Tenant: nw.TenantName, NetworkName: nw.NetworkName,
		NwType: nw.NwType, PktTagType: nw.Encap, SubnetIP: sn.Base.String(), SubnetLen: uint(sn.Len),
		Gateway: nw.Gateway, IPAddrRange: sn.Range(), NetworkTag: nw.CfgdTag,
		IPv6Gateway: nw.Ipv6Gateway,
	}
	if ns.NetworkTag == "" {
		ns.NetworkTag = netID
	}
	if v6.IsValid() {
		ns.IPv6Subnet, ns.IPv6SubnetLen = v6.Addr().String(), uint(v6.Bits())
	}
	if _, err := c.m.st.Networks.Read(ctx, netID); err == nil {
		return ns, v6, fmt.Errorf("create network %q: state %q exists without a model object", nw.Key, netID)
	} else if !errors.Is(err, objdb.ErrNotFound) {
		return ns, v6, fmt.Errorf("read network state %q: %w", netID, err)
	}
	return ns, v6, nil
}

// createPools creates the network's IPv4 pool and, with an IPv6 subnet,
// its IPv6 pool; both are deleted when tx aborts.
func (c networkCtl) createPools(ctx context.Context, tx *contivmodel.Tx, nw *contivmodel.Network, netID string, v6 netip.Prefix) error {
	m := c.m
	var popts []ipam.PoolOption
	if nw.Gateway != "" {
		popts = append(popts, ipam.WithGateway(nw.Gateway))
	}
	tx.OnAbort(func() {
		ctx, cancel := endpoints.UndoContext()
		defer cancel()
		if err := m.v4.DeletePool(ctx, netID); err != nil {
			m.log.WithError(err).Error("roll back ipv4 pool")
		}
		if err := m.v6.DeletePool(ctx, netID); err != nil {
			m.log.WithError(err).Error("roll back ipv6 pool")
		}
	})
	if _, err := m.v4.CreatePool(ctx, netID, nw.Subnet, popts...); err != nil {
		return err
	}
	if v6.IsValid() {
		var o6 []ipam.PoolOption
		if nw.Ipv6Gateway != "" {
			o6 = append(o6, ipam.WithGateway(nw.Ipv6Gateway))
		}
		if _, err := m.v6.CreatePool(ctx, netID, nw.Ipv6Subnet, o6...); err != nil {
			return err
		}
	}
	return nil
}

// allocTags takes the network's VLAN, or VNI plus host-local VLAN.
func (c networkCtl) allocTags(ctx context.Context, tx *contivmodel.Tx, _ *contivmodel.Global, nw *contivmodel.Network, ns *state.Network) error {
	m := c.m
	req := uint(0)
	if nw.PktTag > 0 {
		req = uint(nw.PktTag)
	}
	switch nw.Encap {
	case "vlan":
		vlan, err := m.res.AllocateVLAN(ctx, req)
		if err != nil {
			return err
		}
		m.undoOnAbort(tx, "vlan", func(ctx context.Context) error { return m.res.FreeVLAN(ctx, vlan) })
		ns.PktTag = int(vlan)
	case "vxlan":
		vni, local, err := m.res.AllocateVXLAN(ctx, req)
		if err != nil {
			return err
		}
		m.undoOnAbort(tx, "vxlan", func(ctx context.Context) error { return m.res.FreeVXLAN(ctx, vni, local) })
		ns.PktTag, ns.ExtPktTag = int(local), int(vni)
	default:
		return contivmodel.Invalidf("invalid encap %s", nw.Encap)
	}
	return nil
}

// Update is always refused.
func (networkCtl) Update(context.Context, *contivmodel.Tx, *contivmodel.Network, *contivmodel.Network) error {
	return contivmodel.Errorf("Cant change network parameters after its created")
}

// Delete refuses in the spec's order, then frees tags, pools and state.
func (c networkCtl) Delete(ctx context.Context, tx *contivmodel.Tx, nw *contivmodel.Network) error {
	m := c.m
	if ok, err := contivmodel.Exists[contivmodel.Tenant](tx, nw.TenantName); err != nil {
		return err
	} else if !ok {
		return contivmodel.Missingf("Tenant %s not found", nw.TenantName)
	}
	if n := len(nw.LinkSets.EndpointGroups); n > 0 {
		return contivmodel.Errorf("cannot delete %s has %d endpoint groups", nw.NetworkName, n)
	}
	if n := len(nw.LinkSets.Servicelbs); n > 0 {
		return contivmodel.Errorf("cannot delete %s has %d services ", nw.NetworkName, n)
	}
	if err := m.refuseSwarmDelete(ctx, "network", nw.NetworkName, nw.TenantName, nw.NetworkName, ""); err != nil {
		return err
	}
	netID := state.NetworkID(nw.TenantName, nw.NetworkName)
	m.eps.LockTopology()
	defer m.eps.UnlockTopology()
	ns, err := m.st.Networks.Read(ctx, netID)
	if err != nil {
		return apierr.Store("read network state "+netID, err)
	}
	if ns.NwType != "infra" && ns.EpCount > 0 {
		return contivmodel.Errorf("Error: Network has active endpoints")
	}
	if m.dockerMode() && ns.NwType != "infra" && !isACI(tx) {
		if err := m.deleteDocknet(ctx, tx, nw.TenantName, nw.NetworkName, ""); err != nil {
			return err
		}
	}
	undo, err := m.eps.Snapshot(ctx, m.st.Networks.Key(netID))
	if err != nil {
		return err
	}
	tx.OnAbort(undo)
	m.eps.ForgetNetwork(netID)
	tx.OnAbort(func() { m.eps.ForgetNetwork(netID) })
	if err := m.st.Networks.Clear(ctx, netID); err != nil {
		return fmt.Errorf("delete network state %q: %w", netID, err)
	}
	switch ns.PktTagType {
	case "vlan":
		if err := m.res.FreeVLAN(ctx, uint(ns.PktTag)); err != nil {
			return fmt.Errorf("free vlan %d: %w", ns.PktTag, err)
		}
		tx.OnAbort(func() {
			ctx, cancel := endpoints.UndoContext()
			defer cancel()
			if _, err := m.res.AllocateVLAN(ctx, uint(ns.PktTag)); err != nil {
				m.log.WithError(err).Error("roll back vlan free")
			}
		})
	case "vxlan":
		if err := m.res.FreeVXLAN(ctx, uint(ns.ExtPktTag), uint(ns.PktTag)); err != nil {
			return fmt.Errorf("free vxlan %d: %w", ns.ExtPktTag, err)
		}
		// A VNI cannot be re-taken together with a given local VLAN, so a
		// failed model commit after this point leaves the tags free; the
		// pools are deleted last for the same reason.
	}
	if err := m.v4.DeletePool(ctx, netID); err != nil {
		return fmt.Errorf("delete ipv4 pool of %q: %w", netID, err)
	}
	if err := m.v6.DeletePool(ctx, netID); err != nil {
		return fmt.Errorf("delete ipv6 pool of %q: %w", netID, err)
	}
	return contivmodel.Modify(tx, nw.TenantName, func(t *contivmodel.Tenant) error {
		t.LinkSets.Networks.Remove(nw.Key)
		return nil
	})
}

// Oper reports the network's tags, counters, addresses and endpoints.
func (c networkCtl) Oper(ctx context.Context, _ *contivmodel.Tx, nw *contivmodel.Network) (any, error) {
	eps, err := c.m.eps.AllEndpoints(ctx)
	if err != nil {
		return nil, err
	}
	return c.m.networkOper(ctx, nw, eps, true)
}

func (m *Objects) networkOper(ctx context.Context, nw *contivmodel.Network, eps []state.Endpoint, withTag bool) (*contivmodel.NetworkOper, error) {
	netID := state.NetworkID(nw.TenantName, nw.NetworkName)
	ns, err := m.st.Networks.Read(ctx, netID)
	if err != nil {
		return nil, apierr.Store("read network state "+netID, err)
	}
	op := &contivmodel.NetworkOper{
		PktTag:                  ns.PktTag,
		ExternalPktTag:          ns.ExtPktTag,
		NumEndpoints:            ns.EpCount,
		AllocatedAddressesCount: ns.EpAddrCount,
	}
	if withTag {
		op.NetworkTag = ns.NetworkTag
	}
	if op.AllocatedIPAddresses, op.AvailableIPAddresses, err = m.poolLists(ctx, netID); err != nil {
		return nil, err
	}
	op.Endpoints = endpoints.Opers(eps, func(ep state.Endpoint) bool { return ep.NetID == netID })
	return op, nil
}

func (m *Objects) poolLists(ctx context.Context, poolID string) (used, free string, err error) {
	if used, err = m.v4.InUse(ctx, poolID); err != nil {
		return "", "", apierr.Store("list addresses in use", err)
	}
	if free, err = m.v4.Available(ctx, poolID); err != nil {
		return "", "", apierr.Store("list available addresses", err)
	}
	return used, free, nil
}
