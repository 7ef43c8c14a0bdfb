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
	"github.com/contiv/netplugin/netmaster/ipam"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/state"
)

// createEndpoint writes the endpoint of a container (or a host's native
// interface) with its addresses (docs/rest-api.md §3.3). Steps, in order:
// validate (checkCreateEndpoint, checkGroupNetwork), read the network and
// group, take the IPv4 address (allocV4; an in-use preferred address is
// accepted when endpointHolding says this endpoint holds it or an
// allocAddress record names it), take the IPv6 address (takeV6), write the
// record and bump the counters together (both), take over the allocAddress
// records (takeOverRecord). A failure undoes the steps done, newest first.
func (m *Service) createEndpoint(ctx context.Context, req *pluginapi.CreateEndpointRequest) (resp pluginapi.EndpointResponse, err error) {
	if err := checkCreateEndpoint(req); err != nil {
		return resp, err
	}
	ctx, cancel := opCtx(ctx)
	defer cancel()
	m.topo.RLock()
	defer m.topo.RUnlock()
	netID := state.NetworkID(req.TenantName, req.NetworkName)
	ns, err := m.netState(ctx, netID)
	if err != nil {
		return resp, apierr.Store("read network state "+netID, err)
	}
	epID := state.EndpointID(req.TenantName, req.NetworkName, req.ConfigEP.Container)
	if req.ConfigEP.Container == "" {
		epID = state.NativeEndpointID(req.ConfigEP.Host)
	}
	// An existing endpoint is returned unchanged (docs/rest-api.md §3.3 step 2). The
	// common case, a new endpoint, is not read first: the create-only
	// write below detects an existing one, and the allocation made for
	// it is then given back.
	existing := func() (pluginapi.EndpointResponse, bool) {
		ep, err := m.st.Endpoints.Read(ctx, epID)
		return pluginapi.EndpointResponse{EndpointConfig: ep}, err == nil
	}
	group := req.ConfigEP.ServiceName
	var gs state.EndpointGroup
	pool := netID
	if group != "" {
		epgID := state.GroupID(req.TenantName, group)
		if gs, err = m.epgState(ctx, epgID); err != nil {
			if r, ok := existing(); ok {
				return r, nil
			}
			return resp, apierr.Store("read group state "+epgID, err)
		}
		if err := checkGroupNetwork(req, gs); err != nil {
			return resp, err
		}
		if gs.IPPool != "" {
			pool = epgID
		}
	}
	ep := state.Endpoint{
		Common: state.Common{ID: epID}, NetID: netID, EndpointID: req.ConfigEP.Container,
		ServiceName: group, HomingHost: req.ConfigEP.Host, EPCommonName: req.EPCommonName,
	}

	var undo []func()
	defer func() {
		if err != nil {
			for i := len(undo) - 1; i >= 0; i-- {
				undo[i]()
			}
			m.needRepair(err)
		}
	}()
	ip, err := m.allocV4(ctx, &ns, pool, req.ConfigEP.IPAddress)
	newlyTaken := err == nil
	takeOver := false // the address is one allocAddress handed out
	if errors.Is(err, ipam.ErrInUse) {
		// The address an allocAddress handed out for this endpoint is
		// accepted; one held by another endpoint is refused (§10 #6).
		pref, _ := netip.ParseAddr(req.ConfigEP.IPAddress)
		holder, herr := m.endpointHolding(ctx, netID, pref)
		if herr != nil {
			return resp, herr
		}
		switch {
		case holder == epID:
			ip, err = pref, nil
		case holder == "":
			// Only an address allocAddress handed out (its record names
			// the network) may be taken over; the gateway, a group
			// pool's range or a service VIP may not.
			rec, gerr := m.kv.Get(ctx, ipallocKey(pool, pref))
			switch {
			case gerr == nil && !strings.HasPrefix(string(rec.Value), vipRecordPrefix):
				ip, err, takeOver = pref, nil, true
			case gerr != nil && !errors.Is(gerr, objdb.ErrNotFound):
				return resp, fmt.Errorf("read address record %s: %w", pref, gerr)
			}
		}
	}
	if err != nil {
		if r, ok := existing(); ok {
			return r, nil
		}
		return resp, err
	}
	if newlyTaken {
		undo = append(undo, func() { m.releaseV4(netID, pool, ip) })
	}
	ep.IPAddress, ep.MacAddress = ip.String(), state.EndpointMAC(ip).String()
	v6TakenOver := false
	if ns.IPv6Subnet != "" {
		a6, fresh, err := m.takeV6(ctx, netID, epID, req.ConfigEP.IPv6Address)
		if err != nil {
			return resp, err
		}
		if fresh {
			undo = append(undo, func() { m.releaseV6(netID, a6) })
		}
		v6TakenOver = !fresh
		ep.IPv6Address = a6.String()
	}
	if ns.NwType != "infra" && group != "" {
		ep.EndpointGroupKey = gs.ID
		ep.EndpointGroupID = gs.EndpointGroupID
	}
	addrs := 0
	if newlyTaken {
		addrs = 1
	}
	// The record and the counters are written concurrently (see
	// perf_counters.go); each failure path takes back what was stored.
	var netErr, groupErr error
	//
	// The record's bytes are this request's own (they name an address
	// only it was given), so a write of unknown outcome is settled by
	// reading it back: a conflict below is always another request's
	// record, never this request's own retried write
	// (docs/allocation-integrity.md).
	err = both(func() { netErr, groupErr = m.bumpEndpointCounters(ctx, netID, ep.EndpointGroupKey, 1, addrs) },
		func() error {
			_, err := m.st.Endpoints.WriteResolved(ctx, ep, objdb.WithCreateOnly())
			return err
		})
	if errors.Is(err, objdb.ErrUncertain) {
		// The store stayed unreachable: the record may exist or still
		// appear. Keep what it would own (address, counts); the agent's
		// retry finds the record if it landed, a leader's sweep gives the
		// address back if it never did, and the counters are recounted.
		undo = nil
		return resp, fmt.Errorf("write endpoint %q: %w", epID, err)
	}
	if netErr == nil {
		undo = append(undo, func() { m.undoNetworkBump(netID, -1, -addrs) })
	}
	if groupErr == nil && ep.EndpointGroupKey != "" {
		undo = append(undo, func() { m.undoGroupBump(ep.EndpointGroupKey, -1) })
	}
	if err != nil {
		if errors.Is(err, objdb.ErrConflict) {
			// A concurrent create of the same endpoint won: answer with it.
			if r, ok := existing(); ok {
				for i := len(undo) - 1; i >= 0; i-- {
					undo[i]()
				}
				undo = nil
				return r, nil
			}
		}
		return resp, fmt.Errorf("write endpoint %q: %w", epID, err)
	}
	undo = append(undo, func() {
		ctx, cancel := UndoContext()
		defer cancel()
		if err := m.st.Endpoints.Clear(ctx, epID); err != nil {
			m.log.WithError(err).Error("roll back endpoint state")
		}
	})
	if err = errors.Join(netErr, groupErr); err != nil {
		return resp, err
	}
	// The endpoint now owns an address allocAddress handed out: it takes
	// the record atomically, so that a concurrent releaseAddress of the
	// address either gets the record first (and this create is rolled
	// back) or finds the endpoint and is refused (release.go).
	if !newlyTaken && takeOver {
		if err = m.takeOverRecord(ctx, pool, ip); err != nil {
			return resp, err
		}
	}
	if v6TakenOver {
		if err = m.kv.Delete(ctx, ipallocKey(netID, netip.MustParseAddr(ep.IPv6Address))); err != nil {
			return resp, fmt.Errorf("take over address record %s: %w", ep.IPv6Address, err)
		}
	}
	return pluginapi.EndpointResponse{EndpointConfig: ep}, nil
}

