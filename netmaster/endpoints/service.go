// Package endpoints is the /plugin/* endpoint API the netplugin agents call
// (docs/rest-api.md §3; docs/daemons.md §4.10) and everything about an
// endpoint's lifetime and the ownership of addresses, within one netmaster
// leadership term. plugin.go routes the /plugin/* calls, one file each,
// read top-down in call order: allocAddress (alloc.go, which also holds the
// address helpers create.go shares), releaseAddress with its ownership
// checks (release.go), createEndpoint (create.go), deleteEndpoint
// (delete.go), updateEndpoint (update.go); request checks are in
// validate.go. Also here: service VIPs (servicelb_vip.go), the endpoint
// and group counters (counters.go, perf_counters.go, repair.go), endpoint
// inspect (endpoint.go) and the packet trace relay (trace.go). What is
// taken back once records and pools disagree or an owner is gone — the
// leaked-address sweep, the counter recount, host GC's deletion half,
// /debug/epcleanup — is netmaster/endpoints/reclaim, which New wires in.
//
// Every allocation is a compare-and-swap in the store, so two netmasters
// that briefly both believe they lead never hand out one value twice
// (docs/allocation-integrity.md).
package endpoints

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gorilla/mux"
	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/netmaster/agents"
	"github.com/contiv/netplugin/netmaster/endpoints/reclaim"
	"github.com/contiv/netplugin/netmaster/ipam"
	"github.com/contiv/netplugin/netmaster/svclb"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/state"
)

// Config is what the endpoint service of one term works with.
type Config struct {
	KV    objdb.KV
	State *state.Store
	V4    *ipam.V4
	V6    *ipam.V6
	// Services is the agent discovery registry (the netplugins' VTEP
	// addresses, for epcleanup and trace); nil: none.
	Services objdb.ServiceRegistry
	// ClusterMode is the --mode of the daemon (docker, kubernetes,
	// swarm-mode, test).
	ClusterMode string
	// NetpluginPort is the port of the netplugins' agent RPC serving the
	// Netplugin service (reclaim, trace, BGP state; 0:
	// ofrpc.VxlanAgentPort).
	NetpluginPort int
	// Agents calls the netplugins' agent RPC (nil: those calls fail).
	Agents AgentCaller
	Log    *logrus.Entry
}

// Service is the endpoint side of one leadership term. The object
// controllers (netmaster/controllers) reach its state only through its
// exported methods.
type Service struct {
	cfg Config
	log *logrus.Entry
	kv  objdb.KV
	st  *state.Store
	v4  *ipam.V4
	v6  *ipam.V6

	// topo orders endpoint operations (shared) against the deletion of
	// the networks and groups they attach to (exclusive, LockTopology),
	// within this process; the store's compare-and-swap covers other
	// processes.
	topo sync.RWMutex

	ctrMu sync.Mutex
	ctrs  map[string]*counters // per state id: batched counter updates

	// netCache and epgCache hold network and group states for the
	// endpoint path, which only uses their immutable fields (subnet, type,
	// pool, group id). Entries are dropped when the object is created or
	// deleted (ForgetNetwork, ForgetGroup, under LockTopology).
	netCache sync.Map // netID -> state.Network
	epgCache sync.Map // epgID -> state.EndpointGroup
	recs     recordCache

	rc *reclaim.Collector // sweep, recount, host GC, epcleanup

	sweepWG   sync.WaitGroup
	closeOnce sync.Once

	// Background work started by requests (repair.go), stopped with the
	// term: termCtx is the term's context, bgClosed set by Close.
	bgMu          sync.Mutex
	bgClosed      bool
	repairPending bool
	termCtx       context.Context

	svc objdb.ServiceRegistry // agent discovery (netmaster/agents)

	svcLB *svclb.Cache // service load balancer (netmaster/svclb)
}

var _ agents.Hosts = (*Service)(nil)

// New returns the endpoint service of a term over cfg's store and pools.
func New(cfg Config) *Service {
	m := &Service{
		cfg:  cfg,
		log:  cfg.Log,
		kv:   cfg.KV,
		st:   cfg.State,
		v4:   cfg.V4,
		v6:   cfg.V6,
		svc:  cfg.Services,
		ctrs: map[string]*counters{},
	}
	if m.log == nil {
		m.log = logrus.NewEntry(logrus.StandardLogger())
	}
	m.svcLB = svclb.New(m.st, vipOwner{m})
	m.rc = reclaim.New(reclaim.Config{KV: m.kv, State: m.st, V4: m.v4, V6: m.v6,
		Endpoints: reclaimEndpoints{m}, Topology: &m.topo, Log: m.log})
	return m
}

// ServiceLB is the term's service load balancer, whose VIPs this service
// owns and whose providers are its endpoints.
func (m *Service) ServiceLB() *svclb.Cache { return m.svcLB }

