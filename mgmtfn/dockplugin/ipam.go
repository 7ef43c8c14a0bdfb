package dockplugin

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/contiv/netplugin/state"
)

// Option keys of the IPAM requests (docs/docker.md).
const (
	optTenant      = "tenant"
	optNetwork     = "network"
	optGroup       = "group"
	optTag         = "contiv-tag"
	optAddressType = "RequestAddressType"
	gatewayType    = "com.docker.network.gateway"
)

// requestPool names the pool of a contiv network (or group) so that later
// address requests reach netmaster: "<net>.<tenant>|<cidr>" or
// "<net>:<group>.<tenant>|<cidr>". The network comes from the contiv-tag
// option, else from the tenant/network/group options; without either the
// pool is served for an unnamed network ("<cidr>", netmaster finds the
// network by its subnet).
func (p *Plugin) requestPool(ctx context.Context, req *RequestPoolRequest) (RequestPoolResponse, error) {
	var n contivNames
	switch {
	case req.Options[optTag] != "":
		var err error
		if n, err = p.byTag(ctx, req.Options[optTag]); err != nil {
			return RequestPoolResponse{}, err
		}
	case req.Options[optNetwork] != "":
		n = contivNames{Tenant: req.Options[optTenant], Network: req.Options[optNetwork], Group: req.Options[optGroup]}
		if n.Tenant == "" {
			n.Tenant = "default"
		}
	default:
		if req.Pool == "" {
			return RequestPoolResponse{}, fmt.Errorf("%w: no \"Pool\" and no contiv network named (options %q, %q or %q)",
				ErrBadRequest, optNetwork, optTenant, optTag)
		}
		return RequestPoolResponse{PoolID: req.Pool, Pool: req.Pool, Data: map[string]string{}}, nil
	}
	nw, err := p.cfg.Backend.Network(ctx, n.networkID())
	if err != nil {
		return RequestPoolResponse{}, fmt.Errorf("contiv network %s: %w", n.networkID(), err)
	}
	// A group's docker network is created before netmaster records the
	// group, so only its network can be checked here; CreateEndpoint
	// checks the group.
	subnet := fmt.Sprintf("%s/%d", nw.SubnetIP, nw.SubnetLen)
	if req.V6 {
		if nw.IPv6Subnet == "" {
			return RequestPoolResponse{}, fmt.Errorf("%w: contiv network %s has no IPv6 subnet", ErrBadRequest, n.networkID())
		}
		subnet = fmt.Sprintf("%s/%d", nw.IPv6Subnet, nw.IPv6SubnetLen)
	}
	sp, err := netip.ParsePrefix(subnet)
	if err != nil {
		return RequestPoolResponse{}, fmt.Errorf("contiv network %s: subnet %q in its state: %w", n.networkID(), subnet, err)
	}
	want := sp.Masked()
	if req.pool.IsValid() && req.pool.Masked() != want {
		return RequestPoolResponse{}, fmt.Errorf("%w: pool %s is not the subnet %s of contiv network %s", ErrBadRequest, req.Pool, want, n.networkID())
	}
	id := n.Network + "." + n.Tenant
	if n.Group != "" {
		id = n.Network + ":" + n.Group + "." + n.Tenant
	}
	return RequestPoolResponse{PoolID: id + "|" + want.String(), Pool: want.String(), Data: map[string]string{}}, nil
}

// byTag finds the group whose tag is tag, else the network.
func (p *Plugin) byTag(ctx context.Context, tag string) (contivNames, error) {
	groups, err := p.cfg.Backend.Groups(ctx)
	if err != nil {
		return contivNames{}, fmt.Errorf("read groups: %w", err)
	}
	for _, g := range groups {
		if g.GroupTag == tag {
			return contivNames{Tenant: g.TenantName, Network: g.NetworkName, Group: g.GroupName}, nil
		}
	}
	nets, err := p.cfg.Backend.Networks(ctx)
	if err != nil {
		return contivNames{}, fmt.Errorf("read networks: %w", err)
	}
	for _, n := range nets {
		if n.NetworkTag == tag {
			return contivNames{Tenant: n.Tenant, Network: n.NetworkName}, nil
		}
	}
	return contivNames{}, fmt.Errorf("no contiv group or network has tag %q: %w", tag, ErrNotFound)
}

