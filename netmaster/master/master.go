// Package master is the netmaster leader's logic (docs/rest-api.md §2, §3;
// docs/daemons.md §4.5–§4.10): the contivmodel controllers for global, tenant,
// network, endpoint group and endpoint inspect, the /plugin/* API the
// netplugin agents call, and the Leader the netmaster daemon runs on every
// leadership acquisition.
//
// State lives in the store only: each leadership term builds a fresh model
// registry, IPAM and tag managers over it and drops them when the term
// ends, so a restarted or newly elected netmaster sees exactly what the
// previous one wrote. Every allocation (addresses, tags, endpoint-group
// ids, endpoint counters) is a compare-and-swap in the store, so two
// netmasters that briefly both believe they lead never hand out one value
// twice.
package master

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/netmaster/agents"
	"github.com/contiv/netplugin/netmaster/dockernets"
	"github.com/contiv/netplugin/netmaster/ipam"
	"github.com/contiv/netplugin/netmaster/resources"
	"github.com/contiv/netplugin/netmaster/server"
	"github.com/contiv/netplugin/netmaster/svclb"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/state"
	"github.com/contiv/netplugin/utils/daemonflags"
	"github.com/contiv/netplugin/utils/httpmetrics"
)

// Built-in defaults of the global object written at first start (spec
// docs/daemons.md §4.5).
const (
	DefaultArpMode   = "proxy"
	DefaultPvtSubnet = "172.19.0.0/16"
	DefaultVLANs     = "1-4094"
	DefaultVXLANs    = "1-10000"
	DefaultTenant    = "default"
	GlobalName       = "global"
)

// Config is what the leader needs from the command line.
type Config struct {
	Infra       string // --infra: default or aci
	FwdMode     string // --fwdmode: bridge or routing
	ClusterMode string // --mode: docker, kubernetes, swarm-mode, test
	// LeaderTTL is the leader lock's TTL. A new term sweeps leaked
	// addresses this long after it starts (a previous leader cut off
	// from the store has stopped writing by then); 0 sweeps at once.
	LeaderTTL time.Duration
	// OfnetIP is the address the term's ofnet master listens on and
	// advertises to agents (the internal address' IP); "" runs none.
	OfnetIP string
	// OfnetPort is its port (ofrpc.MasterPort); 0 picks a free one.
	OfnetPort int
	// OfnetClearDelay is how long a host's netplugin may stay away before
	// the host is garbage-collected: its endpoints withdrawn from the other
	// hosts and deleted from the store (0: agents.DefaultClearDelay; absence
	// re-checked every tenth of it; docs/daemons.md §4.10.3).
	OfnetClearDelay time.Duration
	// NetpluginPort is the port of the netplugins' REST servers, asked to
	// reclaim cleaned-up endpoints (0: DefaultNetpluginPort).
	NetpluginPort int
	// PluginName is the docker network and IPAM driver name (--name;
	// "": DefaultPluginName), used in docker mode only.
	PluginName string
	// DockerSocket is the Docker Engine's API socket used in docker mode
	// ("": dockernets.DefaultSocket). No other mode talks to Docker.
	DockerSocket string
	// MaxBodyBytes bounds a request body of the REST API and the /plugin
	// routes (0: contivmodel.MaxBodyBytes).
	MaxBodyBytes int64
	// Metrics receives each term's IPAM and endpoint metrics (nil: none).
	Metrics prometheus.Registerer
	// RPCTLS, when set, makes the ofnet master's RPC mutual TLS.
	RPCTLS *server.RPCTLS
}

// Leader implements server.Leader.
type Leader struct {
	cfg Config
	log *logrus.Entry
}

var _ server.Leader = (*Leader)(nil)

// NewLeader builds the leader from the daemon configuration (the
// cli.NewLeader signature).
func NewLeader(cfg server.Config, log *logrus.Entry) (server.Leader, error) {
	ofnetIP, _, err := net.SplitHostPort(cfg.InternalAddress)
	if err != nil {
		return nil, fmt.Errorf("internal address %q: %w", cfg.InternalAddress, err)
	}
	return New(Config{Infra: cfg.Infra, FwdMode: cfg.Common.FwdMode, ClusterMode: cfg.Common.Mode, LeaderTTL: cfg.LeaderTTL,
		OfnetIP: ofnetIP, OfnetPort: server.RPCPort, PluginName: cfg.PluginName, DockerSocket: cfg.DockerSocket,
		MaxBodyBytes: cfg.HTTP.MaxBodyBytes, Metrics: cfg.Registerer(), RPCTLS: cfg.RPCTLS}, log), nil
}

