// Package master wires one netmaster leadership term together (docs/daemons.md
// §4): the Leader the netmaster daemon runs on every leadership
// acquisition builds the term's store views, IPAM and tag managers, the
// endpoint service (netmaster/endpoints: the /plugin/* API and address
// ownership), the object controllers (netmaster/controllers) on a fresh
// model registry, and the ofnet master (netmaster/agents); it writes the
// global object and the default tenant when absent, registers the term's
// metrics (metrics.go) and releases everything when the term ends.
//
// State lives in the store only, so a restarted or newly elected
// netmaster sees exactly what the previous one wrote. Every allocation
// (addresses, tags, endpoint-group ids, endpoint counters) is a
// compare-and-swap in the store, so two netmasters that briefly both
// believe they lead never hand out one value twice.
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

	"github.com/contiv/netplugin/api/dockernets"
	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/netmaster/agents"
	"github.com/contiv/netplugin/netmaster/controllers"
	"github.com/contiv/netplugin/netmaster/endpoints"
	"github.com/contiv/netplugin/netmaster/ipam"
	"github.com/contiv/netplugin/netmaster/resources"
	"github.com/contiv/netplugin/netmaster/server"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/ofnet/ofmaster"
	"github.com/contiv/netplugin/ofnet/ofrpc"
	"github.com/contiv/netplugin/state"
	"github.com/contiv/netplugin/utils/daemonflags"
	"github.com/contiv/netplugin/utils/httpmetrics"
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
	// NetpluginPort is the port of the netplugins' agent RPC, asked to
	// reclaim cleaned-up endpoints, trace and show BGP state (0:
	// ofrpc.VxlanAgentPort).
	NetpluginPort int
	// PluginName is the docker network and IPAM driver name (--name;
	// "": controllers.DefaultPluginName), used in docker mode only.
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
	// OfnetLimits bound the ofnet master (zero fields: defaults).
	OfnetLimits ofmaster.Limits
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
		MaxBodyBytes: cfg.HTTP.MaxBodyBytes, Metrics: cfg.Registerer(), RPCTLS: cfg.RPCTLS, OfnetLimits: cfg.OfnetLimits}, log), nil
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
	m := newMaster(l.cfg, st, st, l.log)
	h, err := m.start(ctx)
	if err != nil {
		m.close()
		return nil, err
	}
	context.AfterFunc(ctx, m.close)
	return h, nil
}

// master is one leadership term: the packages it wires together, and
// what it closes when the term ends.
type master struct {
	cfg Config
	log *logrus.Entry
	kv  objdb.KV
	svc objdb.ServiceRegistry // agent discovery (netmaster/agents)
	st  *state.Store
	v4  *ipam.V4
	reg *contivmodel.Registry // the term's model (built by start)

	eps    *endpoints.Service   // the /plugin/* API and address ownership
	objs   *controllers.Objects // the object controllers
	agents *agents.Agents       // the term's ofnet master (started by start)
	docker *dockernets.Client   // docker mode only
	// agentPool carries the term's calls to the netplugins' agent RPC.
	agentPool *ofrpc.Pool

	closeOnce sync.Once
}

func newMaster(cfg Config, kv objdb.KV, svc objdb.ServiceRegistry, log *logrus.Entry) *master {
	m := &master{cfg: cfg, log: log, kv: kv, svc: svc, st: state.New(kv), v4: ipam.NewV4(kv)}
	v6 := ipam.NewV6(kv)
	// netmaster's own calls to the netplugins go over the agent RPC with
	// the master certificate (docs/security.md).
	popts := []ofrpc.Option{ofrpc.WithDialAttempts(2), ofrpc.WithDialTimeout(5 * time.Second)}
	if cfg.RPCTLS != nil {
		popts = append(popts, ofrpc.WithTLS(cfg.RPCTLS.Client))
	}
	m.agentPool = ofrpc.NewPool(popts...)
	m.eps = endpoints.New(endpoints.Config{KV: kv, State: m.st, V4: m.v4, V6: v6, Services: svc,
		ClusterMode: cfg.ClusterMode, NetpluginPort: cfg.NetpluginPort, Agents: m.agentPool, Log: log})
	if cfg.ClusterMode == daemonflags.ModeDocker {
		m.docker = dockernets.NewClient(cfg.DockerSocket)
	}
	m.objs = controllers.New(controllers.Config{KV: kv, State: m.st, V4: m.v4, V6: v6, Resources: resources.New(kv),
		Endpoints: m.eps, ClusterMode: cfg.ClusterMode, PluginName: cfg.PluginName, Docker: m.docker, Log: log})
	return m
}

