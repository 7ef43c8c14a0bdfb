package endpoints

import (
	"context"
	"encoding/json"
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
// interface) with its addresses (docs/rest-api.md §3.3), as ensure-steps:
// prepareCreate validates and composes the record; on the common path
// (an IPv4 network, a fresh or free preferred address) createJoined takes
// the address, writes the record and counts it in one store transaction
// (docs/allocation-integrity.md, "One transaction"); otherwise
// createStepwise takes the addresses, writes the record and the counters,
// and takes over allocAddress records in separate writes, undoing the
// steps done when one fails.
func (m *Service) createEndpoint(ctx context.Context, req *pluginapi.CreateEndpointRequest) (pluginapi.EndpointResponse, error) {
	if err := checkCreateEndpoint(req); err != nil {
		return pluginapi.EndpointResponse{}, err
	}
	ctx, cancel := opCtx(ctx)
	defer cancel()
	m.topo.RLock()
	defer m.topo.RUnlock()
	c, err := m.prepareCreate(ctx, req)
	if err != nil || c.answered {
		return c.resp, err
	}
	if resp, done, err := m.createJoined(ctx, c); done {
		return resp, err
	}
	return m.createStepwise(ctx, c)
}

// createCtx is one create's inputs, read and composed by prepareCreate.
type createCtx struct {
	req         *pluginapi.CreateEndpointRequest
	netID, epID string
	pool        string // the IPv4 pool: the network's, or its group's
	ns          state.Network
	ep          state.Endpoint // the record, without addresses
	answered    bool           // resp is the answer (an existing endpoint)
	resp        pluginapi.EndpointResponse
}

// prepareCreate reads the network and group (validating the group's
// network) and composes the record.
func (m *Service) prepareCreate(ctx context.Context, req *pluginapi.CreateEndpointRequest) (*createCtx, error) {
	c := &createCtx{req: req, netID: state.NetworkID(req.TenantName, req.NetworkName)}
	ns, err := m.netState(ctx, c.netID)
	if err != nil {
		return c, apierr.Store("read network state "+c.netID, err)
	}
	c.ns, c.pool = ns, c.netID
	epID := state.EndpointID(req.TenantName, req.NetworkName, req.ConfigEP.Container)
	if req.ConfigEP.Container == "" {
		epID = state.NativeEndpointID(req.ConfigEP.Host)
	}
	c.epID = epID
	group := req.ConfigEP.ServiceName
	c.ep = state.Endpoint{
		Common: state.Common{ID: epID}, NetID: c.netID, EndpointID: req.ConfigEP.Container,
		ServiceName: group, HomingHost: req.ConfigEP.Host, EPCommonName: req.EPCommonName,
	}
	if group == "" {
		return c, nil
	}
	epgID := state.GroupID(req.TenantName, group)
	gs, err := m.epgState(ctx, epgID)
	if err != nil {
		// An existing endpoint is returned unchanged (docs/rest-api.md §3.3 step 2).
		if c.resp, c.answered = m.existingEndpoint(ctx, epID); c.answered {
			return c, nil
		}
		return c, apierr.Store("read group state "+epgID, err)
	}
	if err := checkGroupNetwork(req, gs); err != nil {
		return c, err
	}
	if gs.IPPool != "" {
		c.pool = epgID
	}
	if ns.NwType != "infra" {
		c.ep.EndpointGroupKey = gs.ID
		c.ep.EndpointGroupID = gs.EndpointGroupID
	}
	return c, nil
}

// existingEndpoint returns endpoint epID as the answer to a create, if
// it exists. The common case, a new endpoint, is not read first: the
// create-only write of the record detects an existing one.
func (m *Service) existingEndpoint(ctx context.Context, epID string) (pluginapi.EndpointResponse, bool) {
	ep, err := m.st.Endpoints.Read(ctx, epID)
	return pluginapi.EndpointResponse{EndpointConfig: ep}, err == nil
}

// withAddress is the record ep with IPv4 address a and its MAC.
func withAddress(ep state.Endpoint, a netip.Addr) state.Endpoint {
	ep.IPAddress, ep.MacAddress = a.String(), state.EndpointMAC(a).String()
	return ep
}

// createJoined is the common path: the address is taken, the record
// created and the network's (and group's) counters updated in one store
// transaction, batched with the concurrent creates of the pool
// (ipam.AllocateJoined). done is false when the path does not apply (no
// transactions, an IPv6 subnet, a preferred address in use, which
// createStepwise's take-over rules decide) and nothing was written.
func (m *Service) createJoined(ctx context.Context, c *createCtx) (resp pluginapi.EndpointResponse, done bool, err error) {
	if !m.v4.CanJoin() || c.ns.IPv6Subnet != "" {
		return resp, false, nil
	}
	var pref netip.Addr
	if p := c.req.ConfigEP.IPAddress; p != "" {
		sn, err := ipam.ParseSubnet(fmt.Sprintf("%s/%d", c.ns.SubnetIP, c.ns.SubnetLen))
		if err != nil {
			return resp, false, nil
		}
		if pref, err = sn.CheckHost(p); err != nil {
			return resp, false, nil
		}
	}
	if _, err := json.Marshal(c.ep); err != nil {
		return resp, true, fmt.Errorf("encode endpoint %q: %w", c.epID, err)
	}
	ip, ver, err := m.v4.AllocateJoined(ctx, c.pool, pref, m.createRide(c))
	switch {
	case err == nil:
		ep := withAddress(c.ep, ip)
		m.recs.put(ep, ver)
		return pluginapi.EndpointResponse{EndpointConfig: ep}, true, nil
	case errors.Is(err, ipam.ErrNotJoined), errors.Is(err, ipam.ErrInUse):
		return resp, false, nil
	case errors.Is(err, objdb.ErrUncertain):
		// The transaction may land, or have landed: the address, the
		// record and the counts all together or none of them. The
		// agent's retry finds the record if it did.
		return resp, true, fmt.Errorf("create endpoint %q: %w", c.epID, err)
	}
	// Nothing was written. A failed condition is usually the record:
	// a concurrent create of the same endpoint won, answer with it.
	if r, ok := m.existingEndpoint(ctx, c.epID); ok {
		return r, true, nil
	}
	if errors.Is(err, objdb.ErrConflict) {
		return resp, false, nil
	}
	return resp, true, err
}

// createRide is the record and the counts a joined create writes with its
// address.
func (m *Service) createRide(c *createCtx) ipam.Ride {
	ep, key := c.ep, m.st.Endpoints.Key(c.epID)
	netT := m.netTally(c.netID)
	var grpT ipam.Tally
	if ep.EndpointGroupKey != "" {
		grpT = m.groupTally(ep.EndpointGroupKey)
	}
	return ipam.Ride{Key: key, Build: func(a netip.Addr, changed bool) ([]objdb.TxnOp, []ipam.TallyDelta) {
		b, _ := json.Marshal(withAddress(ep, a)) // encodable: checked by createJoined
		addrs := 0
		if changed {
			addrs = 1
		}
		ds := []ipam.TallyDelta{{T: netT, D: [2]int{1, addrs}}}
		if grpT != nil {
			ds = append(ds, ipam.TallyDelta{T: grpT, D: [2]int{1, 0}})
		}
		return []objdb.TxnOp{{Kind: objdb.TxnPut, Key: key, Value: b, Absent: true}}, ds
	}}
}

// undoList is the rollback of a create made in separate writes, newest
// first.
type undoList []func()

func (u *undoList) add(f func()) { *u = append(*u, f) }

func (u *undoList) run() {
	for i := len(*u) - 1; i >= 0; i-- {
		(*u)[i]()
	}
	*u = nil
}

// v4Taken is the IPv4 address a stepwise create got.
type v4Taken struct {
	ip       netip.Addr
	fresh    bool // newly taken from the pool
	takeOver bool // an address allocAddress handed out, its record to take over
}

// createStepwise creates the endpoint in separate writes: the IPv4
// address (takeV4), the IPv6 address (takeV6), the record and the
// counters together (writeRecordCounted), the allocAddress records
// (takeOverRecords). A failure undoes the steps done, newest first.
func (m *Service) createStepwise(ctx context.Context, c *createCtx) (resp pluginapi.EndpointResponse, err error) {
	var undo undoList
	defer func() {
		if err != nil {
			undo.run()
			m.needRepair(err)
		}
	}()
	a, err := m.takeV4(ctx, c)
	if err != nil {
		if r, ok := m.existingEndpoint(ctx, c.epID); ok {
			return r, nil
		}
		return resp, err
	}
	if a.fresh {
		undo.add(func() { m.releaseV4(c.netID, c.pool, a.ip) })
	}
	c.ep = withAddress(c.ep, a.ip)
	v6TakenOver := false
	if c.ns.IPv6Subnet != "" {
		a6, fresh, err := m.takeV6(ctx, c.netID, c.epID, c.req.ConfigEP.IPv6Address)
		if err != nil {
			return resp, err
		}
		if fresh {
			undo.add(func() { m.releaseV6(c.netID, a6) })
		}
		v6TakenOver = !fresh
		c.ep.IPv6Address = a6.String()
	}
	if r, answered, err := m.writeRecordCounted(ctx, c, a.fresh, &undo); err != nil || answered {
		return r, err
	}
	if err := m.takeOverRecords(ctx, c, a, v6TakenOver); err != nil {
		return resp, err
	}
	return pluginapi.EndpointResponse{EndpointConfig: c.ep}, nil
}

// takeV4 takes the IPv4 address of a stepwise create: a fresh one, or
// the preferred one; an in-use preferred address is accepted when
// endpointHolding says this endpoint holds it or an allocAddress record
// names it (docs/rest-api.md §10 #6).
func (m *Service) takeV4(ctx context.Context, c *createCtx) (v4Taken, error) {
	ip, err := m.allocV4(ctx, &c.ns, c.pool, c.req.ConfigEP.IPAddress)
	if err == nil {
		return v4Taken{ip: ip, fresh: true}, nil
	}
	if !errors.Is(err, ipam.ErrInUse) {
		return v4Taken{}, err
	}
	pref, _ := netip.ParseAddr(c.req.ConfigEP.IPAddress)
	holder, herr := m.endpointHolding(ctx, c.netID, pref)
	if herr != nil {
		return v4Taken{}, herr
	}
	switch {
	case holder == c.epID:
		return v4Taken{ip: pref}, nil
	case holder == "":
		// Only an address allocAddress handed out (its record names
		// the network) may be taken over; the gateway, a group
		// pool's range or a service VIP may not.
		rec, gerr := m.kv.Get(ctx, ipallocKey(c.pool, pref))
		switch {
		case gerr == nil && !strings.HasPrefix(string(rec.Value), vipRecordPrefix):
			return v4Taken{ip: pref, takeOver: true}, nil
		case gerr != nil && !errors.Is(gerr, objdb.ErrNotFound):
			return v4Taken{}, fmt.Errorf("read address record %s: %w", pref, gerr)
		}
	}
	return v4Taken{}, err
}

// writeRecordCounted writes the record and bumps the counters
// concurrently (see perf_counters.go), adding their rollbacks to undo.
// answered: a concurrent create of the same endpoint won, resp is it.
func (m *Service) writeRecordCounted(ctx context.Context, c *createCtx, fresh bool, undo *undoList) (resp pluginapi.EndpointResponse, answered bool, err error) {
	addrs := 0
	if fresh {
		addrs = 1
	}
	groupKey := c.ep.EndpointGroupKey
	var netErr, groupErr error
	// The record's bytes are this request's own (they name an address
	// only it was given), so a write of unknown outcome is settled by
	// reading it back: a conflict below is always another request's
	// record, never this request's own retried write
	// (docs/allocation-integrity.md).
	err = both(func() { netErr, groupErr = m.bumpEndpointCounters(ctx, c.netID, groupKey, 1, addrs) },
		func() error {
			_, err := m.st.Endpoints.WriteResolved(ctx, c.ep, objdb.WithCreateOnly())
			return err
		})
	if errors.Is(err, objdb.ErrUncertain) {
		// The store stayed unreachable: the record may exist or still
		// appear. Keep what it would own (address, counts); the agent's
		// retry finds the record if it landed, a leader's sweep gives the
		// address back if it never did, and the counters are recounted.
		*undo = nil
		return resp, false, fmt.Errorf("write endpoint %q: %w", c.epID, err)
	}
	if netErr == nil {
		undo.add(func() { m.undoNetworkBump(c.netID, -1, -addrs) })
	}
	if groupErr == nil && groupKey != "" {
		undo.add(func() { m.undoGroupBump(groupKey, -1) })
	}
	if err != nil {
		if errors.Is(err, objdb.ErrConflict) {
			// A concurrent create of the same endpoint won: answer with it.
			if r, ok := m.existingEndpoint(ctx, c.epID); ok {
				undo.run()
				return r, true, nil
			}
		}
		return resp, false, fmt.Errorf("write endpoint %q: %w", c.epID, err)
	}
	undo.add(func() {
		ctx, cancel := UndoContext()
		defer cancel()
		if err := m.st.Endpoints.Clear(ctx, c.epID); err != nil {
			m.log.WithError(err).Error("roll back endpoint state")
		}
	})
	return resp, false, errors.Join(netErr, groupErr)
}

// takeOverRecords makes the endpoint the owner of addresses allocAddress
// handed out: it takes the records atomically, so that a concurrent
// releaseAddress of the address either gets the record first (and this
// create is rolled back) or finds the endpoint and is refused
// (release.go).
func (m *Service) takeOverRecords(ctx context.Context, c *createCtx, a v4Taken, v6TakenOver bool) error {
	if !a.fresh && a.takeOver {
		if err := m.takeOverRecord(ctx, c.pool, a.ip); err != nil {
			return err
		}
	}
	if v6TakenOver {
		if err := m.kv.Delete(ctx, ipallocKey(c.netID, netip.MustParseAddr(c.ep.IPv6Address))); err != nil {
			return fmt.Errorf("take over address record %s: %w", c.ep.IPv6Address, err)
		}
	}
	return nil
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
