// Package svclb is netmaster's service load balancer (docs/daemons.md
// §4.12): the running services and their providers, kept in step with the
// containers that start and end, persisted and published through the
// state store. One Cache lives for one leadership term.
package svclb

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"sort"
	"sync"

	"github.com/contiv/netplugin/api/pluginapi"
	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/state"
)

// Cache is a leadership term's view of the service load balancer
// (docs/daemons.md §4.12): the running services by "<svc>:<tenant>" and the
// started containers (potential providers) by container id. It is rebuilt
// from the store at the start of every term (Restore).
//
// Values are never changed in place: an update stores a new
// *state.ServiceLB, so a pointer handed out stays a consistent snapshot
// and an undo can put the previous pointer back. The providers of a
// service are shared *state.Provider values whose Services member is left
// empty here and computed when a record is written (recordOf).
type Cache struct {
	st   *state.Store
	vips VIPs

	mu        sync.Mutex
	services  map[string]*state.ServiceLB
	providers map[string]*state.Provider
}

// VIPs takes and gives back service addresses in the network's pool; the
// endpoint side of netmaster owns the pools and their address records.
// Every side effect registers its undo with tx.
type VIPs interface {
	// TakeVIP takes requested ("": the lowest free address) in network
	// netID for service id.
	TakeVIP(ctx context.Context, tx *contivmodel.Tx, id, netID, requested string) (netip.Addr, error)
	// DropVIP gives vip of network netID back.
	DropVIP(ctx context.Context, tx *contivmodel.Tx, netID, vip string) error
	// Snapshot records the raw values of keys and returns their undo.
	Snapshot(ctx context.Context, keys ...string) (func(), error)
}

// New returns an empty cache writing through st and taking VIPs from vips.
func New(st *state.Store, vips VIPs) *Cache {
	return &Cache{st: st, vips: vips, services: map[string]*state.ServiceLB{}, providers: map[string]*state.Provider{}}
}

// ID is the state id of a service: "<service>:<tenant>".
func ID(tenant, service string) string { return service + ":" + tenant }

// Get returns the running service id.
func (c *Cache) Get(id string) (*state.ServiceLB, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.services[id]
	return s, ok
}

// providerKey is the key of a provider in a service: "<ip>:<tenant>".
func providerKey(p *state.Provider) string { return p.IPAddress + ":" + p.Tenant }

