package master

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"sync"

	"github.com/contiv/netplugin/netmaster/pluginapi"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/state"
)

// svcLBCache is a leadership term's view of the service load balancer
// (docs/daemons.md §4.12): the running services by "<svc>:<tenant>" and the
// started containers (potential providers) by container id. It is rebuilt
// from the store at the start of every term (restoreServices).
//
// Values are never changed in place: an update stores a new
// *state.ServiceLB, so a pointer handed out stays a consistent snapshot
// and an undo can put the previous pointer back. The providers of a
// service are shared *state.Provider values whose Services member is left
// empty here and computed when a record is written (recordOf).
type svcLBCache struct {
	mu        sync.Mutex
	services  map[string]*state.ServiceLB
	providers map[string]*state.Provider
}

func newSvcLBCache() *svcLBCache {
	return &svcLBCache{services: map[string]*state.ServiceLB{}, providers: map[string]*state.Provider{}}
}

// get returns the running service id.
func (c *svcLBCache) get(id string) (*state.ServiceLB, bool) {
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
func (c *svcLBCache) matchingProviders(tenant string, sel map[string]string) map[string]*state.Provider {
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
func (m *master) writeService(ctx context.Context, svc *state.ServiceLB, view map[string]*state.ServiceLB, publishEmpty bool) error {
	if _, err := m.st.ServiceLBs.Write(ctx, recordOf(svc, view)); err != nil {
		return fmt.Errorf("write service state %q: %w", svc.ID, err)
	}
	if len(svc.Providers) == 0 && !publishEmpty {
		if err := m.st.Providers.Clear(ctx, svc.ID); err != nil {
			return fmt.Errorf("withdraw providers of %q: %w", svc.ID, err)
		}
		return nil
	}
	if _, err := m.st.Providers.Write(ctx, providerList(svc)); err != nil {
		return fmt.Errorf("publish providers of %q: %w", svc.ID, err)
	}
	return nil
}

// updateProviders replaces the provider maps of the services in next
// (service id → new map), persisting and publishing each; the cache takes
// each change once it is stored. Called with c.mu held.
func (m *master) updateProviders(ctx context.Context, next map[string]map[string]*state.Provider) error {
	c := m.svcLB
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
		if err := m.writeService(ctx, view[id], view, true); err != nil {
			errs = append(errs, err)
			continue
		}
		c.services[id] = view[id]
	}
	return errors.Join(errs...)
}

// providerStart records a started container and adds it to every service
// of its tenant whose selectors its labels satisfy (after taking a
// previous start of the same container out).
func (m *master) providerStart(ctx context.Context, p *state.Provider) error {
	c := m.svcLB
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
	return m.updateProviders(ctx, next)
}

// providerDie takes a container out of every service it provides and
// forgets it; known is false for a container that never started.
func (m *master) providerDie(ctx context.Context, containerID string) (known bool, err error) {
	c := m.svcLB
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
	if err := m.updateProviders(ctx, next); err != nil {
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

// restoreServices rebuilds the cache from the store: the services from
// their records, the started containers from those records' providers and
// from every endpoint carrying labels and a container id.
func (m *master) restoreServices(ctx context.Context) error {
	recs, _, err := m.st.ServiceLBs.ReadAll(ctx)
	if err != nil && !errors.Is(err, objdb.ErrNotFound) {
		return fmt.Errorf("read service states: %w", err)
	}
	c := newSvcLBCache()
	for _, rec := range recs {
		svc := rec
		prov := make(map[string]*state.Provider, len(rec.Providers))
		for key, p := range rec.Providers {
			if p == nil {
				continue
			}
			cp := *p
			cp.Services = nil
			if known, ok := c.providers[cp.ContainerID]; ok {
				prov[key] = known
				continue
			}
			c.providers[cp.ContainerID] = &cp
			prov[key] = &cp
		}
		svc.Providers = prov
		c.services[svc.ID] = &svc
	}
	eps, err := m.allEndpoints(ctx)
	if err != nil {
		return err
	}
	for _, ep := range eps {
		if len(ep.Labels) == 0 || ep.ContainerID == "" {
			continue
		}
		if _, ok := c.providers[ep.ContainerID]; ok {
			continue
		}
		ns, err := m.st.Networks.Read(ctx, ep.NetID)
		if errors.Is(err, objdb.ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read network state %q: %w", ep.NetID, err)
		}
		c.providers[ep.ContainerID] = &state.Provider{IPAddress: ep.IPAddress, ContainerID: ep.ContainerID,
			Labels: maps.Clone(ep.Labels), Tenant: ns.Tenant, Network: ns.NetworkName, EpIDKey: ep.ID}
	}
	m.svcLB.mu.Lock()
	defer m.svcLB.mu.Unlock()
	m.svcLB.services, m.svcLB.providers = c.services, c.providers
	return nil
}

// startedProvider is the provider a start event makes of endpoint ep
// (after its labels were merged): the request's address (the endpoint's
// when the request has none) and the endpoint's labels.
func startedProvider(req *pluginapi.UpdateEndpointRequest, ep state.Endpoint) *state.Provider {
	p := &state.Provider{IPAddress: req.IPAddress, ContainerID: req.ContainerID, Labels: maps.Clone(ep.Labels),
		Tenant: req.Tenant, Network: req.Network, EpIDKey: ep.ID}
	if p.IPAddress == "" {
		p.IPAddress = ep.IPAddress
	}
	return p
}
