package svcrec

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/contiv/netplugin/mgmtfn/k8splugin/k8ssvc"
	"github.com/contiv/netplugin/ofnet/agent"
)

// KubeSink hands Kubernetes load balancers to the ofnet agents.
// A Service has no tenant of its own: it is in the tenant of its
// providers' endpoints (the one most of them are in), and keeps the last
// one while it has none.
type KubeSink struct {
	// Datapaths are the datapaths the load balancers go to (both bridges).
	Datapaths []Datapath

	mu      sync.Mutex
	tenants map[string]string // service → tenant last used (nil until the first Put)
}

// Put serves the load balancer lb (k8ssvc.Sink).
func (s *KubeSink) Put(ctx context.Context, lb k8ssvc.LB) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tenants == nil {
		s.tenants = map[string]string{}
	}
	agents := s.Datapaths
	vrfs := map[string][]string{}
	for _, a := range agents {
		for ip, vs := range a.EndpointVrfs(lb.Providers) {
			vrfs[ip] = append(vrfs[ip], vs...)
		}
	}
	tenant, provs, unknown := pickTenant(lb.Providers, vrfs)
	if tenant == "" {
		tenant = s.tenants[lb.Name]
	}
	if tenant == "" {
		if len(unknown) > 0 {
			return fmt.Errorf("no endpoint of this host's datapaths has a provider address %v yet", unknown)
		}
		return nil // no provider and never had one: nothing to serve
	}
	spec := agent.ServiceSpec{Vrf: tenant, IpAddress: lb.VIP, AffinityTimeout: lb.AffinityTimeout}
	for _, p := range lb.Ports {
		spec.Ports = append(spec.Ports, agent.ServicePort{Protocol: p.Protocol, SvcPort: p.SvcPort, ProvPort: p.ProvPort})
	}
	var errs []error
	for _, a := range agents {
		if err := a.AddSvcSpec(ctx, lb.Name, spec); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := a.SvcProviderUpdate(ctx, lb.Name, provs); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	s.tenants[lb.Name] = tenant
	if len(unknown) > 0 {
		// Served by the known ones meanwhile; retried until the others
		// are known (a remote pod the store has not announced yet).
		return fmt.Errorf("providers %v are not endpoints of tenant %s here (yet)", unknown, tenant)
	}
	return nil
}

// Delete removes the load balancer name (k8ssvc.Sink).
func (s *KubeSink) Delete(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, a := range s.Datapaths {
		if err := a.DelSvcSpec(ctx, name); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	delete(s.tenants, name)
	return nil
}

// pickTenant chooses the tenant most providers are endpoints of (ties: the
// first by name) and answers the providers in it and those in none.
func pickTenant(providers []string, vrfs map[string][]string) (string, []string, []string) {
	count := map[string]int{}
	for _, p := range providers {
		for _, v := range vrfs[p] {
			count[v]++
		}
	}
	names := make([]string, 0, len(count))
	for v := range count {
		names = append(names, v)
	}
	sort.Strings(names)
	tenant := ""
	for _, v := range names {
		if tenant == "" || count[v] > count[tenant] {
			tenant = v
		}
	}
	var in, unknown []string
	for _, p := range providers {
		found := false
		for _, v := range vrfs[p] {
			if v == tenant {
				found = true
			}
		}
		if found {
			in = append(in, p)
		} else {
			unknown = append(unknown, p)
		}
	}
	return tenant, in, unknown
}
