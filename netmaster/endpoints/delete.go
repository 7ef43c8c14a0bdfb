package endpoints

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/contiv/netplugin/api/pluginapi"
	"github.com/contiv/netplugin/netmaster/apierr"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/state"
)

// deleteEndpoint removes the endpoint of a container (docs/rest-api.md
// §3.4) through removeEndpoint.
func (m *Service) deleteEndpoint(ctx context.Context, req *pluginapi.DeleteEndpointRequest) (pluginapi.EndpointResponse, error) {
	if err := required("TenantName", req.TenantName, "NetworkName", req.NetworkName, "EndpointID", req.EndpointID); err != nil {
		return pluginapi.EndpointResponse{}, err
	}
	netID := state.NetworkID(req.TenantName, req.NetworkName)
	return m.removeEndpoint(ctx, netID, state.EndpointIDOnNetwork(netID, req.EndpointID))
}

// removeEndpoint deletes endpoint state epID of network netID and gives
// its addresses and counts back (docs/daemons.md §4.10.2); the debug
// cleanup and the host garbage collection use it too.
func (m *Service) removeEndpoint(ctx context.Context, netID, epID string) (resp pluginapi.EndpointResponse, err error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	m.topo.RLock()
	defer m.topo.RUnlock()
	// A step of unknown outcome (the store stayed unreachable) leaves the
	// counters to a recount; an address it could not release stays taken
	// until a leader's sweep finds it without an owner.
	defer func() { m.needRepair(err) }()
	// Removing the record first, and getting it back in the same store
	// operation, makes exactly one of several concurrent deletes do the
	// bookkeeping.
	ep, err := m.st.Endpoints.Take(ctx, epID)
	if err != nil {
		return pluginapi.EndpointResponse{}, apierr.Store("delete endpoint "+epID, err)
	}
	resp = pluginapi.EndpointResponse{EndpointConfig: ep}
	ns, err := m.netState(ctx, netID)
	if errors.Is(err, objdb.ErrNotFound) {
		return resp, nil
	}
	if err != nil {
		return resp, fmt.Errorf("read network state %q: %w", netID, err)
	}
	pool, group := netID, ""
	if ep.EndpointGroupKey != "" {
		if gs, err := m.epgState(ctx, ep.EndpointGroupKey); err == nil {
			if gs.IPPool != "" {
				pool = gs.ID
			}
			group = gs.ID
		}
	}
	// The group's counter is written concurrently with the releases (see
	// perf_counters.go); the network's waits for the IPv4 release, which
	// tells whether its address count goes down.
	addrs := 0
	var groupErr error
	err = both(func() {
		if group != "" {
			groupErr = m.bumpGroup(ctx, group, -1)
		}
	}, func() error {
		if ip, err := netip.ParseAddr(ep.IPAddress); err == nil {
			released, err := m.v4.Release(ctx, pool, ip)
			if err != nil {
				return err
			}
			if released {
				addrs = -1
			}
		}
		if ns.IPv6Subnet != "" {
			if ip, err := netip.ParseAddr(ep.IPv6Address); err == nil {
				if _, err := m.v6.Release(ctx, netID, ip); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err = errors.Join(err, groupErr); err != nil {
		return resp, err
	}
	if err := m.bumpNetwork(ctx, netID, -1, addrs); err != nil {
		return resp, err
	}
	return resp, nil
}
