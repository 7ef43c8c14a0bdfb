package endpoints

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"

	"github.com/gorilla/mux"

	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/netmaster/apierr"
	"github.com/contiv/netplugin/netmaster/ipam"
	"github.com/contiv/netplugin/netmaster/pluginapi"
	"github.com/contiv/netplugin/netmaster/svclb"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/state"
	"github.com/contiv/netplugin/utils/daemonflags"
)

func (m *Service) addPluginRoutes(r *mux.Router, reg *contivmodel.Registry) {
	contivmodel.HandlePlugin(r, pluginapi.PathAllocAddress, pluginHandler(m, reg, m.allocAddress))
	contivmodel.HandlePlugin(r, pluginapi.PathReleaseAddress, pluginHandler(m, reg, m.releaseAddress))
	contivmodel.HandlePlugin(r, pluginapi.PathCreateEndpoint, pluginHandler(m, reg, m.createEndpoint))
	contivmodel.HandlePlugin(r, pluginapi.PathDeleteEndpoint, pluginHandler(m, reg, m.deleteEndpoint))
	contivmodel.HandlePlugin(r, pluginapi.PathUpdateEndpoint, pluginHandler(m, reg, m.updateEndpoint))
}

// pluginHandler decodes the request (case-insensitive member names), runs
// fn and answers 200 JSON + "\n", or text/plain with the message and the
// status of the registry's classification (docs/rest-errors.md).
func pluginHandler[Req, Resp any](m *Service, reg *contivmodel.Registry, fn func(ctx context.Context, req *Req) (Resp, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req Req
		body, err := contivmodel.ReadBody(w, r, reg.MaxBodyBytes())
		if err == nil {
			if uerr := json.Unmarshal(body, &req); uerr != nil {
				err = &contivmodel.Error{Msg: "decode request: " + uerr.Error(), Err: fmt.Errorf("%w: %w", contivmodel.ErrInvalid, uerr)}
			}
		}
		var out bytes.Buffer
		if err == nil {
			var resp Resp
			if resp, err = fn(r.Context(), &req); err == nil {
				err = json.NewEncoder(&out).Encode(resp)
			}
		}
		if err != nil {
			status := reg.Status(err)
			m.log.WithError(err).WithFields(map[string]any{"path": r.URL.Path, "status": status}).Info("plugin request failed")
			http.Error(w, pluginMessage(err), status)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(out.Bytes())
	})
}