func (p *Plugin) releasePool(context.Context, *PoolRequest) (empty, error) { return empty{}, nil }

// requestAddress hands out an address through netmaster, the requested
// one (docker run --ip) or the lowest free one; the gateway's is answered
// as given, without netmaster, and so is a requested address in swarm
// mode (the manager allocated it before the node asks).
func (p *Plugin) requestAddress(ctx context.Context, req *RequestAddressRequest) (RequestAddressResponse, error) {
	id := req.pool
	bits := id.pool.Bits()
	if req.Options[optAddressType] == gatewayType {
		if req.Address == "" {
			return RequestAddressResponse{Address: id.pool.String(), Data: map[string]string{}}, nil
		}
		return RequestAddressResponse{Address: fmt.Sprintf("%s/%d", req.Address, bits), Data: map[string]string{}}, nil
	}
	if req.addr.IsValid() && !id.pool.Contains(req.addr) {
		return RequestAddressResponse{}, fmt.Errorf("%w: address %s is not in pool %s", ErrBadRequest, req.addr, id.pool)
	}
	if req.Address != "" && p.cfg.SwarmMode {
		// The swarm manager allocated this address already (through this
		// driver); the node asks for it again when it attaches.
		return RequestAddressResponse{Address: fmt.Sprintf("%s/%d", req.Address, bits), Data: map[string]string{}}, nil
	}
	netID, pool := id.networkID, id.pool.String()
	if id.pool.Addr().Is6() {
		// netmaster picks the IPv6 pool by the pool itself.
		tenant, _, _ := splitNetworkID(id.networkID)
		netID, pool = "", pool+":"+tenant
		if id.networkID == "" {
			pool = id.pool.String()
		}
	}
	addr, err := p.cfg.Backend.AllocAddress(ctx, netID, pool, req.Address)
	if err != nil {
		return RequestAddressResponse{}, fmt.Errorf("allocate an address of pool %s: %w", req.PoolID, err)
	}
	a, err := netip.ParsePrefix(addr)
	if err != nil {
		return RequestAddressResponse{}, fmt.Errorf("netmaster answered address %q: %w", addr, err)
	}
	return RequestAddressResponse{Address: fmt.Sprintf("%s/%d", a.Addr(), bits), Data: map[string]string{}}, nil
}

// releaseAddress gives back an address requestAddress handed out. Not
// passed on: the gateway, an address netmaster freed with its endpoint
// (deleteEndpoint), and any address of a network that no longer exists. A
// bare pool id ("<cidr>", swarm) is mapped to the network of that subnet.
func (p *Plugin) releaseAddress(ctx context.Context, req *ReleaseAddressRequest) (empty, error) {
	id, a := req.pool, req.addr
	if a == id.pool.Masked().Addr() {
		// The stand-in gateway of a network without one (requestAddress
		// answers the pool itself): netmaster never handed it out. The
		// engine releases it while netmaster deletes the network, so
		// asking netmaster would only wait for it.
		return empty{}, nil
	}
	netID, target := "", req.PoolID
	if id.networkID != "" {
		_, netID, _ = splitNetworkID(id.networkID)
	} else {
		var err error
		if netID, err = p.networkByPool(ctx, id.pool); err != nil {
			return empty{}, err
		}
		if netID == "" {
			return empty{}, nil
		}
		target = netID
	}
	key := releasedKey(netID, a)
	p.mu.Lock()
	_, freed := p.released[key]
	delete(p.released, key)
	p.mu.Unlock()
	if freed {
		return empty{}, nil
	}
	nw, err := p.cfg.Backend.Network(ctx, netID)
	if errors.Is(err, ErrNotFound) {
		return empty{}, nil
	}
	if err != nil {
		return empty{}, fmt.Errorf("contiv network %s: %w", netID, err)
	}
	if isGateway(nw, a) {
		return empty{}, nil
	}
	if err := p.cfg.Backend.ReleaseAddress(ctx, target, req.Address); err != nil {
		return empty{}, fmt.Errorf("release address %s of pool %s: %w", req.Address, req.PoolID, err)
	}
	return empty{}, nil
}

