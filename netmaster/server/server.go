// Package server is netmaster's process shell: it opens the store (or runs
// the embedded etcd), registers the netmaster services, campaigns for the
// leader lock and switches between the follower state (proxy every request
// to the leader) and the leader state (serve the API, run leader-only work)
// as the lock is won and lost (docs/daemons.md §4.1, §4.2).
package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/netmaster/auth"
	"github.com/contiv/netplugin/netmaster/migrate"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/dial"
	"github.com/contiv/netplugin/objdb/embedetcd"
	"github.com/contiv/netplugin/objdb/objdbmetrics"
	"github.com/contiv/netplugin/ofnet/ofmaster"
	"github.com/contiv/netplugin/utils/daemonflags"
	"github.com/contiv/netplugin/utils/health"
	"github.com/contiv/netplugin/utils/httpmetrics"
	"github.com/contiv/netplugin/utils/problem"
	"github.com/contiv/netplugin/utils/profiles"
	"github.com/contiv/netplugin/utils/tlsutil"
	"github.com/contiv/netplugin/utils/version"
)

// Service names and the lock name of docs/daemons.md §2.3, §2.4.
const (
	ServiceNetmaster    = "netmaster"
	ServiceNetmasterRPC = "netmaster.rpc"
	ServiceNetplugin    = "netplugin"
	LeaderLock          = "netmaster/leader"
	RPCPort             = 9001
	DefaultLeaderTTL    = 10 * time.Second
	serviceTTL          = 10 // seconds
)

// Roles in the service registry and /info.
const (
	RoleLeader   = "leader"
	RoleFollower = "follower"
)

// Config is a parsed and validated netmaster command line.
type Config struct {
	Common          daemonflags.Common
	Infra           string
	PluginName      string
	DockerSocket    string // the Docker Engine's API socket (docker mode)
	ExternalAddress string // ip:port the API listens on
	InternalAddress string // ip:port: leader identity, proxy target, registered service
	LeaderTTL       time.Duration
	// EmbeddedEtcdDir, when set, runs an in-process etcd with its data
	// there, serving on the first etcd endpoint (http://127.0.0.1:2379 by
	// default), so netplugins with default flags find it.
	EmbeddedEtcdDir     string
	EmbeddedEtcdPeerURL string
	// EmbeddedEtcdTLS is how the embedded etcd serves its URLs.
	EmbeddedEtcdTLS EmbeddedEtcdTLS
	// HTTP are the REST server's limits; zero members take the defaults
	// of DefaultHTTPLimits.
	HTTP HTTPLimits
	// Version is what /version shows.
	Version version.Info
	// Metrics is the registry /metrics serves; the daemon registers its
	// HTTP, store and leadership metrics there, and the leader its own.
	// nil turns metrics off (/metrics answers 404).
	Metrics *prometheus.Registry
	// TLS, when CertFile is set, serves HTTPS (docs/operations.md).
	TLS TLSFiles
	// Tokens, when set, guard every path but /healthz, /readyz and
	// /version with bearer tokens.
	Tokens *auth.Tokens
	// RPCTLS secures the ofnet RPC channel and netmaster's calls to the
	// agents (reclaim, trace, BGP state); nil only with --insecure-rpc.
	RPCTLS *RPCTLS
	// OfnetLimits bound the leader's ofnet master: its agent and endpoint
	// tables and its RPC server (docs/security.md, "RPC limits").
	OfnetLimits ofmaster.Limits
}

// EmbeddedEtcdTLS are the embedded etcd's TLS files (https:// URLs) and
// whether plain http may serve an address other than loopback
// (docs/security.md, "The store").
type EmbeddedEtcdTLS struct {
	CertFile, KeyFile, ClientCAFile string
	Insecure                        bool
}

// HTTPLimits bound what one client can hold of the REST server
// (docs/rest-errors.md). A request whose headers, or headers and body, do
// not arrive within ReadHeaderTimeout / ReadTimeout is cut off (the body
// read fails and is answered 408); WriteTimeout bounds the time from the
// end of the headers to the end of the answer, so it must cover the
// slowest handler (a store write under retry); an idle connection is
// closed after IdleTimeout. A body above MaxBodyBytes is refused (413).
type HTTPLimits struct {
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	MaxBodyBytes      int64
}