func pluginMessage(err error) string {
	return contivmodel.Message(err)
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

// releaseV6 gives an IPv6 address back during a rollback.
func (m *Service) releaseV6(netID string, a netip.Addr) {
	ctx, cancel := UndoContext()
	defer cancel()
	if _, err := m.v6.Release(ctx, netID, a); err != nil {
		m.log.WithError(err).WithField("network", netID).Error("roll back ipv6 address")
	}
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

// releaseV4 gives an address back during a rollback.
func (m *Service) releaseV4(netID, pool string, a netip.Addr) {
	ctx, cancel := UndoContext()
	defer cancel()
	if _, err := m.v4.Release(ctx, pool, a); err != nil {
		m.log.WithError(err).WithField("network", netID).Error("roll back address")
	}
}

// releaseAddress frees an address allocAddress handed out, or one without
// any owner. An endpoint's address, a gateway, a service VIP or an address
// of a group's IP pool is refused (ErrOwned, naming the owner) and nothing
// changes (docs/allocation-integrity.md).
func (m *Service) releaseAddress(ctx context.Context, req *pluginapi.AddressReleaseRequest) (pluginapi.AddressReleaseResponse, error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	m.topo.RLock()
	defer m.topo.RUnlock()
	ref := parseNetworkID(req.NetworkID)
	ns, err := m.netState(ctx, ref.netID)
	if err != nil {
		return pluginapi.AddressReleaseResponse{}, apierr.Store("read network state "+ref.netID, err)
	}
	addrStr, _, _ := strings.Cut(req.IPv4Address, "/")
	if a, err := netip.ParseAddr(addrStr); err == nil && a.Is6() {
		if _, err := m.releaseChecked(ctx, ref.netID, ref.netID, a, ns.Gateway, ns.IPv6Gateway); err != nil {
			return pluginapi.AddressReleaseResponse{}, err
		}
		return pluginapi.AddressReleaseResponse{Status: "success"}, nil
	}
	pool, err := m.poolOf(ctx, ref)
	if err != nil {
		return pluginapi.AddressReleaseResponse{}, err
	}
	sn, err := ipam.ParseSubnet(fmt.Sprintf("%s/%d", ns.SubnetIP, ns.SubnetLen))
	if err != nil {
		return pluginapi.AddressReleaseResponse{}, err
	}
	ip, err := sn.CheckHost(addrStr)
	if err != nil {
		return pluginapi.AddressReleaseResponse{}, err
	}
	released, err := m.releaseChecked(ctx, ref.netID, pool, ip, ns.Gateway, ns.IPv6Gateway)
	if err != nil {
		return pluginapi.AddressReleaseResponse{}, err
	}
	if released {
		if err := m.bumpNetwork(ctx, ref.netID, 0, -1); err != nil {
			m.needRepair(err)
			return pluginapi.AddressReleaseResponse{}, err
		}
	}
	return pluginapi.AddressReleaseResponse{Status: "success"}, nil
}

// macFor is "02:02:" + the IPv4 octets in hex.
func macFor(a netip.Addr) string {
	b := a.As4()
	return fmt.Sprintf("02:02:%02x:%02x:%02x:%02x", b[0], b[1], b[2], b[3])
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
	epID := netID + "-" + req.ConfigEP.Container
	if req.ConfigEP.Container == "" {
		epID = req.ConfigEP.Host + "-native-intf"
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
	ep.IPAddress, ep.MacAddress = ip.String(), macFor(ip)
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

func (m *Service) deleteEndpoint(ctx context.Context, req *pluginapi.DeleteEndpointRequest) (pluginapi.EndpointResponse, error) {
	if err := required("TenantName", req.TenantName, "NetworkName", req.NetworkName, "EndpointID", req.EndpointID); err != nil {
		return pluginapi.EndpointResponse{}, err
	}
	netID := state.NetworkID(req.TenantName, req.NetworkName)
	return m.removeEndpoint(ctx, netID, netID+"-"+req.EndpointID)
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

// updateEndpoint handles container start/stop notifications (spec
// docs/rest-api.md §3.5, docs/daemons.md §4.12): a started container's labels, id
// and name go into its endpoint and it becomes a provider of the matching
// services; a "die" withdraws it ("null" for a container never started).
func (m *Service) updateEndpoint(ctx context.Context, req *pluginapi.UpdateEndpointRequest) (*pluginapi.UpdateEndpointResponse, error) {
	resp := &pluginapi.UpdateEndpointResponse{IPAddress: req.IPAddress}
	switch req.Event {
	case "start":
		netID := state.NetworkID(req.Tenant, req.Network)
		if _, err := m.st.Networks.Read(ctx, netID); errors.Is(err, objdb.ErrNotFound) {
			epgID := state.GroupID(req.Tenant, req.Network)
			gs, err := m.st.EndpointGroups.Read(ctx, epgID)
			if err != nil {
				return nil, apierr.Store("read group state "+epgID, err)
			}
			netID = state.NetworkID(req.Tenant, gs.NetworkName)
		} else if err != nil {
			return nil, fmt.Errorf("read network state %q: %w", netID, err)
		}
		epID := netID + "-" + req.EndpointID
		ep, err := m.st.Endpoints.Update(ctx, epID, func(ep *state.Endpoint) error {
			if ep.Labels == nil && len(req.Labels) > 0 {
				ep.Labels = map[string]string{}
			}
			for k, v := range req.Labels {
				ep.Labels[k] = v
			}
			ep.ContainerID, ep.EPCommonName = req.ContainerID, req.EPCommonName
			return nil
		})
		if err != nil {
			return nil, apierr.Store("update endpoint "+epID, err)
		}
		if req.ContainerID == "" {
			b, _ := json.Marshal(req)
			return nil, contivmodel.Invalidf("invalid ProviderID from providerInfo:%s", b)
		}
		if err := m.svcLB.Start(ctx, svclb.StartedProvider(req, ep)); err != nil {
			return nil, err
		}
		return resp, nil
	case "die":
		if req.ContainerID == "" {
			return nil, contivmodel.Invalidf("invalid containerID in UpdateEndpointRequest:(nil)")
		}
		if known, err := m.svcLB.Die(ctx, req.ContainerID); err != nil || !known {
			return nil, err
		}
		return resp, nil
	}
	return resp, nil
}
