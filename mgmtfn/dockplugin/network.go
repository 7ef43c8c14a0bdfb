package dockplugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/contiv/netplugin/api/attach"
	"github.com/contiv/netplugin/api/dockernets"
	"github.com/contiv/netplugin/state"
)

// createNetwork has nothing to do: the contiv network exists already
// (the docker network was made for it, see docs/docker.md).
func (p *Plugin) createNetwork(_ context.Context, req *CreateNetworkRequest) (empty, error) {
	p.log.WithField("network", req.NetworkID).Info("docker network created")
	return empty{}, nil
}

// deleteNetwork forgets the network's names.
func (p *Plugin) deleteNetwork(_ context.Context, req *NetworkRequest) (empty, error) {
	p.mu.Lock()
	delete(p.names, req.NetworkID)
	p.mu.Unlock()
	p.log.WithField("network", req.NetworkID).Info("docker network deleted")
	return empty{}, nil
}

func (p *Plugin) nothing(context.Context, *EndpointRequest) (empty, error) { return empty{}, nil }

func (p *Plugin) discover(context.Context, *DiscoveryNotification) (empty, error) {
	return empty{}, nil
}

func (p *Plugin) endpointOperInfo(context.Context, *EndpointRequest) (EndpointInfoResponse, error) {
	return EndpointInfoResponse{Value: map[string]any{}}, nil
}

// createEndpoint creates the contiv endpoint with the address the engine
// got from the IPAM driver, and its OVS port; the MAC is contiv's.
func (p *Plugin) createEndpoint(ctx context.Context, req *CreateEndpointRequest) (CreateEndpointResponse, error) {
	n, err := p.resolve(ctx, req.NetworkID)
	if err != nil {
		return CreateEndpointResponse{}, err
	}
	hr := attach.HostRequest{Tenant: n.Tenant, Network: n.Network, Group: n.Group, ContainerID: req.EndpointID}
	if req.addr4.IsValid() {
		hr.IPAddress = req.addr4.String()
	}
	if req.addr6.IsValid() {
		hr.IPv6Address = req.addr6.String()
	}
	if req.Interface.MacAddress != "" {
		// contiv derives the MAC from the IPv4 address (state.EndpointMAC);
		// another one would not match the endpoint's flows.
		want := state.EndpointMAC(req.addr4).String()
		if mac, _ := parseMAC(req.Interface.MacAddress); mac.String() != want {
			return CreateEndpointResponse{}, fmt.Errorf("%w: member \"Interface.MacAddress\": %s given, but contiv's endpoints use the MAC derived from their address (%s)",
				ErrBadRequest, req.Interface.MacAddress, orNone(want))
		}
	}
	res, err := p.cfg.Backend.AttachHost(ctx, hr)
	if err != nil {
		return CreateEndpointResponse{}, fmt.Errorf("endpoint %s on network %s: %w", req.EndpointID, n.networkID(), err)
	}
	out := &EndpointInterface{}
	if req.Interface.Address == "" {
		out.Address = res.IPAddress
	}
	if req.Interface.AddressIPv6 == "" {
		out.AddressIPv6 = res.IPv6Address
	}
	if req.Interface.MacAddress == "" {
		out.MacAddress = res.MacAddress
	}
	p.log.WithFields(map[string]any{"endpoint": res.EndpointID, "ip": res.IPAddress, "port": res.PortName}).Info("docker endpoint created")
	return CreateEndpointResponse{Interface: out}, nil
}

func orNone(s string) string {
	if s == "" {
		return "none without an IPv4 address"
	}
	return s
}

