package svclb

import (
	"context"
	"fmt"
	"maps"
	"sort"

	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/netmaster/apierr"
	"github.com/contiv/netplugin/state"
)

// netID is the state id of a network: "<network>.<tenant>".
func netID(tenant, network string) string { return network + "." + tenant }

// Apply brings the running service of s in line with the request
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
func (c *Cache) Apply(ctx context.Context, tx *contivmodel.Tx, s *contivmodel.ServiceLB, sel map[string]string) error {
	id := ID(s.TenantName, s.ServiceName)
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
		a, err := c.vips.TakeVIP(ctx, tx, id, netID(s.TenantName, s.NetworkName), s.IpAddress)
		if err != nil {
			return err
		}
		vip = a.String()
	}
	undo, err := c.vips.Snapshot(ctx, c.st.ServiceLBs.Key(id), c.st.Providers.Key(id))
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
	if err := c.writeService(ctx, svc, view, false); err != nil {
		return err
	}
	c.services[id] = svc
	if had && !reuse {
		return c.vips.DropVIP(ctx, tx, netID(cur.Tenant, cur.Network), cur.IPAddress)
	}
	return nil
}

// Remove withdraws the service id: provider list, record, VIP and
// cache entry (docs/daemons.md §4.12 "Delete service").
func (c *Cache) Remove(ctx context.Context, tx *contivmodel.Tx, id string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur, had := c.services[id]
	if !had {
		rec, err := c.st.ServiceLBs.Read(ctx, id)
		if err != nil {
			return apierr.Store("read service state "+id, err)
		}
		cur = &rec
	}
	undo, err := c.vips.Snapshot(ctx, c.st.ServiceLBs.Key(id), c.st.Providers.Key(id))
	if err != nil {
		return err
	}
	tx.OnAbort(undo)
	tx.OnAbort(func() { c.restore(id, cur, had) })
	delete(c.services, id)
	if err := c.st.Providers.Clear(ctx, id); err != nil {
		return fmt.Errorf("withdraw providers of %q: %w", id, err)
	}
	if err := c.st.ServiceLBs.Clear(ctx, id); err != nil {
		return fmt.Errorf("delete service state %q: %w", id, err)
	}
	if cur.IPAddress == "" {
		return nil
	}
	return c.vips.DropVIP(ctx, tx, netID(cur.Tenant, cur.Network), cur.IPAddress)
}

// restore puts a cache entry back (an undo).
func (c *Cache) restore(id string, svc *state.ServiceLB, had bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if had {
		c.services[id] = svc
	} else {
		delete(c.services, id)
	}
}

// sameSpec reports whether a running service already has these ports and
// selectors (port order does not matter).
func sameSpec(svc *state.ServiceLB, network string, ports []string, sel map[string]string) bool {
	if svc.Network != network || len(svc.Ports) != len(ports) || len(svc.Selectors) != len(sel) {
		return false
	}
	a := append([]string(nil), svc.Ports...)
	b := append([]string(nil), ports...)
	sort.Strings(a)
	sort.Strings(b)
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	for k, v := range sel {
		if w, ok := svc.Selectors[k]; !ok || w != v {
			return false
		}
	}
	return true
}