// DefaultHTTPLimits are the limits used for zero members of HTTPLimits.
var DefaultHTTPLimits = HTTPLimits{
	ReadHeaderTimeout: 30 * time.Second,
	ReadTimeout:       60 * time.Second,
	WriteTimeout:      120 * time.Second,
	IdleTimeout:       120 * time.Second,
	MaxBodyBytes:      4 << 20,
}

// withDefaults fills the zero members of l from DefaultHTTPLimits.
func (l HTTPLimits) withDefaults() HTTPLimits {
	d := DefaultHTTPLimits
	if l.ReadHeaderTimeout <= 0 {
		l.ReadHeaderTimeout = d.ReadHeaderTimeout
	}
	if l.ReadTimeout <= 0 {
		l.ReadTimeout = d.ReadTimeout
	}
	if l.WriteTimeout <= 0 {
		l.WriteTimeout = d.WriteTimeout
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = d.IdleTimeout
	}
	if l.MaxBodyBytes <= 0 {
		l.MaxBodyBytes = d.MaxBodyBytes
	}
	return l
}

// RPCTLS is mutual TLS on the ofnet JSON-RPC channel between the leader's
// ofnet master and the agents: Server for the master's listener (client
// certificates required), Client for its calls to the agents.
type RPCTLS struct {
	Server, Client *tls.Config
}

// TLSFiles are netmaster's TLS settings.
type TLSFiles struct {
	CertFile, KeyFile string
	// ClientCAFile, when set, makes every client present a certificate
	// signed by one of its CAs.
	ClientCAFile string
	// CAFile is what a follower trusts for the leader's certificate when
	// it proxies ("": the system roots).
	CAFile string
}

// Registerer is cfg.Metrics as a Registerer, nil (not a typed nil) when
// metrics are off.
func (cfg Config) Registerer() prometheus.Registerer {
	if cfg.Metrics == nil {
		return nil
	}
	return cfg.Metrics
}

// Leader is the work a netmaster does while it leads. Start is called on
// every acquisition with a context that is cancelled when leadership ends;
// the returned handler serves every request except /version and /info.
// Start must not block beyond its set-up.
type Leader interface {
	Start(ctx context.Context, st objdb.Store) (http.Handler, error)
}

// LeaderFunc adapts a function to Leader.
type LeaderFunc func(ctx context.Context, st objdb.Store) (http.Handler, error)

// Start calls f.
func (f LeaderFunc) Start(ctx context.Context, st objdb.Store) (http.Handler, error) {
	return f(ctx, st)
}

// Daemon is one netmaster process.
type Daemon struct {
	cfg    Config
	leader Leader
	log    *logrus.Entry

	store objdb.Store
	lock  objdb.Lock
	// lockSet is set once lock is assigned, for the HTTP handlers.
	lockSet atomic.Bool

	httpm       *httpmetrics.Metrics
	isLeader    prometheus.Gauge   // nil when metrics are off
	leaderMoves prometheus.Counter // nil when metrics are off

	// serving is the handler of the current state (follower proxy or
	// leader API); swapped on each transition.
	serving atomic.Pointer[http.Handler]
	state   atomic.Value // RoleLeader / RoleFollower

	ready chan struct{} // closed once listeners are up
	addrs []string      // bound listener addresses

	serverTLS *tls.Config // nil: plain HTTP
	proxyTLS  *tls.Config // a follower's TLS to the leader (nil: plain HTTP)
}

// New validates cfg and returns a daemon that runs leader on leadership.
func New(cfg Config, leader Leader, log *logrus.Entry) (*Daemon, error) {
	if log == nil {
		log = logrus.NewEntry(logrus.StandardLogger())
	}
	if cfg.LeaderTTL <= 0 {
		cfg.LeaderTTL = DefaultLeaderTTL
	}
	cfg.HTTP = cfg.HTTP.withDefaults()
	d := &Daemon{cfg: cfg, leader: leader, log: log, ready: make(chan struct{})}
	d.state.Store(RoleFollower)
	if cfg.TLS.CertFile != "" || cfg.TLS.KeyFile != "" || cfg.TLS.ClientCAFile != "" {
		var err error
		if d.serverTLS, err = tlsutil.ServerConfig(cfg.TLS.CertFile, cfg.TLS.KeyFile, cfg.TLS.ClientCAFile); err != nil {
			return nil, err
		}
		// A follower presents its own certificate to the leader, which
		// may require client certificates.
		if d.proxyTLS, err = tlsutil.ClientConfig(cfg.TLS.CAFile, cfg.TLS.CertFile, cfg.TLS.KeyFile); err != nil {
			return nil, fmt.Errorf("TLS to the leader: %w", err)
		}
	}
	if reg := cfg.Registerer(); reg != nil {
		d.httpm = httpmetrics.New(reg)
		d.isLeader = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "contiv", Subsystem: "netmaster", Name: "leader",
			Help: "1 while this netmaster holds the leader lock and serves the API, 0 while it follows."})
		d.leaderMoves = prometheus.NewCounter(prometheus.CounterOpts{Namespace: "contiv", Subsystem: "netmaster", Name: "leadership_changes_total",
			Help: "Times this netmaster became leader or stopped leading."})
		reg.MustRegister(d.isLeader, d.leaderMoves)
	}
	return d, nil
}