// New returns a Leader with cfg.
func New(cfg Config, log *logrus.Entry) *Leader {
	if log == nil {
		log = logrus.NewEntry(logrus.StandardLogger())
	}
	if cfg.Infra == "" {
		cfg.Infra = "default"
	}
	if cfg.ClusterMode == "" {
		cfg.ClusterMode = daemonflags.ModeDocker
	}
	return &Leader{cfg: cfg, log: log.WithField("component", "master")}
}

// Start builds this leadership term's model and allocators over st, makes
// sure the global object and the default tenant exist, and returns the
// API handler. Everything is released when ctx ends.
func (l *Leader) Start(ctx context.Context, st objdb.Store) (http.Handler, error) {
	m := newMaster(l.cfg, st, l.log)
	m.svc = st
	h, err := m.start(ctx)
	if err != nil {
		m.close()
		return nil, err
	}
	context.AfterFunc(ctx, m.close)
	return h, nil
}

// master is one leadership term.
type master struct {
	cfg Config
	log *logrus.Entry
	kv  objdb.KV
	st  *state.Store
	v4  *ipam.V4
	v6  *ipam.V6
	res *resources.Manager
	reg *contivmodel.Registry

	// topo orders endpoint operations (shared) against the deletion of
	// the networks and groups they attach to (exclusive), within this
	// process; the store's compare-and-swap covers other processes.
	topo sync.RWMutex

	ctrMu sync.Mutex
	ctrs  map[string]*counters // per state id: batched counter updates

	// netCache and epgCache hold network and group states for the
	// endpoint path, which only uses their immutable fields (subnet, type,
	// pool, group id). Entries are dropped when the object is created or
	// deleted (under topo's write lock).
	netCache sync.Map // netID -> state.Network
	epgCache sync.Map // epgID -> state.EndpointGroup

	sweepWG   sync.WaitGroup
	closeOnce sync.Once
	sweepMu   sync.Mutex
	sweepRep  *SweepReport // last sweep of the term (sweep.go)

	// Background work started by requests (repair.go), stopped with the
	// term: termCtx is the term's context, bgClosed set by close.
	bgMu          sync.Mutex
	bgClosed      bool
	repairPending bool
	termCtx       context.Context

	svc    objdb.ServiceRegistry // agent discovery (netmaster/agents)
	agents *agents.Agents        // the term's ofnet master (netmaster/agents)

	svcLB *svclb.Cache // service load balancer (netmaster/svclb)

	docker *dockernets.Client // docker mode only (docknet.go)
}