// selects reports whether every selector is among the labels (subset
// matching, used for both directions: docs/daemons.md §4.12 note).
func selects(sel, labels map[string]string) bool {
	for k, v := range sel {
		if w, ok := labels[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// withProviders returns a copy of svc with the provider map prov.
func withProviders(svc *state.ServiceLB, prov map[string]*state.Provider) *state.ServiceLB {
	n := *svc
	n.Providers = prov
	return &n
}

// matchingProviders returns the started containers of tenant whose labels
// satisfy sel, keyed by provider key (the lowest container id wins a key
// collision, so the choice does not depend on map order).
func (c *Cache) matchingProviders(tenant string, sel map[string]string) map[string]*state.Provider {
	ids := make([]string, 0, len(c.providers))
	for id := range c.providers {
		ids = append(ids, id)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(ids)))
	out := map[string]*state.Provider{}
	for _, id := range ids {
		p := c.providers[id]
		if p.Tenant == tenant && selects(sel, p.Labels) {
			out[providerKey(p)] = p
		}
	}
	return out
}

// recordOf is the persisted form of svc: each provider lists the services
// of view that hold it.
func recordOf(svc *state.ServiceLB, view map[string]*state.ServiceLB) state.ServiceLB {
	rec := *svc
	rec.Providers = make(map[string]*state.Provider, len(svc.Providers))
	for key, p := range svc.Providers {
		cp := *p
		cp.Services = nil
		for id, other := range view {
			if q, ok := other.Providers[key]; ok && q.ContainerID == p.ContainerID {
				cp.Services = append(cp.Services, id)
			}
		}
		sort.Strings(cp.Services)
		rec.Providers[key] = &cp
	}
	if rec.Selectors == nil {
		rec.Selectors = map[string]string{}
	}
	return rec
}

// providerList is the published provider address list of svc.
func providerList(svc *state.ServiceLB) state.SvcProvider {
	sp := state.SvcProvider{Common: state.Common{ID: svc.ID}, ServiceName: svc.ID, Providers: []string{}}
	for _, p := range svc.Providers {
		sp.Providers = append(sp.Providers, p.IPAddress)
	}
	sort.Strings(sp.Providers)
	return sp
}

// writeService persists svc (as seen together with view) and publishes its
// provider list; with publishEmpty false an empty list is removed instead.
func (c *Cache) writeService(ctx context.Context, svc *state.ServiceLB, view map[string]*state.ServiceLB, publishEmpty bool) error {
	if _, err := c.st.ServiceLBs.Write(ctx, recordOf(svc, view)); err != nil {
		return fmt.Errorf("write service state %q: %w", svc.ID, err)
	}
	if len(svc.Providers) == 0 && !publishEmpty {
		if err := c.st.Providers.Clear(ctx, svc.ID); err != nil {
			return fmt.Errorf("withdraw providers of %q: %w", svc.ID, err)
		}
		return nil
	}
	if _, err := c.st.Providers.Write(ctx, providerList(svc)); err != nil {
		return fmt.Errorf("publish providers of %q: %w", svc.ID, err)
	}
	return nil
}

// updateProviders replaces the provider maps of the services in next
// (service id → new map), persisting and publishing each; the cache takes
// each change once it is stored. Called with c.mu held.
func (c *Cache) updateProviders(ctx context.Context, next map[string]map[string]*state.Provider) error {
	view := maps.Clone(c.services)
	for id, prov := range next {
		view[id] = withProviders(c.services[id], prov)
	}
	ids := make([]string, 0, len(next))
	for id := range next {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var errs []error
	for _, id := range ids {
		if err := c.writeService(ctx, view[id], view, true); err != nil {
			errs = append(errs, err)
			continue
		}
		c.services[id] = view[id]
	}
	return errors.Join(errs...)
}

// Start records a started container and adds it to every service
// of its tenant whose selectors its labels satisfy (after taking a
// previous start of the same container out).
func (c *Cache) Start(ctx context.Context, p *state.Provider) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.providers[p.ContainerID] = p
	next := map[string]map[string]*state.Provider{}
	for id, svc := range c.services {
		prov := withoutContainer(svc.Providers, p.ContainerID)
		if svc.Tenant == p.Tenant && selects(svc.Selectors, p.Labels) {
			if prov == nil {
				prov = maps.Clone(svc.Providers)
			}
			prov[providerKey(p)] = p
		}
		if prov != nil {
			next[id] = prov
		}
	}
	return c.updateProviders(ctx, next)
}

// Die takes a container out of every service it provides and
// forgets it; known is false for a container that never started.
func (c *Cache) Die(ctx context.Context, containerID string) (known bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.providers[containerID]; !ok {
		return false, nil
	}
	next := map[string]map[string]*state.Provider{}
	for id, svc := range c.services {
		if prov := withoutContainer(svc.Providers, containerID); prov != nil {
			next[id] = prov
		}
	}
	if err := c.updateProviders(ctx, next); err != nil {
		return true, err
	}
	delete(c.providers, containerID)
	return true, nil
}

// withoutContainer returns a copy of prov without the entries of the
// container, or nil when it has none.
func withoutContainer(prov map[string]*state.Provider, containerID string) map[string]*state.Provider {
	var out map[string]*state.Provider
	for k, p := range prov {
		if p.ContainerID != containerID {
			continue
		}
		if out == nil {
			out = maps.Clone(prov)
		}
		delete(out, k)
	}
	return out
}

// Restore rebuilds the cache from the store: the services from their
// records, the started containers from those records' providers and from
// every endpoint of eps carrying labels and a container id.
func (c *Cache) Restore(ctx context.Context, eps []state.Endpoint) error {
	recs, _, err := c.st.ServiceLBs.ReadAll(ctx)
	if err != nil && !errors.Is(err, objdb.ErrNotFound) {
		return fmt.Errorf("read service states: %w", err)
	}
	services, providers := map[string]*state.ServiceLB{}, map[string]*state.Provider{}
	for _, rec := range recs {
		svc := rec
		prov := make(map[string]*state.Provider, len(rec.Providers))
		for key, p := range rec.Providers {
			if p == nil {
				continue
			}
			cp := *p
			cp.Services = nil
			if known, ok := providers[cp.ContainerID]; ok {
				prov[key] = known
				continue
			}
			providers[cp.ContainerID] = &cp
			prov[key] = &cp
		}
		svc.Providers = prov
		services[svc.ID] = &svc
	}
	for _, ep := range eps {
		if len(ep.Labels) == 0 || ep.ContainerID == "" {
			continue
		}
		if _, ok := providers[ep.ContainerID]; ok {
			continue
		}
		ns, err := c.st.Networks.Read(ctx, ep.NetID)
		if errors.Is(err, objdb.ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read network state %q: %w", ep.NetID, err)
		}
		providers[ep.ContainerID] = &state.Provider{IPAddress: ep.IPAddress, ContainerID: ep.ContainerID,
			Labels: maps.Clone(ep.Labels), Tenant: ns.Tenant, Network: ns.NetworkName, EpIDKey: ep.ID}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.services, c.providers = services, providers
	return nil
}

// StartedProvider is the provider a start event makes of endpoint ep
// (after its labels were merged): the request's address (the endpoint's
// when the request has none) and the endpoint's labels.
func StartedProvider(req *pluginapi.UpdateEndpointRequest, ep state.Endpoint) *state.Provider {
	p := &state.Provider{IPAddress: req.IPAddress, ContainerID: req.ContainerID, Labels: maps.Clone(ep.Labels),
		Tenant: req.Tenant, Network: req.Network, EpIDKey: ep.ID}
	if p.IPAddress == "" {
		p.IPAddress = ep.IPAddress
	}
	return p
}