// Ready is closed once the listeners are bound.
func (d *Daemon) Ready() <-chan struct{} { return d.ready }

// Addrs are the bound listener addresses (valid after Ready).
func (d *Daemon) Addrs() []string { return d.addrs }

// State is "leader" or "follower".
func (d *Daemon) State() string { return d.state.Load().(string) }

// Run runs the daemon until ctx ends, then deregisters, resigns and stops.
func (d *Daemon) Run(ctx context.Context) error {
	st, stopStore, err := d.openStore(ctx)
	if err != nil {
		return err
	}
	defer stopStore()
	d.store = st
	if err := checkMigration(ctx, st); err != nil {
		return err
	}

	follower := d.followerHandler()
	d.serving.Store(&follower)
	servers, err := d.listen()
	if err != nil {
		return err
	}
	close(d.ready)
	srvErr := make(chan error, len(servers))
	var srvWG sync.WaitGroup
	for _, s := range servers {
		srvWG.Add(1)
		go func(s *server) {
			defer srvWG.Done()
			if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				srvErr <- fmt.Errorf("serve %s: %w", s.ln.Addr(), err)
			}
		}(s)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, s := range servers {
			s.srv.Shutdown(sctx)
		}
		srvWG.Wait()
	}()

	if err := d.registerServices(ctx, RoleFollower); err != nil {
		return err
	}
	defer d.deregisterServices()

	lock, err := st.NewLock(LeaderLock, d.cfg.InternalAddress, d.cfg.LeaderTTL)
	if err != nil {
		return fmt.Errorf("create leader lock: %w", err)
	}
	d.lock = lock
	d.lockSet.Store(true)
	lockCtx, stopLock := context.WithCancel(ctx)
	defer stopLock()
	if err := lock.Acquire(lockCtx); err != nil {
		return fmt.Errorf("campaign for leader lock: %w", err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := lock.Release(rctx); err != nil {
			d.log.WithError(err).Warn("release leader lock")
		}
	}()
	d.log.WithFields(logrus.Fields{"addrs": d.addrs, "id": d.cfg.InternalAddress}).Info("netmaster started as follower")

	var stopLeader context.CancelFunc
	defer func() {
		if stopLeader != nil {
			stopLeader()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-srvErr:
			return err
		case ev, ok := <-lock.Events():
			if !ok {
				return nil
			}
			switch ev.Type {
			case objdb.LockAcquired:
				lctx, cancel := context.WithCancel(ctx)
				if err := d.becomeLeader(lctx); err != nil {
					cancel()
					d.log.WithError(err).Error("leader start-up failed; resigning")
					return fmt.Errorf("leader start-up: %w", err)
				}
				stopLeader = cancel
			case objdb.LockLost:
				if stopLeader != nil {
					stopLeader()
					stopLeader = nil
				}
				d.becomeFollower(ctx)
			default:
				d.log.WithFields(logrus.Fields{"event": ev.Type, "error": ev.Err}).Warn("leader lock event")
			}
		}
	}
}

