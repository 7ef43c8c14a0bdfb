// Package attachsvc is netplugin's attach service: it owns the endpoints
// homed on this host (their OVS port and flows), the attaches and detaches
// under way, and the rollback of a failed attach (docs/architecture.md,
// "netplugin"). The reconcilers, the sweep, trace and the metrics read
// copies of the local endpoints; only this package changes them.
package attachsvc

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/api/attach"
	"github.com/contiv/netplugin/netplugin/masterclient"
	"github.com/contiv/netplugin/netplugin/ovsdriver"
	"github.com/contiv/netplugin/ofnet/agent"
	"github.com/contiv/netplugin/state"
)

// Local is an endpoint homed on this host with its OVS port.
type Local struct {
	EP     state.Endpoint
	Port   ovsdriver.EndpointPort
	Bridge string
	QoS    QoS // what the port and its flows have
}

// QoS is the bandwidth, burst and DSCP applied to a local endpoint; Known
// is false when they are not known (a port found at restart).
type QoS struct {
	Bandwidth string
	Burst     int
	DSCP      int
	Known     bool
}

// QoSOf is the bandwidth, burst and DSCP a group gives its endpoints.
func QoSOf(g state.EndpointGroup) QoS {
	return QoS{Bandwidth: g.Bandwidth, Burst: g.Burst, DSCP: g.DSCP, Known: true}
}

// Datapath is the endpoint part of a bridge's datapath.
type Datapath interface {
	AddLocalEndpoint(ctx context.Context, ep agent.EndpointInfo) error
	RemoveLocalEndpoint(ctx context.Context, portNo uint32) error
}

// Ports is the part of the OVSDB driver the service needs.
type Ports interface {
	CreateEndpoint(ctx context.Context, spec ovsdriver.EndpointSpec) (ovsdriver.EndpointPort, error)
	DeleteEndpoint(ctx context.Context, bridge, portName string) error
}

// Master is the part of netmaster's /plugin API the service calls.
type Master interface {
	CreateEndpoint(ctx context.Context, req masterclient.CreateEndpointRequest) (state.Endpoint, error)
	DeleteEndpoint(ctx context.Context, req masterclient.DeleteEndpointRequest) (state.Endpoint, error)
	UpdateEndpoint(ctx context.Context, req masterclient.UpdateEndpointRequest) error
}

// Cluster is what the service reads of the agent's view of the cluster.
type Cluster interface {
	// Network is a network's state, waiting briefly for a network created a
	// moment ago to reach the agent.
	Network(ctx context.Context, id string) (state.Network, error)
	// KnownNetwork is a network the agent has, without waiting.
	KnownNetwork(id string) (state.Network, bool)
	// Group is an endpoint group the agent has.
	Group(id string) (state.EndpointGroup, bool)
	// EndpointInfo describes a local endpoint to its datapath.
	EndpointInfo(le Local, nw state.Network) agent.EndpointInfo
	// Release deletes in netmaster an endpoint of this host that no attach
	// owns (a create whose answer was lost).
	Release(ctx context.Context, epID string) error
}

// Hooks are the agent's reactions to the service's changes; any may be nil.
type Hooks struct {
	// Changed: a local endpoint was added or removed (BGP announcements).
	Changed func(le Local)
	// PolicyAttached holds an attach until the NetworkPolicy covers the pod.
	PolicyAttached func(ctx context.Context, req attach.Request, cidr string) error
	// PolicyDetached forgets what PolicyAttached gave.
	PolicyDetached func(req attach.DetachRequest)
	// Observe records the outcome and duration of an attach or detach.
	Observe func(op string, start time.Time, err error)
}

// Config is the service's wiring.
type Config struct {
	Host     string                       // this host's label
	Datapath func(bridge string) Datapath // the datapath of a bridge
	Ports    Ports
	Master   Master
	Store    *state.Store
	Cluster  Cluster
	Hooks    Hooks
	// Enqueue asks the work queue to reconcile a key of KindOper (nil: a
	// failed oper state write is not retried).
	Enqueue func(kind, name string)
	Log     logrus.FieldLogger
}

// Service owns the local endpoints and the attaches under way.
type Service struct {
	cfg Config
	log logrus.FieldLogger

	mu      sync.Mutex
	locals  map[string]*Local   // by endpoint state id
	pending map[string]struct{} // endpoint state ids being attached or detached
}

// New returns a service with no local endpoints.
func New(cfg Config) *Service {
	return &Service{cfg: cfg, log: cfg.Log, locals: map[string]*Local{}, pending: map[string]struct{}{}}
}

// Get is a copy of the local endpoint id.
func (s *Service) Get(id string) (Local, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	le, ok := s.locals[id]
	if !ok {
		return Local{}, false
	}
	return *le, true
}

// Has reports whether id is a local endpoint.
func (s *Service) Has(id string) bool {
	_, ok := s.Get(id)
	return ok
}

// Owns reports whether id is a local endpoint or one being attached or
// detached: nothing but the service may take it apart.
func (s *Service) Owns(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, local := s.locals[id]
	_, pending := s.pending[id]
	return local || pending
}

// Busy reports whether an attach or detach of id is under way.
func (s *Service) Busy(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, pending := s.pending[id]
	return pending
}

// Len is the number of local endpoints.
func (s *Service) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.locals)
}

// All is a copy of every local endpoint.
func (s *Service) All() []Local {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Local, 0, len(s.locals))
	for _, le := range s.locals {
		out = append(out, *le)
	}
	return out
}

// Put records a local endpoint whose port and flows exist (the replay of a
// restart, or a test).
func (s *Service) Put(le Local) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := le
	s.locals[le.EP.ID] = &c
}

// Forget drops a local endpoint from the table without touching its port
// (tests).
func (s *Service) Forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.locals, id)
}

// SetQoS records that endpoint id's port and flows now have q; false when
// the endpoint is no longer local.
func (s *Service) SetQoS(id string, q QoS) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	le, ok := s.locals[id]
	if ok {
		le.QoS = q
	}
	return ok
}

// Find finds a local endpoint by id, container id, or a part of the id
// that only one endpoint has; n is how many matched the part.
func (s *Service) Find(key string) (le Local, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.locals[key]; ok {
		return *l, 1
	}
	var found *Local
	for id, l := range s.locals {
		if l.EP.ContainerID == key {
			return *l, 1
		}
		if strings.Contains(id, key) {
			found = l
			n++
		}
	}
	if n == 1 {
		return *found, 1
	}
	return Local{}, n
}

// begin marks id pending unless it is local or pending already.
func (s *Service) begin(id string, orLocal bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.pending[id]; ok {
		return false
	}
	if _, ok := s.locals[id]; ok && orLocal {
		return false
	}
	s.pending[id] = struct{}{}
	return true
}

func (s *Service) end(id string) {
	s.mu.Lock()
	delete(s.pending, id)
	s.mu.Unlock()
}

func (s *Service) changed(le Local) {
	if s.cfg.Hooks.Changed != nil {
		s.cfg.Hooks.Changed(le)
	}
}

func (s *Service) observe(op string, start time.Time, err error) {
	if s.cfg.Hooks.Observe != nil {
		s.cfg.Hooks.Observe(op, start, err)
	}
}
