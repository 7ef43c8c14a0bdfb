// Package svcrec is netplugin's service reconciler (docs/services.md; keys
// service/<id> and provider/<id> of docs/architecture.md "netplugin
// reconcilers"): it puts the store's service load balancers and their
// provider lists into both bridges' datapaths and the name server. Desired
// state is the followers' caches of the store; applied state is kept here.
// A failed step returns an error so the work queue (netplugin/reconcile)
// retries it until it converges. The package also serves the Kubernetes
// Services (KubeSink) and merges the service counters (Stats).
package svcrec

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/ofnet/agent"
	"github.com/contiv/netplugin/state"
)

// Datapath is what the service reconciler and the Kubernetes Services
// drive of one bridge's agent.
type Datapath interface {
	AddSvcSpec(ctx context.Context, name string, spec agent.ServiceSpec) error
	DelSvcSpec(ctx context.Context, name string) error
	SvcProviderUpdate(ctx context.Context, name string, providers []string) error
	ServiceStats(ctx context.Context) ([]agent.ServiceStats, error)
	EndpointVrfs(ips []string) map[string][]string
}

// Names is the name server's side of services (*nameserver.Server).
type Names interface {
	SetService(tenant, name, ip string)
}

// Desired reads the desired state of one kind (a store follower).
type Desired[T any] interface {
	Get(id string) (T, bool)
}

// Config is the desired state and what the reconciler drives.
type Config struct {
	Services  Desired[state.ServiceLB]
	Providers Desired[state.SvcProvider]
	// Datapaths are the datapaths a service lives in: both bridges, as the
	// original (the VIP's network decides which one carries its clients).
	Datapaths []Datapath
	Names     Names
	Log       logrus.FieldLogger
}

// Reconciler converges services and providers; safe for concurrent use.
type Reconciler struct {
	cfg Config

	mu    sync.Mutex
	svcs  map[string]appliedService   // applied service specs by state id
	provs map[string]appliedProviders // applied provider lists by state id
}

type appliedService struct {
	spec         agent.ServiceSpec
	tenant, name string
}

type appliedProviders struct {
	name string
	list []string
}

// New makes the reconciler of cfg with nothing applied.
func New(cfg Config) *Reconciler {
	return &Reconciler{cfg: cfg, svcs: map[string]appliedService{}, provs: map[string]appliedProviders{}}
}

// Applied lists the ids of the applied services and provider lists (the
// resync puts them back so leftovers are removed).
func (r *Reconciler) Applied() (svcs, provs []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Collect(maps.Keys(r.svcs)), slices.Collect(maps.Keys(r.provs))
}

// ReconcileService puts a service with a VIP into both datapaths and the
// name server, or takes it out. A malformed service is refused once (it
// changes nothing and is not retried).
func (r *Reconciler) ReconcileService(ctx context.Context, id string) error {
	s, want := r.cfg.Services.Get(id)
	r.mu.Lock()
	have, had := r.svcs[id]
	r.mu.Unlock()
	if want && s.IPAddress != "" {
		spec, err := Spec(s)
		if err != nil {
			r.cfg.Log.WithError(err).Warn("service ignored")
			return nil
		}
		if !had || !sameServiceSpec(have.spec, spec) {
			for _, a := range r.cfg.Datapaths {
				if err := a.AddSvcSpec(ctx, id, spec); err != nil {
					return fmt.Errorf("add service %s to the datapath: %w", id, err)
				}
			}
			r.mu.Lock()
			r.svcs[id] = appliedService{spec: spec, tenant: s.Tenant, name: s.ServiceName}
			r.mu.Unlock()
		}
		r.cfg.Names.SetService(s.Tenant, s.ServiceName, s.IPAddress)
		return nil
	}
	if !had {
		return nil
	}
	for _, a := range r.cfg.Datapaths {
		if err := a.DelSvcSpec(ctx, id); err != nil {
			return fmt.Errorf("remove service %s from the datapath: %w", id, err)
		}
	}
	r.mu.Lock()
	delete(r.svcs, id)
	r.mu.Unlock()
	r.cfg.Names.SetService(have.tenant, have.name, "")
	return nil
}

func sameServiceSpec(a, b agent.ServiceSpec) bool {
	return a.Vrf == b.Vrf && a.IpAddress == b.IpAddress && slices.Equal(a.Ports, b.Ports) &&
		a.AffinityTimeout == b.AffinityTimeout
}

// ReconcileProviders gives both datapaths a service's provider list; a
// deleted list empties it.
func (r *Reconciler) ReconcileProviders(ctx context.Context, id string) error {
	p, want := r.cfg.Providers.Get(id)
	r.mu.Lock()
	have, had := r.provs[id]
	r.mu.Unlock()
	if !want {
		if !had {
			return nil
		}
		for _, a := range r.cfg.Datapaths {
			if err := a.SvcProviderUpdate(ctx, have.name, nil); err != nil {
				return fmt.Errorf("empty the providers of service %s: %w", have.name, err)
			}
		}
		r.mu.Lock()
		delete(r.provs, id)
		r.mu.Unlock()
		return nil
	}
	name := p.ServiceName
	if name == "" {
		name = p.ID
	}
	if had && have.name == name && slices.Equal(have.list, p.Providers) {
		return nil
	}
	for _, a := range r.cfg.Datapaths {
		if err := a.SvcProviderUpdate(ctx, name, p.Providers); err != nil {
			return fmt.Errorf("update the providers of service %s: %w", name, err)
		}
	}
	r.mu.Lock()
	r.provs[id] = appliedProviders{name: name, list: slices.Clone(p.Providers)}
	r.mu.Unlock()
	return nil
}

// Spec turns a service LB state (docs/services.md) into the datapath's
// spec. Ports are "<svcPort>:<provPort>:<protocol>"; one malformed entry
// refuses the whole service (§6.3).
func Spec(s state.ServiceLB) (agent.ServiceSpec, error) {
	spec := agent.ServiceSpec{Vrf: s.Tenant, IpAddress: s.IPAddress}
	for _, p := range s.Ports {
		parts := strings.Split(p, ":")
		if len(parts) != 3 {
			return spec, fmt.Errorf("service %s: port %q is not <svcPort>:<provPort>:<protocol>", s.ID, p)
		}
		svc, err1 := strconv.ParseUint(parts[0], 10, 16)
		prov, err2 := strconv.ParseUint(parts[1], 10, 16)
		if err1 != nil || err2 != nil {
			return spec, fmt.Errorf("service %s: port %q: ports must be 0..65535", s.ID, p)
		}
		spec.Ports = append(spec.Ports, agent.ServicePort{Protocol: strings.ToUpper(parts[2]),
			SvcPort: uint16(svc), ProvPort: uint16(prov)})
	}
	return spec, nil
}