func (d *Daemon) openStore(ctx context.Context) (objdb.Store, func(), error) {
	eps := d.cfg.Common.EtcdEndpoints
	stop := func() {}
	if d.cfg.EmbeddedEtcdDir != "" {
		if len(d.cfg.Common.ConsulEndpoints) > 0 {
			return nil, nil, fmt.Errorf("--embedded-etcd-dir runs etcd: it cannot be combined with --consul-endpoints")
		}
		client := dial.DefaultEtcdEndpoint
		if len(eps) > 0 {
			client = eps[0]
		}
		srv, err := embedetcd.Start(ctx, embedetcd.Config{
			Name: "netmaster", DataDir: d.cfg.EmbeddedEtcdDir, ClientURL: client,
			PeerURL: d.cfg.EmbeddedEtcdPeerURL, Logger: d.log,
			CertFile: d.cfg.EmbeddedEtcdTLS.CertFile, KeyFile: d.cfg.EmbeddedEtcdTLS.KeyFile,
			ClientCAFile: d.cfg.EmbeddedEtcdTLS.ClientCAFile, Insecure: d.cfg.EmbeddedEtcdTLS.Insecure,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("start embedded etcd in %q: %w", d.cfg.EmbeddedEtcdDir, err)
		}
		d.log.WithField("endpoint", srv.Endpoint()).Info("embedded etcd serving")
		eps = []string{srv.Endpoint()}
		stop = func() { srv.Close() }
	}
	raw, err := dial.Open(ctx, dial.Config{EtcdEndpoints: eps, ConsulEndpoints: d.cfg.Common.ConsulEndpoints,
		Auth: d.cfg.Common.StoreAuth, Logger: d.log})
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("open store: %w", err)
	}
	st := objdbmetrics.Wrap(raw, d.cfg.Registerer())
	return st, func() { st.Close(); stop() }, nil
}

func (d *Daemon) becomeLeader(ctx context.Context) error {
	d.log.Info("acquired leader lock: becoming leader")
	h, err := d.leader.Start(ctx, d.store)
	if err != nil {
		return err
	}
	lh := d.leaderHandler(h)
	d.serving.Store(&lh)
	d.state.Store(RoleLeader)
	if d.isLeader != nil {
		d.isLeader.Set(1)
		d.leaderMoves.Inc()
	}
	if err := d.registerServices(ctx, RoleLeader); err != nil {
		d.log.WithError(err).Warn("re-register services as leader")
	}
	return nil
}

func (d *Daemon) becomeFollower(ctx context.Context) {
	d.log.Warn("lost leader lock: becoming follower")
	fh := d.followerHandler()
	d.serving.Store(&fh)
	d.state.Store(RoleFollower)
	if d.isLeader != nil {
		d.isLeader.Set(0)
		d.leaderMoves.Inc()
	}
	if err := d.registerServices(ctx, RoleFollower); err != nil {
		d.log.WithError(err).Warn("re-register services as follower")
	}
	if err := d.store.DeregisterService(ctx, d.rpcService()); err != nil {
		d.log.WithError(err).Warn("deregister netmaster.rpc")
	}
}

// services are the instances registered in role. Only the leader runs an
// ofnet master, so only the leader registers netmaster.rpc (<internal
// IP>:9001): agents told about a follower would call a closed port.
func (d *Daemon) services(role string) []objdb.ServiceInfo {
	host, portStr, _ := net.SplitHostPort(d.cfg.InternalAddress)
	port, _ := strconv.Atoi(portStr)
	out := []objdb.ServiceInfo{{ServiceName: ServiceNetmaster, Role: role, TTL: serviceTTL, HostAddr: host, Port: port}}
	if role == RoleLeader {
		out = append(out, d.rpcService())
	}
	return out
}

// rpcService is the netmaster.rpc instance of this netmaster.
func (d *Daemon) rpcService() objdb.ServiceInfo {
	host, _, _ := net.SplitHostPort(d.cfg.InternalAddress)
	return objdb.ServiceInfo{ServiceName: ServiceNetmasterRPC, Role: RoleLeader, TTL: serviceTTL, HostAddr: host, Port: RPCPort}
}

func (d *Daemon) registerServices(ctx context.Context, role string) error {
	for _, s := range d.services(role) {
		if err := d.store.RegisterService(ctx, s); err != nil {
			return fmt.Errorf("register service %s: %w", s.ServiceName, err)
		}
	}
	return nil
}

func (d *Daemon) deregisterServices() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range d.services(d.State()) {
		if err := d.store.DeregisterService(ctx, s); err != nil {
			d.log.WithError(err).WithField("service", s.ServiceName).Warn("deregister")
		}
	}
}

type server struct {
	srv *http.Server
	ln  net.Listener
}