// networkByPool is the id of the contiv network whose subnet is pool, or "".
func (p *Plugin) networkByPool(ctx context.Context, pool netip.Prefix) (string, error) {
	nets, err := p.cfg.Backend.Networks(ctx)
	if err != nil {
		return "", fmt.Errorf("read networks: %w", err)
	}
	for _, n := range nets {
		sn := fmt.Sprintf("%s/%d", n.SubnetIP, n.SubnetLen)
		if pool.Addr().Is6() {
			sn = fmt.Sprintf("%s/%d", n.IPv6Subnet, n.IPv6SubnetLen)
		}
		if q, err := netip.ParsePrefix(sn); err == nil && q.Masked() == pool.Masked() {
			return n.NetworkName + "." + n.Tenant, nil
		}
	}
	return "", nil
}

func isGateway(nw state.Network, a netip.Addr) bool {
	return a.String() == nw.Gateway || (nw.IPv6Gateway != "" && a.String() == strings.ToLower(nw.IPv6Gateway))
}

// allocateNetwork (swarm, once for the cluster) maps a docker network to
// contiv names: the group or network tagged with option contiv-tag, else a
// new contiv network "<dockerID>" of tenant default with the engine's
// IPv4 (and IPv6) pool (docs/docker.md); the mapping is recorded.
func (p *Plugin) allocateNetwork(ctx context.Context, req *AllocateNetworkRequest) (AllocateNetworkResponse, error) {
	var n contivNames
	switch {
	case req.Options[optTag] != "":
		var err error
		if n, err = p.byTag(ctx, req.Options[optTag]); err != nil {
			return AllocateNetworkResponse{}, err
		}
	case len(req.IPv4Data) > 0 && req.IPv4Data[0].Pool != "":
		spec := SwarmNetwork{Tenant: "default", Name: req.NetworkID, Subnet: req.IPv4Data[0].Pool,
			Gateway: stripLen(req.IPv4Data[0].Gateway)}
		if _, err := netip.ParsePrefix(spec.Subnet); err != nil {
			return AllocateNetworkResponse{}, fmt.Errorf("%w: IPv4 pool %q: %w", ErrBadRequest, spec.Subnet, err)
		}
		if len(req.IPv6Data) > 0 {
			spec.IPv6Subnet, spec.IPv6Gateway = req.IPv6Data[0].Pool, stripLen(req.IPv6Data[0].Gateway)
		}
		if err := p.cfg.Backend.CreateNetwork(ctx, spec); err != nil {
			return AllocateNetworkResponse{}, fmt.Errorf("create contiv network for docker network %s: %w", req.NetworkID, err)
		}
		n = contivNames{Tenant: spec.Tenant, Network: spec.Name}
	default:
		return AllocateNetworkResponse{}, fmt.Errorf("%w: docker network %s has no option %q and no IPv4 pool", ErrBadRequest, req.NetworkID, optTag)
	}
	if err := p.cfg.Backend.MapNetwork(ctx, req.NetworkID, n.Tenant, n.Network, n.Group); err != nil {
		return AllocateNetworkResponse{}, fmt.Errorf("map docker network %s: %w", req.NetworkID, err)
	}
	p.mu.Lock()
	p.names[req.NetworkID] = n
	p.mu.Unlock()
	return AllocateNetworkResponse{Options: req.Options}, nil
}

// freeNetwork drops the mapping of a docker network and the contiv
// network allocateNetwork made for it, if any.
func (p *Plugin) freeNetwork(ctx context.Context, req *NetworkRequest) (empty, error) {
	if err := p.cfg.Backend.UnmapNetwork(ctx, req.NetworkID); err != nil && !errors.Is(err, ErrNotFound) {
		return empty{}, fmt.Errorf("unmap docker network %s: %w", req.NetworkID, err)
	}
	p.mu.Lock()
	delete(p.names, req.NetworkID)
	p.mu.Unlock()
	if _, err := p.cfg.Backend.Network(ctx, req.NetworkID+".default"); err == nil {
		if err := p.cfg.Backend.DeleteNetwork(ctx, "default", req.NetworkID); err != nil {
			return empty{}, fmt.Errorf("delete contiv network %s: %w", req.NetworkID, err)
		}
	} else if !errors.Is(err, ErrNotFound) {
		return empty{}, err
	}
	return empty{}, nil
}

// stripLen drops a "/len" suffix.
func stripLen(s string) string {
	a, _, _ := strings.Cut(s, "/")
	return a
}
