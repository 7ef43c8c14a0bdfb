package attachsvc

import (
	"context"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"

	"github.com/contiv/netplugin/netplugin/masterclient"
	"github.com/contiv/netplugin/state"
)

// InfraUp gives the host its own port on an infra network (docs/daemons.md
// §6.3): an endpoint in netmaster with the host label as id and container, an
// OVS internal port named after the network, its address on that port. The
// host then reaches the network's containers directly and they reach it.
func (s *Service) InfraUp(ctx context.Context, nw state.Network) error {
	if len(nw.NetworkName) > 15 {
		return fmt.Errorf("network name %q is longer than an interface name (15)", nw.NetworkName)
	}
	ep, err := s.cfg.Master.CreateEndpoint(ctx, masterclient.CreateEndpointRequest{TenantName: nw.Tenant, NetworkName: nw.NetworkName,
		EndpointID: s.cfg.Host, ConfigEP: masterclient.ConfigEP{Container: s.cfg.Host, Host: s.cfg.Host}})
	if err != nil {
		return fmt.Errorf("create the infra endpoint in netmaster: %w", err)
	}
	s.mu.Lock()
	_, have := s.locals[ep.ID]
	s.mu.Unlock()
	if !have {
		if _, err := s.AddLocal(ctx, ep, nw); err != nil {
			return err
		}
	}
	link, err := netlink.LinkByName(nw.NetworkName)
	if err != nil {
		return fmt.Errorf("infra port %s: %w", nw.NetworkName, err)
	}
	ip := net.ParseIP(ep.IPAddress)
	if ip == nil {
		return fmt.Errorf("infra endpoint %s has no address", ep.ID)
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: ip, Mask: net.CIDRMask(int(nw.SubnetLen), 32)}}
	if err := netlink.AddrReplace(link, addr); err != nil {
		return fmt.Errorf("infra port %s: address %s: %w", nw.NetworkName, addr.IPNet, err)
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return fmt.Errorf("infra port %s: up: %w", nw.NetworkName, err)
	}
	s.log.WithField("network", nw.ID).WithField("address", addr.IPNet.String()).Info("infra network: host port up")
	return nil
}

// InfraDown removes the host's port and its endpoint in netmaster; an error
// is the port's (the endpoint in netmaster is left to its cleanup).
func (s *Service) InfraDown(ctx context.Context, nw state.Network) error {
	id := state.EndpointID(nw.Tenant, nw.NetworkName, s.cfg.Host)
	s.mu.Lock()
	le, ok := s.locals[id]
	s.mu.Unlock()
	if ok {
		id = le.EP.ID
	}
	if err := s.RemoveLocal(ctx, id); err != nil {
		return fmt.Errorf("infra network %s: remove the host port: %w", nw.ID, err)
	}
	if _, err := s.cfg.Master.DeleteEndpoint(ctx, masterclient.DeleteEndpointRequest{TenantName: nw.Tenant,
		NetworkName: nw.NetworkName, EndpointID: s.cfg.Host}); err != nil {
		s.log.WithError(err).Debugf("infra network %s: delete the endpoint in netmaster", nw.ID)
	}
	return nil
}