// deleteEndpoint removes the endpoint, its port and flows; netmaster frees
// its address, so the engine's ReleaseAddress that follows is not passed
// on (docs/docker.md).
func (p *Plugin) deleteEndpoint(ctx context.Context, req *EndpointRequest) (empty, error) {
	n, err := p.resolve(ctx, req.NetworkID)
	if err != nil {
		return empty{}, err
	}
	res, attached := p.cfg.Backend.Attached(n.Tenant, n.Network, req.EndpointID)
	if !attached {
		// docs/docker.md: an endpoint not attached on this host is a 404
		// (the engine deletes each endpoint once; a refusal changes nothing).
		return empty{}, fmt.Errorf("endpoint %s of network %s is not attached on this host: %w", req.EndpointID, n.networkID(), ErrNotFound)
	}
	if err := p.cfg.Backend.Detach(ctx, attach.DetachRequest{Tenant: n.Tenant, Network: n.Network, ContainerID: req.EndpointID}); err != nil {
		return empty{}, fmt.Errorf("endpoint %s on network %s: %w", req.EndpointID, n.networkID(), err)
	}
	if pfx, err := netip.ParsePrefix(res.IPAddress); attached && err == nil {
		p.mu.Lock()
		p.released[releasedKey(n.networkID(), pfx.Addr())] = struct{}{}
		p.mu.Unlock()
	}
	p.log.WithField("endpoint", res.EndpointID).Info("docker endpoint deleted")
	return empty{}, nil
}

func releasedKey(netID string, a netip.Addr) string { return netID + "/" + a.String() }

// join hands the container side of the endpoint's veth to the engine,
// which moves it into the sandbox as eth<N> with the address and MAC of
// CreateEndpoint; it carries the MTU already.
func (p *Plugin) join(ctx context.Context, req *JoinRequest) (JoinResponse, error) {
	n, err := p.resolve(ctx, req.NetworkID)
	if err != nil {
		return JoinResponse{}, err
	}
	res, ok := p.cfg.Backend.Attached(n.Tenant, n.Network, req.EndpointID)
	if !ok {
		return JoinResponse{}, fmt.Errorf("endpoint %s of network %s is not attached on this host: %w", req.EndpointID, n.networkID(), ErrNotFound)
	}
	return JoinResponse{InterfaceName: &InterfaceName{SrcName: res.IfName, DstPrefix: "eth"},
		Gateway: res.Gateway, GatewayIPv6: res.IPv6Gateway}, nil
}

// resolve maps a docker network ID to contiv names (docs/docker.md): the
// mapping netmaster recorded, else (not in swarm mode) the engine's
// network: the tenant, network and group IPAM options contiv networks
// carry, or its name "[<group>.]<network>[/<tenant>]".
func (p *Plugin) resolve(ctx context.Context, id string) (contivNames, error) {
	p.mu.Lock()
	n, ok := p.names[id]
	p.mu.Unlock()
	if ok {
		return n, nil
	}
	dns, err := p.cfg.Backend.Docknets(ctx)
	if err != nil {
		return n, fmt.Errorf("read docker network mappings: %w", err)
	}
	found := false
	for _, d := range dns {
		if d.DocknetUUID == id {
			n, found = contivNames{Tenant: d.TenantName, Network: d.NetworkName, Group: d.ServiceName}, true
			break
		}
	}
	if !found {
		if p.cfg.SwarmMode || p.cfg.Engine == nil {
			return n, fmt.Errorf("docker network %s is mapped to no contiv network: %w", id, ErrNotFound)
		}
		nw, err := p.cfg.Engine.InspectNetwork(ctx, id)
		if errors.Is(err, dockernets.ErrNotFound) {
			return n, fmt.Errorf("docker network %s: %w", id, ErrNotFound)
		}
		if err != nil {
			return n, fmt.Errorf("look up docker network %s: %w", id, err)
		}
		if o := nw.IPAM.Options; o["network"] != "" {
			n = contivNames{Tenant: o["tenant"], Network: o["network"], Group: o["group"]}
			if n.Tenant == "" {
				n.Tenant = dockernets.DefaultTenant
			}
		} else {
			n.Tenant, n.Network, n.Group = dockernets.ParseName(nw.Name)
		}
	}
	p.mu.Lock()
	p.names[id] = n
	p.mu.Unlock()
	return n, nil
}

// parseMAC reads a 6-byte MAC address.
func parseMAC(s string) (net.HardwareAddr, error) {
	mac, err := net.ParseMAC(s)
	if err != nil || len(mac) != 6 {
		return nil, fmt.Errorf("%q is not a 6-byte MAC address", s)
	}
	return mac, nil
}
