package daemon

import (
	"context"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"

	"github.com/contiv/netplugin/netplugin/masterclient"
	"github.com/contiv/netplugin/state"
)

// infraUpErr gives the host its own port on an infra network (docs/daemons.md
// §6.3): an endpoint in netmaster with the host label as id and container, an
// OVS internal port named after the network, its address on that port. The
// host then reaches the network's containers directly and they reach it.
func (d *Daemon) infraUpErr(ctx context.Context, nw state.Network) error {
	if len(nw.NetworkName) > 15 {
		return fmt.Errorf("network name %q is longer than an interface name (15)", nw.NetworkName)
	}
	ep, err := d.mc.CreateEndpoint(ctx, masterclient.CreateEndpointRequest{TenantName: nw.Tenant, NetworkName: nw.NetworkName,
		EndpointID: d.cfg.HostLabel, ConfigEP: masterclient.ConfigEP{Container: d.cfg.HostLabel, Host: d.cfg.HostLabel}})
	if err != nil {
		return fmt.Errorf("create the infra endpoint in netmaster: %w", err)
	}
	d.mu.Lock()
	_, have := d.locals[ep.ID]
	d.mu.Unlock()
	if !have {
		if _, err := d.addLocal(ctx, ep, nw); err != nil {
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
	d.log.WithField("network", nw.ID).WithField("address", addr.IPNet.String()).Info("infra network: host port up")
	return nil
}

// infraDown removes the host's port and its endpoint in netmaster; an error
// is the port's (the endpoint in netmaster is left to its cleanup).
func (d *Daemon) infraDown(ctx context.Context, nw state.Network) error {
	id := state.EndpointID(nw.Tenant, nw.NetworkName, d.cfg.HostLabel)
	d.mu.Lock()
	le, ok := d.locals[id]
	d.mu.Unlock()
	if ok {
		id = le.ep.ID
	}
	if err := d.removeLocal(ctx, id); err != nil {
		return fmt.Errorf("infra network %s: remove the host port: %w", nw.ID, err)
	}
	if _, err := d.mc.DeleteEndpoint(ctx, masterclient.DeleteEndpointRequest{TenantName: nw.Tenant,
		NetworkName: nw.NetworkName, EndpointID: d.cfg.HostLabel}); err != nil {
		d.log.WithError(err).Debugf("infra network %s: delete the endpoint in netmaster", nw.ID)
	}
	return nil
}
