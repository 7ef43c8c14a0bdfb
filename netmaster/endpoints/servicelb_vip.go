package endpoints

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/netmaster/apierr"
	"github.com/contiv/netplugin/netmaster/endpoints/reclaim"
	"github.com/contiv/netplugin/objdb"
)

// vipOwner gives the service load balancer (netmaster/svclb) its VIPs from
// the networks' pools, with the address records the sweep honours.
type vipOwner struct{ m *Service }

func (v vipOwner) TakeVIP(ctx context.Context, tx *contivmodel.Tx, id, netID, requested string) (netip.Addr, error) {
	return v.m.takeVIP(ctx, tx, id, netID, requested)
}

func (v vipOwner) DropVIP(ctx context.Context, tx *contivmodel.Tx, netID, vip string) error {
	return v.m.dropVIP(ctx, tx, netID, vip)
}

func (v vipOwner) Snapshot(ctx context.Context, keys ...string) (func(), error) {
	return v.m.Snapshot(ctx, keys...)
}

// restoreServices rebuilds the service load balancer from the store at
// the start of a term.
func (m *Service) restoreServices(ctx context.Context, sc reclaim.Scan) error {
	return m.svcLB.Restore(ctx, sc.Providers)
}

// vipRecord names the service as the owner of its VIP in the address
// records the leaked-address sweep honours (netmaster/endpoints/reclaim).
func vipRecord(id string) []byte { return []byte(vipRecordPrefix + id) }

// vipRecordPrefix starts the address record of a service VIP.
const vipRecordPrefix = reclaim.VIPRecordPrefix

// takeVIP allocates a service VIP in the network's pool (the requested
// address, refused when outside the subnet or taken, or the lowest free
// one), records its owner and counts it as handed out.
func (m *Service) takeVIP(ctx context.Context, tx *contivmodel.Tx, id, netID, requested string) (netip.Addr, error) {
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
		ctx, cancel := UndoContext()
		defer cancel()
		if err := m.kv.Delete(ctx, ipallocKey(netID, a)); err != nil {
			m.log.WithError(err).Error("roll back service address record")
		}
	})
	if err := m.bumpNetwork(ctx, netID, 0, 1); err != nil {
		return a, err
	}
	tx.OnAbort(func() {
		ctx, cancel := UndoContext()
		defer cancel()
		if err := m.bumpNetwork(ctx, netID, 0, -1); err != nil {
			m.log.WithError(err).Error("roll back address count")
		}
	})
	return a, nil
}

// dropVIP releases a service VIP, its owner record and its count; an
// abort takes it back.
func (m *Service) dropVIP(ctx context.Context, tx *contivmodel.Tx, netID, vip string) error {
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
	rec, err := m.Snapshot(ctx, ipallocKey(netID, a))
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
		ctx, cancel := UndoContext()
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
		ctx, cancel := UndoContext()
		defer cancel()
		if err := m.bumpNetwork(ctx, netID, 0, 1); err != nil {
			m.log.WithError(err).Error("roll back address count")
		}
	})
	return nil
}
