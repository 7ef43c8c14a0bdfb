package master

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"

	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/netmaster/apierr"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/state"
)

// applyService brings the running service of s in line with the request
// (docs/rest-api.md §2.11 create step 6, docs/daemons.md §4.12):
//
//   - the same network, ports, selectors and (if given) VIP as the running
//     service: nothing to do;
//   - otherwise the service is set up anew with the providers matching the
//     selectors now, keeping the running VIP when the network is the same
//     and no other address is requested, else taking a new VIP (the
//     requested one, or the lowest free address) and releasing the old.
//
// Every side effect registers its undo with tx. Called inside the model
// transaction, so REST operations on services are serialised.
func (m *master) applyService(ctx context.Context, tx *contivmodel.Tx, s *contivmodel.ServiceLB, sel map[string]string) error {
	c := m.svcLB
	id := svcStateID(s.TenantName, s.ServiceName)
	c.mu.Lock()
	defer c.mu.Unlock()
	cur, had := c.services[id]
	sameVIP := s.IpAddress == "" || (had && s.IpAddress == cur.IPAddress)
	if had && sameVIP && sameSpec(cur, s.NetworkName, s.Ports, sel) {
		return nil
	}
	reuse := had && sameVIP && cur.Network == s.NetworkName
	vip := ""
	if reuse {
		vip = cur.IPAddress
	} else {
		a, err := m.takeVIP(ctx, tx, id, netStateID(s.TenantName, s.NetworkName), s.IpAddress)
		if err != nil {
			return err
		}
		vip = a.String()
	}
	undo, err := m.snapshot(ctx, m.st.ServiceLBs.Key(id), m.st.Providers.Key(id))
	if err != nil {
		return err
	}
	tx.OnAbort(undo)
	tx.OnAbort(func() { c.restore(id, cur, had) })
	svc := &state.ServiceLB{
		Common: state.Common{ID: id}, ServiceName: s.ServiceName, Tenant: s.TenantName, Network: s.NetworkName,
		Ports: append([]string(nil), s.Ports...), Selectors: sel, IPAddress: vip,
		Providers: c.matchingProviders(s.TenantName, sel),
	}
	view := maps.Clone(c.services)
	view[id] = svc
	if err := m.writeService(ctx, svc, view, false); err != nil {
		return err
	}
	c.services[id] = svc
	if had && !reuse {
		return m.dropVIP(ctx, tx, netStateID(cur.Tenant, cur.Network), cur.IPAddress)
	}
	return nil
}

// removeService withdraws the service id: provider list, record, VIP and
// cache entry (docs/daemons.md §4.12 "Delete service").
func (m *master) removeService(ctx context.Context, tx *contivmodel.Tx, id string) error {
	c := m.svcLB
	c.mu.Lock()
	defer c.mu.Unlock()
	cur, had := c.services[id]
	if !had {
		rec, err := m.st.ServiceLBs.Read(ctx, id)
		if err != nil {
			return apierr.Store("read service state "+id, err)
		}
		cur = &rec
	}
	undo, err := m.snapshot(ctx, m.st.ServiceLBs.Key(id), m.st.Providers.Key(id))
	if err != nil {
		return err
	}
	tx.OnAbort(undo)
	tx.OnAbort(func() { c.restore(id, cur, had) })
	delete(c.services, id)
	if err := m.st.Providers.Clear(ctx, id); err != nil {
		return fmt.Errorf("withdraw providers of %q: %w", id, err)
	}
	if err := m.st.ServiceLBs.Clear(ctx, id); err != nil {
		return fmt.Errorf("delete service state %q: %w", id, err)
	}
	if cur.IPAddress == "" {
		return nil
	}
	return m.dropVIP(ctx, tx, netStateID(cur.Tenant, cur.Network), cur.IPAddress)
}

// restore puts a cache entry back (an undo).
func (c *svcLBCache) restore(id string, svc *state.ServiceLB, had bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if had {
		c.services[id] = svc
	} else {
		delete(c.services, id)
	}
}