// endpointHolding returns the id of an endpoint of netID holding ip, or "".
func (m *Service) endpointHolding(ctx context.Context, netID string, ip netip.Addr) (string, error) {
	eps, err := m.AllEndpoints(ctx)
	if err != nil {
		return "", err
	}
	for _, ep := range eps {
		if ep.NetID == netID && (ep.IPAddress == ip.String() || ep.IPv6Address == ip.String()) {
			return ep.ID, nil
		}
	}
	return "", nil
}

// takeV6 allocates the IPv6 address of endpoint epID: the preferred one
// (if given) may also be one epID holds already or one allocAddress handed
// out and no endpoint holds. fresh reports a new allocation.
func (m *Service) takeV6(ctx context.Context, netID, epID, preferred string) (a netip.Addr, fresh bool, err error) {
	a, err = m.allocV6(ctx, netID, preferred)
	if !errors.Is(err, ipam.ErrInUse) {
		return a, err == nil, err
	}
	pref, _ := netip.ParseAddr(preferred)
	holder, herr := m.endpointHolding(ctx, netID, pref)
	if herr != nil {
		return netip.Addr{}, false, herr
	}
	if holder == epID {
		return pref, false, nil
	}
	if holder == "" {
		if rec, gerr := m.kv.Get(ctx, ipallocKey(netID, pref)); gerr == nil && !strings.HasPrefix(string(rec.Value), vipRecordPrefix) {
			return pref, false, nil
		} else if gerr != nil && !errors.Is(gerr, objdb.ErrNotFound) {
			return netip.Addr{}, false, fmt.Errorf("read address record %s: %w", pref, gerr)
		}
	}
	return netip.Addr{}, false, err
}

// takeOverRecord removes the allocAddress record of ip for the endpoint
// now holding the address; a record already gone was released
// concurrently, and the create fails.
func (m *Service) takeOverRecord(ctx context.Context, pool string, ip netip.Addr) error {
	var prev objdb.KeyValue
	if err := m.kv.Delete(ctx, ipallocKey(pool, ip), objdb.WithPrevKV(&prev)); err != nil {
		return fmt.Errorf("take over address record %s: %w", ip, err)
	}
	if prev.Version == 0 {
		return contivmodel.Errorf("address %s was released while the endpoint took it over", ip)
	}
	return nil
}
