package endpoints

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/contiv/netplugin/api/pluginapi"
	"github.com/contiv/netplugin/netmaster/apierr"
	"github.com/contiv/netplugin/netmaster/ipam"
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
// cleanup and the host garbage collection use it too. On the common path
// (an IPv4 network, a store with transactions) removeJoined removes the
// record, frees the address and updates the counters in one store
// transaction; otherwise removeStepwise does it in separate writes.
func (m *Service) removeEndpoint(ctx context.Context, netID, epID string) (resp pluginapi.EndpointResponse, err error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	m.topo.RLock()
	defer m.topo.RUnlock()
	if resp, done, err := m.removeJoined(ctx, netID, epID); done {
		return resp, err
	}
	return m.removeStepwise(ctx, netID, epID)
}

// removePlace is where an endpoint's address and counts live.
type removePlace struct {
	ns    state.Network
	pool  string // IPv4 pool: the network's or its group's
	group string // group id, "" when none
}

// placeOf reads the network (and group) of endpoint ep.
func (m *Service) placeOf(ctx context.Context, netID string, ep state.Endpoint) (removePlace, error) {
	ns, err := m.netState(ctx, netID)
	if err != nil {
		return removePlace{}, err
	}
	pl := removePlace{ns: ns, pool: netID}
	if ep.EndpointGroupKey != "" {
		if gs, err := m.epgState(ctx, ep.EndpointGroupKey); err == nil {
			if gs.IPPool != "" {
				pl.pool = gs.ID
			}
			pl.group = gs.ID
		}
	}
	return pl, nil
}

// maxRemoveRaces bounds how often removeJoined reads a record again that
// changed under it (an update, a concurrent delete).
const maxRemoveRaces = 5

// removeJoined removes the record at the version read (or, when this
// term created it, the version it was written at: recordCache), frees its IPv4
// address and updates the counters in one transaction (ipam.ReleaseJoined),
// batched with the pool's concurrent requests. done is false when the
// path does not apply; nothing was written then.
func (m *Service) removeJoined(ctx context.Context, netID, epID string) (resp pluginapi.EndpointResponse, done bool, err error) {
	if !m.v4.CanJoin() {
		return resp, false, nil
	}
	cached, fromCache := m.recs.take(epID)
	for race := 0; ; race++ {
		ep, ver := cached.ep, cached.ver
		if !fromCache || race > 0 {
			var err error
			ep, ver, err = m.st.Endpoints.ReadVersion(ctx, epID)
			if errors.Is(err, objdb.ErrNotFound) {
				return resp, true, apierr.Store("delete endpoint "+epID, err)
			}
			if err != nil {
				return resp, false, nil
			}
		}
		pl, err := m.placeOf(ctx, netID, ep)
		ip, perr := netip.ParseAddr(ep.IPAddress)
		if err != nil || pl.ns.IPv6Subnet != "" || perr != nil || !ip.Is4() {
			return resp, false, nil
		}
		_, err = m.v4.ReleaseJoined(ctx, pl.pool, ip, m.removeRide(netID, epID, ver, pl.group))
		switch {
		case err == nil:
			return pluginapi.EndpointResponse{EndpointConfig: ep}, true, nil
		case errors.Is(err, objdb.ErrUncertain):
			// All of it may land, or none: the record, the address
			// and the counts stay consistent either way.
			return resp, true, fmt.Errorf("delete endpoint %q: %w", epID, err)
		case errors.Is(err, objdb.ErrConflict) && race < maxRemoveRaces:
			continue // the record changed: read it again
		}
		return resp, false, nil
	}
}

// removeRide is the record removal and the counts a joined delete writes
// with its address release.
func (m *Service) removeRide(netID, epID string, ver int64, group string) ipam.Ride {
	key := m.st.Endpoints.Key(epID)
	netT := m.netTally(netID)
	var grpT ipam.Tally
	if group != "" {
		grpT = m.groupTally(group)
	}
	return ipam.Ride{Key: key, Build: func(_ netip.Addr, changed bool) ([]objdb.TxnOp, []ipam.TallyDelta) {
		addrs := 0
		if changed {
			addrs = -1
		}
		ds := []ipam.TallyDelta{{T: netT, D: [2]int{-1, addrs}}}
		if grpT != nil {
			ds = append(ds, ipam.TallyDelta{T: grpT, D: [2]int{-1, 0}})
		}
		return []objdb.TxnOp{{Kind: objdb.TxnDelete, Key: key, PrevVersion: ver}}, ds
	}}
}

// removeStepwise removes the record first, and gets it back in the same
// store operation, so that exactly one of several concurrent deletes does
// the bookkeeping: the address releases, then the counters.
func (m *Service) removeStepwise(ctx context.Context, netID, epID string) (resp pluginapi.EndpointResponse, err error) {
	// A step of unknown outcome (the store stayed unreachable) leaves the
	// counters to a recount; an address it could not release stays taken
	// until a leader's sweep finds it without an owner.
	defer func() { m.needRepair(err) }()
	ep, err := m.st.Endpoints.Take(ctx, epID)
	if err != nil {
		return pluginapi.EndpointResponse{}, apierr.Store("delete endpoint "+epID, err)
	}
	resp = pluginapi.EndpointResponse{EndpointConfig: ep}
	pl, err := m.placeOf(ctx, netID, ep)
	if errors.Is(err, objdb.ErrNotFound) {
		return resp, nil
	}
	if err != nil {
		return resp, fmt.Errorf("read network state %q: %w", netID, err)
	}
	// The group's counter is written concurrently with the releases (see
	// perf_counters.go); the network's waits for the IPv4 release, which
	// tells whether its address count goes down.
	addrs := 0
	var groupErr error
	err = both(func() {
		if pl.group != "" {
			groupErr = m.bumpGroup(ctx, pl.group, -1)
		}
	}, func() error {
		released, err := m.releaseAddrs(ctx, netID, pl, ep)
		if released {
			addrs = -1
		}
		return err
	})
	if err = errors.Join(err, groupErr); err != nil {
		return resp, err
	}
	if err := m.bumpNetwork(ctx, netID, -1, addrs); err != nil {
		return resp, err
	}
	return resp, nil
}

// releaseAddrs gives a removed endpoint's addresses back; released: its
// IPv4 address was taken.
func (m *Service) releaseAddrs(ctx context.Context, netID string, pl removePlace, ep state.Endpoint) (released bool, err error) {
	if ip, err := netip.ParseAddr(ep.IPAddress); err == nil {
		if released, err = m.v4.Release(ctx, pl.pool, ip); err != nil {
			return false, err
		}
	}
	if pl.ns.IPv6Subnet != "" {
		if ip, err := netip.ParseAddr(ep.IPv6Address); err == nil {
			if _, err := m.v6.Release(ctx, netID, ip); err != nil {
				return released, err
			}
		}
	}
	return released, nil
}