// listen binds the external address and, when it differs, the internal one
// (not when the external is 0.0.0.0 on the same port: that covers it).
func (d *Daemon) listen() ([]*server, error) {
	addrs := []string{d.cfg.ExternalAddress}
	eh, ep, _ := net.SplitHostPort(d.cfg.ExternalAddress)
	_, ip, _ := net.SplitHostPort(d.cfg.InternalAddress)
	if d.cfg.InternalAddress != d.cfg.ExternalAddress && !(eh == "0.0.0.0" && ep == ip) {
		addrs = append(addrs, d.cfg.InternalAddress)
	}
	h := d.handler()
	var out []*server
	for _, a := range addrs {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			for _, s := range out {
				s.ln.Close()
			}
			return nil, fmt.Errorf("listen on %s: %w", a, err)
		}
		if d.serverTLS != nil {
			ln = tls.NewListener(ln, d.serverTLS)
		}
		l := d.cfg.HTTP
		srv := &http.Server{Handler: h, ReadHeaderTimeout: l.ReadHeaderTimeout,
			ReadTimeout: l.ReadTimeout, WriteTimeout: l.WriteTimeout, IdleTimeout: l.IdleTimeout,
			ErrorLog: httpErrorLog(d.log)}
		srv.SetKeepAlivesEnabled(false)
		out = append(out, &server{srv: srv, ln: ln})
		d.addrs = append(d.addrs, ln.Addr().String())
	}
	return out, nil
}

func (d *Daemon) serveHTTP(w http.ResponseWriter, r *http.Request) {
	(*d.serving.Load()).ServeHTTP(w, r)
}

// handler is what the listeners serve: /healthz, /readyz and /metrics
// answered by this process whatever its role (docs/operations.md), and
// everything else by the current state's handler; all of it counted by
// the HTTP metrics.
func (d *Daemon) handler() http.Handler {
	alive := health.Alive()
	ready := health.Handler("readyz", 0,
		health.Check{Name: "store", Fn: d.checkStore},
		health.Check{Name: "leader", Fn: d.checkLeader})
	metrics := http.NotFoundHandler()
	if d.cfg.Metrics != nil {
		metrics = promhttp.HandlerFor(d.cfg.Metrics, promhttp.HandlerOpts{Registry: d.cfg.Metrics})
	}
	var api http.Handler = http.HandlerFunc(d.serveHTTP)
	profs := profiles.Handler()
	if d.cfg.Tokens != nil {
		metrics = d.cfg.Tokens.Middleware(metrics, nil)
		profs = d.cfg.Tokens.Middleware(profs, nil)
		api = d.cfg.Tokens.Middleware(api, func(r *http.Request) bool { return r.URL.Path == "/version" })
	}
	// Each kind of client gets refusals in its convention (utils/problem,
	// docs/rest-errors.md "Two kinds of client"); the metrics inside count
	// the status the handler decided. Health, metrics and answers proxied
	// from the leader pass unchanged.
	return problem.Middleware(d.httpm.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz", "/readyz", "/metrics":
			problem.Pass(r)
		}
		switch r.URL.Path {
		case "/healthz":
			httpmetrics.SetRoute(r, r.URL.Path)
			alive.ServeHTTP(w, r)
		case "/readyz":
			httpmetrics.SetRoute(r, r.URL.Path)
			ready.ServeHTTP(w, r)
		case "/metrics":
			httpmetrics.SetRoute(r, r.URL.Path)
			metrics.ServeHTTP(w, r)
		default:
			if strings.HasPrefix(r.URL.Path, profiles.Prefix) {
				httpmetrics.SetRoute(r, profiles.Prefix)
				profs.ServeHTTP(w, r)
				return
			}
			api.ServeHTTP(w, r)
		}
	})))
}

// checkStore: the store answers a read (a missing key is an answer).
func (d *Daemon) checkStore(ctx context.Context) error {
	if _, err := d.store.Get(ctx, "health"); err != nil && !errors.Is(err, objdb.ErrNotFound) {
		return fmt.Errorf("read from the store: %w", err)
	}
	return nil
}

