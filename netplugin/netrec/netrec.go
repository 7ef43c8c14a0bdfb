// Package netrec is netplugin's network and group reconciler (keys
// network/<id> and group/<id> of docs/architecture.md "netplugin
// reconcilers"): it puts the store's networks into their bridge's datapath
// (with the host's port on an infra network), takes out those the store no
// longer has, and brings the policing, meter and DSCP of a group's local
// endpoints to the group's values. Desired state is the followers' caches
// of the store; applied state is kept here, and so are the networks and
// groups the attach path sees (KnownNetwork, Group). A failed step returns
// an error so the work queue (netplugin/reconcile) retries it until it
// converges.
package netrec

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/netplugin/attachsvc"
	"github.com/contiv/netplugin/ofnet/agent"
	"github.com/contiv/netplugin/state"
	"github.com/contiv/netplugin/utils/ctxutil"
)

// The kinds of reconcile keys this package serves.
const (
	KindNetwork = "network" // network/<state id>
	KindGroup   = "group"   // group/<state id>
)

// Datapath is what the network and group reconcilers drive of a bridge's
// agent.
type Datapath interface {
	AddNetwork(ctx context.Context, vlan uint16, vni uint32, gateway string, vrf string) error
	RemoveNetwork(ctx context.Context, vlan uint16, vni uint32, gateway string, vrf string) error
	UpdateLocalEndpoint(ctx context.Context, ep agent.EndpointInfo) error
}

// Locals are the local endpoints (*attachsvc.Service): the group
// reconciler updates their QoS, the network reconciler the host's port on
// an infra network.
type Locals interface {
	All() []attachsvc.Local
	SetQoS(id string, q attachsvc.QoS) bool
	InfraUp(ctx context.Context, nw state.Network) error
	InfraDown(ctx context.Context, nw state.Network) error
}

// Policing is what the group reconciler asks of OVSDB (*ovsdriver.Driver).
type Policing interface {
	UpdatePolicing(ctx context.Context, portName, bandwidth string, burst int) error
}

// Desired reads the desired state of one kind (a store follower).
type Desired[T any] interface {
	Get(id string) (T, bool)
}

// Config is the desired state and what the reconciler drives.
type Config struct {
	Networks Desired[state.Network]
	Groups   Desired[state.EndpointGroup]
	// Store reads a network the followers have not brought yet.
	Store    state.Collection[state.Network]
	Datapath func(nw state.Network) Datapath // the datapath of a network's bridge
	Locals   Locals
	Policing Policing
	// Meters: the userspace datapath, which ignores the ingress policing,
	// gets a group's bandwidth limit as OpenFlow meters (docs/traffic.md).
	Meters bool
	// Changed is told after every reconcile of a network (nil: nobody):
	// what the applied networks decide (the routes through contivh1) may
	// have changed.
	Changed func()
	Log     logrus.FieldLogger
}

// Reconciler converges networks and groups; safe for concurrent use.
type Reconciler struct {
	cfg Config

	mu       sync.Mutex
	networks map[string]state.Network       // known to the attach path, by state id
	groups   map[string]state.EndpointGroup // known to the attach path, by state id
	applied  map[string]state.Network       // in the datapath
	infra    map[string]bool                // infra networks whose host port is up
}

// New makes the reconciler of cfg with nothing applied.
func New(cfg Config) *Reconciler {
	return &Reconciler{cfg: cfg, networks: map[string]state.Network{}, groups: map[string]state.EndpointGroup{},
		applied: map[string]state.Network{}, infra: map[string]bool{}}
}

// KnownNetwork is a network the agent has, without waiting.
func (r *Reconciler) KnownNetwork(id string) (state.Network, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	nw, ok := r.networks[id]
	return nw, ok
}

// Group is an endpoint group the agent has.
func (r *Reconciler) Group(id string) (state.EndpointGroup, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	g, ok := r.groups[id]
	return g, ok
}

// Applied lists the networks in the datapath (the resync puts them back so
// leftovers are removed).
func (r *Reconciler) Applied() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Collect(maps.Keys(r.applied))
}

// AppliedNetworks are the networks in the datapath.
func (r *Reconciler) AppliedNetworks() []state.Network {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Collect(maps.Values(r.applied))
}

// IsApplied reports whether network id is in the datapath.
func (r *Reconciler) IsApplied(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.applied[id]
	return ok
}

// Network returns a network's state, from the cache or the store (a
// network created a moment ago may not have reached the watch yet).
func (r *Reconciler) Network(ctx context.Context, id string) (state.Network, error) {
	if nw, ok := r.KnownNetwork(id); ok {
		return nw, nil
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		nw, err := r.cfg.Store.Read(ctx, id)
		if err != nil {
			return nw, fmt.Errorf("network %s: %w", id, err)
		}
		if _, ok := r.KnownNetwork(id); ok || time.Now().After(deadline) {
			return nw, nil
		}
		// Let the network watch add it to the datapath first.
		if !ctxutil.Sleep(ctx, 50*time.Millisecond) {
			return nw, ctx.Err()
		}
	}
}

// sameSegment reports whether two versions of a network use the same
// datapath segment (a network deleted and created again under the same id
// may not).
func sameSegment(a, b state.Network) bool {
	return a.PktTagType == b.PktTagType && a.PktTag == b.PktTag && a.ExtPktTag == b.ExtPktTag &&
		a.Gateway == b.Gateway && a.Tenant == b.Tenant
}

func vniOf(nw state.Network) uint32 {
	if nw.PktTagType == "vxlan" {
		return uint32(nw.ExtPktTag)
	}
	return 0
}