func (m *master) close() {
	m.closeOnce.Do(func() {
		m.eps.Close() // its background work ends with the term's context
		m.agentPool.Close()
		m.agents.Wait() // so does the ofnet master
		m.v4.Close()
		if m.docker != nil {
			m.docker.Close()
		}
	})
}

func (m *master) start(ctx context.Context) (http.Handler, error) {
	m.reg = contivmodel.NewRegistry(m.kv, contivmodel.WithLogger(m.log),
		contivmodel.WithMaxBodyBytes(m.cfg.MaxBodyBytes), contivmodel.WithStatus(controllers.Status))
	if err := contivmodel.RegisterAll(m.reg, m.objs.Callbacks()); err != nil {
		return nil, fmt.Errorf("register model kinds: %w", err)
	}
	if err := m.reg.Load(ctx); err != nil {
		return nil, fmt.Errorf("load model: %w", err)
	}
	if err := m.ensureDefaults(ctx); err != nil {
		return nil, err
	}
	if err := m.eps.Start(ctx, m.cfg.LeaderTTL); err != nil {
		return nil, err
	}
	router := contivmodel.NewRouter(m.reg)
	router.Use(httpmetrics.MuxRoute)
	m.registerTermMetrics(ctx, m.cfg.Metrics)
	m.eps.AddRoutes(router, m.reg)
	m.objs.AddRoutes(router)
	m.agents = agents.New(agents.Config{IP: m.cfg.OfnetIP, Port: m.cfg.OfnetPort, ClearDelay: m.cfg.OfnetClearDelay, TLS: m.cfg.RPCTLS, Limits: m.cfg.OfnetLimits},
		m.log, m.svc, m.st, m.eps)
	m.agents.Start(ctx, router)
	return router, nil
}

// ensureDefaults creates the global object (from the flags and built-in
// defaults, first creation only: a stored global is never reset, spec
// docs/daemons.md §4.5, §10 #3) and the default tenant when absent.
func (m *master) ensureDefaults(ctx context.Context) error {
	if _, err := contivmodel.Read[contivmodel.Global](m.reg, controllers.GlobalName); errors.Is(err, contivmodel.ErrNotFound) {
		g := &contivmodel.Global{Name: controllers.GlobalName, NetworkInfraType: m.cfg.Infra, FwdMode: m.cfg.FwdMode,
			ArpMode: controllers.DefaultArpMode, PvtSubnet: controllers.DefaultPvtSubnet, Vlans: controllers.DefaultVLANs, Vxlans: controllers.DefaultVXLANs}
		g.Key = controllers.GlobalName
		if _, err := contivmodel.Upsert(ctx, m.reg, g); err != nil {
			return fmt.Errorf("create global configuration: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("read global configuration: %w", err)
	}
	if _, err := contivmodel.Read[contivmodel.Tenant](m.reg, controllers.DefaultTenant); errors.Is(err, contivmodel.ErrNotFound) {
		t := &contivmodel.Tenant{Key: controllers.DefaultTenant, TenantName: controllers.DefaultTenant}
		if _, err := contivmodel.Upsert(ctx, m.reg, t); err != nil {
			return fmt.Errorf("create tenant %q: %w", controllers.DefaultTenant, err)
		}
	} else if err != nil {
		return fmt.Errorf("read tenant %q: %w", controllers.DefaultTenant, err)
	}
	return nil
}