// Start begins the term's endpoint work once the model is loaded: it
// sweeps leaked addresses (at once when sweepDelay is 0, else sweepDelay
// later: a previous leader cut off from the store has stopped writing by
// then), rebuilds the service load balancer and recounts the endpoint
// counters. Background work ends with ctx; Close waits for it.
func (m *Service) Start(ctx context.Context, sweepDelay time.Duration) error {
	m.bgMu.Lock()
	m.termCtx = ctx
	m.bgMu.Unlock()
	if sweepDelay <= 0 {
		if err := m.rc.Sweep(ctx); err != nil {
			return err
		}
	}
	sc, err := m.rc.ScanEndpoints(ctx)
	if err != nil {
		return err
	}
	if err := m.restoreServices(ctx, sc); err != nil {
		return fmt.Errorf("restore service load balancers: %w", err)
	}
	if err := m.rc.CorrectCounters(ctx, sc); err != nil {
		return fmt.Errorf("reconcile endpoint counters: %w", err)
	}
	if sweepDelay > 0 {
		m.sweepWG.Add(1)
		go func() {
			defer m.sweepWG.Done()
			select {
			case <-ctx.Done():
				return
			case <-time.After(sweepDelay):
			}
			if err := m.rc.Sweep(ctx); err != nil && ctx.Err() == nil {
				m.log.WithError(err).Error("sweep leaked addresses")
			}
		}()
	}
	return nil
}

// AddRoutes serves the /plugin/* API, /debug/epcleanup, /debug/sweep and
// /trace on r; reg answers the /plugin/* errors and bounds their bodies.
func (m *Service) AddRoutes(r *mux.Router, reg *contivmodel.Registry) {
	m.addPluginRoutes(r, reg)
	m.rc.AddRoutes(r, reg)
	m.addTraceRoute(r)
}

// Close stops the background work and waits for it (it ends with the
// term's context).
func (m *Service) Close() {
	m.closeOnce.Do(func() {
		m.bgMu.Lock()
		m.bgClosed = true
		m.bgMu.Unlock()
		m.sweepWG.Wait()
	})
}

// LockTopology excludes every endpoint operation of this process until
// UnlockTopology: the object controllers hold it while they create or
// delete networks and groups.
func (m *Service) LockTopology() { m.topo.Lock() }

// UnlockTopology ends LockTopology.
func (m *Service) UnlockTopology() { m.topo.Unlock() }

// ForgetNetwork drops the cached state of network netID (created or
// deleted under LockTopology).
func (m *Service) ForgetNetwork(netID string) { m.netCache.Delete(netID) }

// ForgetGroup drops the cached state of group epgID (created or deleted
// under LockTopology).
func (m *Service) ForgetGroup(epgID string) { m.epgCache.Delete(epgID) }

// netState reads a network state through netCache.
func (m *Service) netState(ctx context.Context, netID string) (state.Network, error) {
	if v, ok := m.netCache.Load(netID); ok {
		return v.(state.Network), nil
	}
	ns, err := m.st.Networks.Read(ctx, netID)
	if err == nil {
		m.netCache.Store(netID, ns)
	}
	return ns, err
}

// epgState reads a group state through epgCache.
func (m *Service) epgState(ctx context.Context, epgID string) (state.EndpointGroup, error) {
	if v, ok := m.epgCache.Load(epgID); ok {
		return v.(state.EndpointGroup), nil
	}
	gs, err := m.st.EndpointGroups.Read(ctx, epgID)
	if err == nil {
		m.epgCache.Store(epgID, gs)
	}
	return gs, err
}

// AllEndpoints reads every endpoint state.
func (m *Service) AllEndpoints(ctx context.Context) ([]state.Endpoint, error) {
	eps, _, err := m.st.Endpoints.ReadAll(ctx)
	if err != nil {
		return nil, fmt.Errorf("read endpoints: %w", err)
	}
	return eps, nil
}

// UndoContext is the context of a rollback: it outlives the request.
func UndoContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// Snapshot records the raw values of keys and returns a function putting
// them back (deleting those that did not exist): the undo of a sequence of
// state writes done under the model's write lock.
func (m *Service) Snapshot(ctx context.Context, keys ...string) (func(), error) {
	type saved struct {
		key string
		val []byte
		ok  bool
	}
	var snap []saved
	for _, k := range keys {
		kv, err := m.kv.Get(ctx, k)
		switch {
		case err == nil:
			snap = append(snap, saved{k, kv.Value, true})
		case errors.Is(err, objdb.ErrNotFound):
			snap = append(snap, saved{key: k})
		default:
			return nil, fmt.Errorf("snapshot %q: %w", k, err)
		}
	}
	return func() {
		ctx, cancel := UndoContext()
		defer cancel()
		for i := len(snap) - 1; i >= 0; i-- {
			s := snap[i]
			var err error
			if s.ok {
				_, err = m.kv.Put(ctx, s.key, s.val)
			} else {
				err = m.kv.Delete(ctx, s.key)
			}
			if err != nil {
				m.log.WithError(err).WithField("key", s.key).Error("roll back state")
			}
		}
	}, nil
}

// CollectHost deletes every endpoint homed on hostname and the host's
// records (reclaim.Collector.CollectHost); n is the number of endpoints
// deleted.
func (m *Service) CollectHost(ctx context.Context, hostname string) (n int, err error) {
	return m.rc.CollectHost(ctx, hostname)
}

// EndpointHosts lists, sorted, the homing hosts of the endpoints and the
// hosts of the node records (reclaim.Collector.EndpointHosts).
func (m *Service) EndpointHosts(ctx context.Context) ([]string, error) {
	return m.rc.EndpointHosts(ctx)
}

// reclaimEndpoints is the Service as the reclaim Collector's Endpoints.
type reclaimEndpoints struct{ *Service }

func (e reclaimEndpoints) RemoveEndpoint(ctx context.Context, netID, epID string) error {
	_, err := e.removeEndpoint(ctx, netID, epID)
	return err
}

func (e reclaimEndpoints) VtepsByHost(ctx context.Context) (map[string]string, error) {
	return e.vtepsByHost(ctx)
}