// netState reads a network state through netCache.
func (m *master) netState(ctx context.Context, netID string) (state.Network, error) {
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
func (m *master) epgState(ctx context.Context, epgID string) (state.EndpointGroup, error) {
	if v, ok := m.epgCache.Load(epgID); ok {
		return v.(state.EndpointGroup), nil
	}
	gs, err := m.st.EndpointGroups.Read(ctx, epgID)
	if err == nil {
		m.epgCache.Store(epgID, gs)
	}
	return gs, err
}

func newMaster(cfg Config, kv objdb.KV, log *logrus.Entry) *master {
	m := &master{
		cfg:  cfg,
		log:  log,
		kv:   kv,
		st:   state.New(kv),
		v4:   ipam.NewV4(kv),
		v6:   ipam.NewV6(kv),
		res:  resources.New(kv),
		ctrs: map[string]*counters{},
	}
	m.svcLB = svclb.New(m.st, vipOwner{m})
	if cfg.ClusterMode == daemonflags.ModeDocker {
		m.docker = dockernets.NewClient(cfg.DockerSocket)
	}
	return m
}

func (m *master) close() {
	m.closeOnce.Do(func() {
		m.bgMu.Lock()
		m.bgClosed = true
		m.bgMu.Unlock()
		m.sweepWG.Wait() // it ends with the term's context
		m.agents.Wait()  // so does the ofnet master
		m.v4.Close()
		if m.docker != nil {
			m.docker.Close()
		}
	})
}

// controllers are the callbacks this package implements. Types without one
// answer "Invalid object type" (see docs/compat.md, "## netmaster").
func (m *master) controllers() contivmodel.Controllers {
	return contivmodel.Controllers{
		Global:            globalCtl{m},
		Tenant:            tenantCtl{m},
		Network:           networkCtl{m},
		EndpointGroup:     epgCtl{m},
		Endpoint:          endpointCtl{m: m},
		Netprofile:        netprofileCtl{m},
		Policy:            policyCtl{m},
		Rule:              ruleCtl{m},
		AppProfile:        appProfileCtl{m},
		AciGw:             aciGwCtl{m},
		Bgp:               bgpCtl{m},
		ExtContractsGroup: extContractsCtl{m},
		ServiceLB:         serviceLBCtl{m},
	}
}

func (m *master) start(ctx context.Context) (http.Handler, error) {
	m.bgMu.Lock()
	m.termCtx = ctx
	m.bgMu.Unlock()
	m.reg = contivmodel.NewRegistry(m.kv, contivmodel.WithLogger(m.log),
		contivmodel.WithMaxBodyBytes(m.cfg.MaxBodyBytes), contivmodel.WithStatus(httpStatus))
	if err := contivmodel.RegisterAll(m.reg, m.controllers()); err != nil {
		return nil, fmt.Errorf("register model kinds: %w", err)
	}
	if err := m.reg.Load(ctx); err != nil {
		return nil, fmt.Errorf("load model: %w", err)
	}
	if err := m.ensureDefaults(ctx); err != nil {
		return nil, err
	}
	if m.cfg.LeaderTTL <= 0 {
		if err := m.sweepLeaks(ctx); err != nil {
			return nil, err
		}
	}
	if err := m.restoreServices(ctx); err != nil {
		return nil, fmt.Errorf("restore service load balancers: %w", err)
	}
	if err := m.reconcileCounters(ctx); err != nil {
		return nil, fmt.Errorf("reconcile endpoint counters: %w", err)
	}
	if m.cfg.LeaderTTL > 0 {
		m.sweepWG.Add(1)
		go func() {
			defer m.sweepWG.Done()
			select {
			case <-ctx.Done():
				return
			case <-time.After(m.cfg.LeaderTTL):
			}
			if err := m.sweepLeaks(ctx); err != nil && ctx.Err() == nil {
				m.log.WithError(err).Error("sweep leaked addresses")
			}
		}()
	}
	router := contivmodel.NewRouter(m.reg)
	router.Use(httpmetrics.MuxRoute)
	m.registerTermMetrics(ctx, m.cfg.Metrics)
	m.addPluginRoutes(router)
	m.addEpCleanupRoute(router)
	m.addSweepRoute(router)
	m.addServiceRoutes(router)
	m.addTraceRoute(router)
	m.agents = agents.New(agents.Config{IP: m.cfg.OfnetIP, Port: m.cfg.OfnetPort, ClearDelay: m.cfg.OfnetClearDelay, TLS: m.cfg.RPCTLS},
		m.log, m.svc, m.st, hostGC{m})
	m.agents.Start(ctx, router)
	return router, nil
}

// ensureDefaults creates the global object (from the flags and built-in
// defaults, first creation only: a stored global is never reset, spec
// docs/daemons.md §4.5, §10 #3) and the default tenant when absent.
func (m *master) ensureDefaults(ctx context.Context) error {
	if _, err := contivmodel.Read[contivmodel.Global](m.reg, GlobalName); errors.Is(err, contivmodel.ErrNotFound) {
		g := &contivmodel.Global{Name: GlobalName, NetworkInfraType: m.cfg.Infra, FwdMode: m.cfg.FwdMode,
			ArpMode: DefaultArpMode, PvtSubnet: DefaultPvtSubnet, Vlans: DefaultVLANs, Vxlans: DefaultVXLANs}
		g.Key = GlobalName
		if _, err := contivmodel.Upsert(ctx, m.reg, g); err != nil {
			return fmt.Errorf("create global configuration: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("read global configuration: %w", err)
	}
	if _, err := contivmodel.Read[contivmodel.Tenant](m.reg, DefaultTenant); errors.Is(err, contivmodel.ErrNotFound) {
		t := &contivmodel.Tenant{Key: DefaultTenant, TenantName: DefaultTenant}
		if _, err := contivmodel.Upsert(ctx, m.reg, t); err != nil {
			return fmt.Errorf("create tenant %q: %w", DefaultTenant, err)
		}
	} else if err != nil {
		return fmt.Errorf("read tenant %q: %w", DefaultTenant, err)
	}
	return nil
}

// undoCtx is the context of a rollback: it outlives the request.
func undoCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// snapshot records the raw values of keys and returns a function putting
// them back (deleting those that did not exist): the undo of a sequence of
// state writes done under the model's write lock.
func (m *master) snapshot(ctx context.Context, keys ...string) (func(), error) {
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
		ctx, cancel := undoCtx()
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

// counters batches the counter updates of one state object: while one
// compare-and-swap write is in flight, further deltas accumulate and the
// next write applies them all (group commit). Correctness rests on the
// compare-and-swap, not on this batching.
type counters struct {
	mu      sync.Mutex
	pending *counterBatch
	running bool
	hint    any // *casHint[T] of the object, used by the running writer only
}

type counterBatch struct {
	d    [2]int
	done chan struct{}
	err  error
}

func (m *master) counterFor(id string) *counters {
	m.ctrMu.Lock()
	defer m.ctrMu.Unlock()
	c, ok := m.ctrs[id]
	if !ok {
		c = &counters{}
		m.ctrs[id] = c
	}
	return c
}

// addCounters adds d to the counters of id through apply, batched with
// concurrent calls for the same id; it returns once d is stored (or failed).
func (m *master) addCounters(ctx context.Context, id string, d [2]int, apply func(ctx context.Context, d [2]int, c *counters) error) error {
	c := m.counterFor(id)
	c.mu.Lock()
	if c.pending == nil {
		c.pending = &counterBatch{done: make(chan struct{})}
	}
	mine := c.pending
	mine.d[0] += d[0]
	mine.d[1] += d[1]
	if c.running {
		c.mu.Unlock()
		<-mine.done // bounded: the running writer uses its own timeout
		return mine.err
	}
	c.running = true
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	for {
		b := c.pending
		c.pending = nil
		c.mu.Unlock()
		b.err = apply(wctx, b.d, c)
		close(b.done)
		c.mu.Lock()
		if c.pending == nil {
			c.running = false
			c.mu.Unlock()
			return mine.err
		}
	}
}

// casUpdate is a compare-and-swap loop on one state object.
func casUpdate[T state.Object](ctx context.Context, c state.Collection[T], id string, fn func(cur *T) error) (T, error) {
	for {
		cur, ver, err := c.ReadVersion(ctx, id)
		if err != nil {
			return cur, err
		}
		if err := fn(&cur); err != nil {
			return cur, err
		}
		_, err = c.Write(ctx, cur, objdb.WithPrevVersion(ver))
		if errors.Is(err, objdb.ErrConflict) {
			if err := ctx.Err(); err != nil {
				return cur, err
			}
			continue
		}
		return cur, err
	}
}

// casHint is the last value written by casUpdateHinted and its version:
// the next update tries it first and re-reads only on conflict.
type casHint[T any] struct {
	val T
	ver int64
	ok  bool
}

func hintOf[T any](c *counters) *casHint[T] {
	h, ok := c.hint.(*casHint[T])
	if !ok {
		h = &casHint[T]{}
		c.hint = h
	}
	return h
}

// casUpdateHinted is casUpdate starting from the hinted value, if any.
func casUpdateHinted[T state.Object](ctx context.Context, c state.Collection[T], id string, h *casHint[T], fn func(cur *T) error) error {
	for {
		var cur T
		var ver int64
		if h.ok {
			cur, ver, h.ok = h.val, h.ver, false
		} else {
			var err error
			if cur, ver, err = c.ReadVersion(ctx, id); err != nil {
				return err
			}
		}
		if err := fn(&cur); err != nil {
			return err
		}
		// This process's counter writer is the only one of the object
		// (addCounters), so its value is its own: an attempt of unknown
		// outcome is settled by reading it back, never applied twice.
		nv, err := c.WriteResolved(ctx, cur, objdb.WithPrevVersion(ver))
		if (errors.Is(err, objdb.ErrConflict) || errors.Is(err, objdb.ErrNotFound)) && !errors.Is(err, objdb.ErrUncertain) {
			if err := ctx.Err(); err != nil {
				return err
			}
			continue // re-read
		}
		if err != nil {
			return err
		}
		h.val, h.ver, h.ok = cur, nv, true
		return nil
	}
}

// bumpNetwork adds to a network state's endpoint and address counters.
func (m *master) bumpNetwork(ctx context.Context, netID string, eps, addrs int) error {
	if eps == 0 && addrs == 0 {
		return nil
	}
	err := m.addCounters(ctx, "net/"+netID, [2]int{eps, addrs}, func(ctx context.Context, d [2]int, c *counters) error {
		return casUpdateHinted(ctx, m.st.Networks, netID, hintOf[state.Network](c), func(n *state.Network) error {
			n.EpCount += d[0]
			n.EpAddrCount += d[1]
			if n.EpAddrCount < 0 {
				n.EpAddrCount = 0
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("update counters of network %q: %w", netID, err)
	}
	return nil
}

// bumpGroup adds to a group state's endpoint counter.
func (m *master) bumpGroup(ctx context.Context, epgID string, eps int) error {
	err := m.addCounters(ctx, "epg/"+epgID, [2]int{eps, 0}, func(ctx context.Context, d [2]int, c *counters) error {
		return casUpdateHinted(ctx, m.st.EndpointGroups, epgID, hintOf[state.EndpointGroup](c), func(g *state.EndpointGroup) error {
			g.EpCount += d[0]
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("update endpoint count of group %q: %w", epgID, err)
	}
	return nil
}