// checkLeader: some netmaster holds the leader lock, and when it is this
// one, its leader term has started.
func (d *Daemon) checkLeader(ctx context.Context) error {
	if !d.lockSet.Load() {
		return errors.New("not campaigning for the leader lock yet")
	}
	holder, err := d.lock.Holder(ctx)
	switch {
	case err != nil:
		return fmt.Errorf("read the leader lock: %w", err)
	case holder == "":
		return errors.New("no netmaster holds the leader lock")
	case holder == d.cfg.InternalAddress && d.State() != RoleLeader:
		return errors.New("this netmaster holds the leader lock but has not started leading")
	}
	return nil
}

// followerHandler proxies every request, unchanged, to the lock holder.
func (d *Daemon) followerHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpmetrics.SetRoute(r, "proxied")
		problem.Pass(r)        // the leader answered for this client
		if !d.lockSet.Load() { // still starting: no lock to ask yet
			http.Error(w, "Leader not found", http.StatusInternalServerError)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		holder, err := d.lock.Holder(ctx)
		cancel()
		if err != nil || holder == "" || holder == d.cfg.InternalAddress {
			http.Error(w, "Leader not found", http.StatusInternalServerError)
			return
		}
		target := &url.URL{Scheme: "http", Host: holder}
		var transport http.RoundTripper
		if d.proxyTLS != nil {
			target.Scheme = "https"
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.TLSClientConfig = d.proxyTLS
			tr.DisableKeepAlives = true
			transport = tr
		}
		p := &httputil.ReverseProxy{
			Transport: transport,
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(target)
				pr.Out.Host = pr.In.Host
			},
			ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
				d.log.WithError(err).WithField("leader", holder).Warn("proxy to leader")
				http.Error(w, "Leader not reachable: "+err.Error(), http.StatusBadGateway)
			},
		}
		p.ServeHTTP(w, r)
	})
}

// leaderHandler serves /version and /info itself and everything else with
// the leader's API handler.
func (d *Daemon) leaderHandler(api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			switch r.URL.Path {
			case "/version":
				httpmetrics.SetRoute(r, r.URL.Path)
				writeRawJSON(w, d.cfg.Version)
				return
			case "/info":
				httpmetrics.SetRoute(r, r.URL.Path)
				d.serveInfo(w, r)
				return
			}
		}
		api.ServeHTTP(w, r)
	})
}

func (d *Daemon) serveInfo(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	holder, err := d.lock.Holder(ctx)
	if err != nil || holder == "" {
		http.Error(w, "Leader not found", http.StatusInternalServerError)
		return
	}
	nodes := func(svc string) []string {
		list, err := d.store.GetService(ctx, svc)
		if err != nil {
			return []string{}
		}
		seen := map[string]bool{}
		out := []string{}
		for _, s := range list {
			if !seen[s.HostAddr] {
				seen[s.HostAddr] = true
				out = append(out, s.HostAddr)
			}
		}
		return out
	}
	host, _, _ := net.SplitHostPort(d.cfg.InternalAddress)
	writeRawJSON(w, map[string]any{
		"local-ip":        host,
		"leader-ip":       holder,
		"current-state":   d.State(),
		"netplugin-nodes": nodes(ServiceNetplugin),
		"netmaster-nodes": nodes(ServiceNetmaster),
	})
}

// writeRawJSON writes JSON without a content type, as the original's GET
// routes did.
func writeRawJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Write(b)
}

// httpErrorLog sends the HTTP server's own errors (TLS handshakes that
// failed, ...) to the daemon's log at debug level.
func httpErrorLog(log *logrus.Entry) *stdlog.Logger {
	return stdlog.New(debugWriter{log}, "", 0)
}

type debugWriter struct{ log *logrus.Entry }

func (w debugWriter) Write(p []byte) (int, error) {
	w.log.Debug(strings.TrimSpace(string(p)))
	return len(p), nil
}

// checkMigration refuses to run on a store a `netmaster migrate` has not
// finished writing (docs/upgrade.md): its state would be partial.
func checkMigration(ctx context.Context, st objdb.KV) error {
	s, _, err := migrate.ReadStatus(ctx, st)
	if err != nil {
		return fmt.Errorf("check for an unfinished migration: %w", err)
	}
	if s != nil && s.State != migrate.StateDone {
		return fmt.Errorf("the store holds an unfinished migration from %s (%s says %q since %s): run the same `netmaster migrate` command again to finish it before starting the netmaster",
			s.Source, migrate.StatusKey, s.State, s.Started.Format(time.RFC3339))
	}
	return nil
}