// vipRecord names the service as the owner of its VIP in the address
// records the leaked-address sweep honours (sweep.go).
func vipRecord(id string) []byte { return []byte(vipRecordPrefix + id) }

// vipRecordPrefix starts the address record of a service VIP.
const vipRecordPrefix = "serviceLB "

// takeVIP allocates a service VIP in the network's pool (the requested
// address, refused when outside the subnet or taken, or the lowest free
// one), records its owner and counts it as handed out.
func (m *master) takeVIP(ctx context.Context, tx *contivmodel.Tx, id, netID, requested string) (netip.Addr, error) {
	m.topo.RLock() // against the sweep, between allocation and record
	defer m.topo.RUnlock()
	ns, err := m.netState(ctx, netID)
	if err != nil {
		return netip.Addr{}, apierr.Store("read network state "+netID, err)
	}
	a, err := m.allocV4(ctx, &ns, netID, requested)
	if err != nil {
		return a, err
	}
	recorded := false // a record may exist: the address stays taken
	tx.OnAbort(func() {
		if !recorded {
			m.releaseV4(netID, netID, a)
		}
	})
	// The record names this service: a write of unknown outcome is
	// settled by reading it back; one that stays unknown keeps the
	// address (docs/allocation-integrity.md).
	if _, err := objdb.PutResolved(ctx, m.kv, ipallocKey(netID, a), vipRecord(id)); err != nil {
		recorded = errors.Is(err, objdb.ErrUncertain)
		return a, fmt.Errorf("record service address %s: %w", a, err)
	}
	tx.OnAbort(func() {
		ctx, cancel := undoCtx()
		defer cancel()
		if err := m.kv.Delete(ctx, ipallocKey(netID, a)); err != nil {
			m.log.WithError(err).Error("roll back service address record")
		}
	})
	if err := m.bumpNetwork(ctx, netID, 0, 1); err != nil {
		return a, err
	}
	tx.OnAbort(func() {
		ctx, cancel := undoCtx()
		defer cancel()
		if err := m.bumpNetwork(ctx, netID, 0, -1); err != nil {
			m.log.WithError(err).Error("roll back address count")
		}
	})
	return a, nil
}

// dropVIP releases a service VIP, its owner record and its count; an
// abort takes it back.
func (m *master) dropVIP(ctx context.Context, tx *contivmodel.Tx, netID, vip string) error {
	a, err := netip.ParseAddr(vip)
	if err != nil {
		return fmt.Errorf("service address %q: %w", vip, err)
	}
	m.topo.RLock()
	defer m.topo.RUnlock()
	// The owner record goes first, then the address: an address is never
	// free while a record names it (docs/allocation-integrity.md). An
	// abort takes the address again and puts the record back only if it
	// got the address back.
	rec, err := m.snapshot(ctx, ipallocKey(netID, a))
	if err != nil {
		return err
	}
	if err := m.kv.Delete(ctx, ipallocKey(netID, a)); err != nil {
		tx.OnAbort(rec)
		return fmt.Errorf("forget service address record %s: %w", a, err)
	}
	released, err := m.v4.Release(ctx, netID, a)
	if err != nil {
		tx.OnAbort(rec)
		return fmt.Errorf("release service address %s: %w", a, err)
	}
	if !released {
		tx.OnAbort(rec)
		return nil
	}
	tx.OnAbort(func() {
		ctx, cancel := undoCtx()
		defer cancel()
		if _, err := m.v4.AllocateSpecific(ctx, netID, a); err != nil {
			m.log.WithError(err).Error("roll back service address release: the address was taken meanwhile, the service keeps no VIP record")
			return
		}
		rec()
	})
	if err := m.bumpNetwork(ctx, netID, 0, -1); err != nil {
		return err
	}
	tx.OnAbort(func() {
		ctx, cancel := undoCtx()
		defer cancel()
		if err := m.bumpNetwork(ctx, netID, 0, 1); err != nil {
			m.log.WithError(err).Error("roll back address count")
		}
	})
	return nil
}
