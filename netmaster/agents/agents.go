// Package agents is netmaster's glue to the netplugin agents: each
// leadership term runs an ofnet master, adds every registered agent to it,
// pushes the policy rules to it, and garbage-collects hosts whose agents
// are gone (docs/daemons.md §4.10.3, §4.11, §5.2, §5.3).
package agents

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/mux"
	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/netmaster/server"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/ofnet/ofmaster"
	"github.com/contiv/netplugin/ofnet/ofrpc"
	"github.com/contiv/netplugin/state"
	"github.com/contiv/netplugin/utils/ctxutil"
)

// DefaultClearDelay is how long a host may stay away before its
// endpoints are withdrawn (docs/daemons.md §9, host GC delay).
const DefaultClearDelay = 24 * time.Hour

// ofnetRetry is the pause before binding the ofnet port again, re-listing
// after a failed store watch, and the first AddNode retry.
const ofnetRetry = time.Second

// Config says where a term's ofnet master listens.
type Config struct {
	// IP is the address the ofnet master listens on and announces to the
	// agents; "" runs no ofnet master.
	IP string
	// Port is its port (ofrpc.MasterPort); 0 picks a free one.
	Port int
	// ClearDelay is how long a host's netplugin may stay away before the
	// host is garbage-collected (0: DefaultClearDelay).
	ClearDelay time.Duration
	// TLS, when set, makes the ofnet master's RPC mutual TLS.
	TLS *server.RPCTLS
	// Limits bound the ofnet master's tables and RPC server (zero
	// fields: the ofmaster and ofrpc defaults).
	Limits ofmaster.Limits
}

// Hosts is what the agent follower needs of the endpoint side: the
// endpoints in the store and the deletion of a departed host's endpoints.
type Hosts interface {
	// EndpointHosts lists, sorted, the distinct homing hosts of the
	// endpoints in the store ("" included when an endpoint has none).
	EndpointHosts(ctx context.Context) ([]string, error)
	CollectHost(ctx context.Context, hostname string) (n int, err error)
}

// Agents is one leadership term's ofnet master (docs/daemons.md §5.2,
// §5.3; leader only, §10 row 15) and the loops that feed it: the netplugin
// agents registered in the service registry, the policy rules of
// state/policyRule, and the host GC of departed agents.
type Agents struct {
	cfg   Config
	log   *logrus.Entry
	svc   objdb.ServiceRegistry
	st    *state.Store
	hosts Hosts

	ofnet   *ofmaster.Master
	ofnetWG sync.WaitGroup
}

// New returns the term's agents glue; Start runs it.
func New(cfg Config, log *logrus.Entry, svc objdb.ServiceRegistry, st *state.Store, hosts Hosts) *Agents {
	return &Agents{cfg: cfg, log: log, svc: svc, st: st, hosts: hosts}
}

// Start runs the term's ofnet master: it listens on IP:Port, tells every
// netplugin agent about itself, and pushes the policy rules of
// state/policyRule. Everything stops with ctx; Wait waits for it. It does
// nothing when Config.IP is "".
func (a *Agents) Start(ctx context.Context, router *mux.Router) {
	if a.cfg.IP == "" {
		return
	}
	ocfg := ofmaster.Config{LocalIP: a.cfg.IP, Logger: a.log, Limits: a.cfg.Limits}
	if a.cfg.TLS != nil {
		// The term's pool, closed when the term's ofnet master is done.
		ocfg.Pool = ofrpc.NewPool(ofrpc.WithTLS(a.cfg.TLS.Client))
		// An agent speaks only for the addresses in its certificate.
		ocfg.Authorize = ofrpc.AgentIdentity
	}
	om := ofmaster.New(ocfg)
	a.ofnet = om
	router.Methods(http.MethodGet).Path("/debug/ofnet").HandlerFunc(a.serveOfnetDebug)
	a.ofnetWG.Add(1)
	go func() {
		defer a.ofnetWG.Done()
		a.runOfnet(ctx, om)
		if ocfg.Pool != nil {
			ocfg.Pool.Close()
		}
	}()
}

// Wait waits for everything Start started (after the term's context ended).
func (a *Agents) Wait() {
	if a != nil {
		a.ofnetWG.Wait()
	}
}

// runOfnet binds the port (retrying while it is taken, e.g. by the previous
// term of this process still closing), then serves and follows agents and
// rules until ctx ends.
func (a *Agents) runOfnet(ctx context.Context, om *ofmaster.Master) {
	addr := net.JoinHostPort(a.cfg.IP, strconv.Itoa(a.cfg.Port))
	var ln net.Listener
	for {
		var err error
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		a.log.WithError(err).WithField("addr", addr).Error("ofnet master: listen failed; retrying")
		if !ctxutil.Sleep(ctx, ofnetRetry) {
			return
		}
	}
	if a.cfg.TLS != nil {
		ln = tls.NewListener(ln, a.cfg.TLS.Server)
	}
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		if err := om.Serve(ctx, ln); err != nil && ctx.Err() == nil {
			a.log.WithError(err).Error("ofnet master stopped serving")
		}
	}()
	go func() {
		defer wg.Done()
		newAgentFollower(a, om).run(ctx)
	}()
	go func() {
		defer wg.Done()
		a.followRules(ctx, om)
	}()
	wg.Wait()
}

// serveOfnetDebug is GET /debug/ofnet: the ofnet master's tables.
func (a *Agents) serveOfnetDebug(w http.ResponseWriter, r *http.Request) {
	b, err := json.Marshal(a.ofnet.State())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}
