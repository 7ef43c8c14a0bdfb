// Package embedetcd runs a single-member etcd server inside the process
// (go.etcd.io/etcd/server/v3/embed), so netmaster works on one host with no
// store installed (docs/architecture.md decision 6). Clients reach it through its
// client URL like any external etcd.
package embedetcd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/etcd"
)

// Defaults of Config.
const (
	DefaultName         = "default"
	DefaultClientURL    = "http://127.0.0.1:2379"
	DefaultPeerURL      = "http://127.0.0.1:2380"
	DefaultStartTimeout = 60 * time.Second
	// DefaultCompactionRetention is how much history automatic
	// compaction keeps (docs/dataplane-scale.md).
	DefaultCompactionRetention = 5 * time.Minute
	// DefaultDefragInterval is how often the database file is checked
	// for free space worth giving back.
	DefaultDefragInterval = 10 * time.Minute
)

// Config configures the embedded server.
type Config struct {
	// Name is the member name (DefaultName when empty).
	Name string
	// DataDir holds the member's data; it survives restarts. Required.
	DataDir string
	// ClientURL is where clients connect (DefaultClientURL when empty).
	// Port 0 picks a free port; Server.Endpoint reports it.
	ClientURL string
	// PeerURL is the raft peer URL (DefaultPeerURL when empty); port 0
	// picks a free port.
	PeerURL string
	// StartTimeout bounds the wait for the server to be ready
	// (DefaultStartTimeout when zero).
	StartTimeout time.Duration
	// Logger receives the server's errors (etcd logs nothing below error
	// level). Nil means the logrus standard logger.
	Logger *logrus.Entry
	// CompactionRetention is the history kept by the periodic automatic
	// compaction (DefaultCompactionRetention when zero; negative turns
	// compaction off).
	CompactionRetention time.Duration
	// DefragInterval is how often the server defragments its database
	// file when a quarter of it is free or a compaction ran since
	// (DefaultDefragInterval when zero; negative turns it off).
	DefragInterval time.Duration
	// CertFile and KeyFile, PEM, serve https:// client and peer URLs;
	// with ClientCAFile every client must present a certificate signed
	// by one of its CAs (etcd's --client-cert-auth).
	CertFile, KeyFile, ClientCAFile string
	// Insecure allows a plain http:// URL on an address that is not
	// loopback. Without it such a URL is refused: anyone who reaches the
	// address could read and write the whole store.
	Insecure bool
}

// Server is a running embedded etcd.
type Server struct {
	e        *embed.Etcd
	endpoint string
	peerURL  string
	log      *logrus.Entry

	closing   *atomic.Bool // set by Close: shutdown errors are expected
	closeOnce sync.Once
	stopMaint context.CancelFunc // ends the maintenance loop
	maintDone chan struct{}      // closed when it has ended
}

// Start starts the server and waits until it serves clients, bounded by ctx
// and Config.StartTimeout. On failure nothing is left running.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.DataDir == "" {
		return nil, fmt.Errorf("embedded etcd: %w: empty data directory", objdb.ErrInvalid)
	}
	if cfg.Name == "" {
		cfg.Name = DefaultName
	}
	if cfg.ClientURL == "" {
		cfg.ClientURL = DefaultClientURL
	}
	if cfg.PeerURL == "" {
		cfg.PeerURL = DefaultPeerURL
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	if cfg.CompactionRetention == 0 {
		cfg.CompactionRetention = DefaultCompactionRetention
	}
	if cfg.DefragInterval == 0 {
		cfg.DefragInterval = DefaultDefragInterval
	}
	log := cfg.Logger
	if log == nil {
		log = logrus.NewEntry(logrus.StandardLogger())
	}
	log = log.WithField("component", "embedded-etcd")

	curl, err := parseURL("client", cfg.ClientURL)
	if err != nil {
		return nil, err
	}
	purl, err := parseURL("peer", cfg.PeerURL)
	if err != nil {
		return nil, err
	}
	if err := cfg.checkSecurity(curl, purl); err != nil {
		return nil, err
	}
	for _, u := range []*url.URL{curl, purl} {
		if u.Scheme == "http" && !isLoopback(u.Hostname()) {
			log.Warnf("INSECURE: embedded etcd serves plain http on %s: anyone who reaches it reads and writes the store", u)
		}
	}
	// Ports we pick can be taken by someone else before etcd binds them;
	// then pick again.
	picked := curl.Port() == "0" || purl.Port() == "0"
	for attempt := 1; ; attempt++ {
		s, err := start(ctx, cfg, curl, purl, log)
		if err == nil {
			return s, nil
		}
		if !picked || attempt >= 3 || !errors.Is(err, syscall.EADDRINUSE) || ctx.Err() != nil {
			return nil, err
		}
		log.WithError(err).Warn("picked port was taken, trying other ports")
	}
}

func parseURL(what, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd: %w: %s URL %q: %v", objdb.ErrInvalid, what, raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.Port() == "" {
		return nil, fmt.Errorf("embedded etcd: %w: %s URL %q must be http://host:port or https://host:port", objdb.ErrInvalid, what, raw)
	}
	return u, nil
}

// resolvePort replaces port 0 with a free port of the URL's host.
func resolvePort(u *url.URL) (url.URL, error) {
	out := *u
	if u.Port() != "0" {
		return out, nil
	}
	l, err := net.Listen("tcp", net.JoinHostPort(u.Hostname(), "0"))
	if err != nil {
		return out, fmt.Errorf("pick a free port on %s: %w", u.Hostname(), err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	out.Host = net.JoinHostPort(u.Hostname(), strconv.Itoa(port))
	return out, nil
}

func start(ctx context.Context, cfg Config, curl, purl *url.URL, log *logrus.Entry) (*Server, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("embedded etcd %q: %w", cfg.Name, err)
	}
	cu, err := resolvePort(curl)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd: %w", err)
	}
	pu, err := resolvePort(purl)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd: %w", err)
	}

	ec := embed.NewConfig()
	ec.Name = cfg.Name
	ec.Dir = cfg.DataDir
	ec.ListenClientUrls = []url.URL{cu}
	ec.AdvertiseClientUrls = []url.URL{cu}
	ec.ListenPeerUrls = []url.URL{pu}
	ec.AdvertisePeerUrls = []url.URL{pu}
	ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	cfg.applyTLS(ec, cu, pu)
	ec.LogLevel = "error"
	configureDisk(ec, cfg)
	closing := new(atomic.Bool)
	lg := etcd.NewZapLogger(log, zapcore.ErrorLevel).WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return &quietOnClose{Core: c, closing: closing}
	}))
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(lg)

	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd %q in %s: %w", cfg.Name, cfg.DataDir, err)
	}
	mctx, stopMaint := context.WithCancel(context.Background())
	s := &Server{e: e, endpoint: cu.String(), peerURL: pu.String(), log: log, closing: closing,
		stopMaint: stopMaint, maintDone: make(chan struct{})}
	go s.maintain(mctx, cfg.DefragInterval)

	timer := time.NewTimer(cfg.StartTimeout)
	defer timer.Stop()
	select {
	case <-e.Server.ReadyNotify():
		log.WithField("endpoint", s.endpoint).Debug("embedded etcd ready")
		return s, nil
	case err := <-e.Err():
		s.Close()
		return nil, fmt.Errorf("embedded etcd %q failed while starting: %w", cfg.Name, err)
	case <-timer.C:
		s.Close()
		return nil, fmt.Errorf("embedded etcd %q: %w: not ready after %s", cfg.Name, objdb.ErrUnavailable, cfg.StartTimeout)
	case <-ctx.Done():
		s.Close()
		return nil, fmt.Errorf("embedded etcd %q: %w", cfg.Name, ctx.Err())
	}
}

// Endpoint is the client URL ("http://127.0.0.1:port", or https).
func (s *Server) Endpoint() string { return s.endpoint }

// PeerURL is the raft peer URL in use (with the picked port).
func (s *Server) PeerURL() string { return s.peerURL }

// Err reports errors of the running server; it is closed after Close.
func (s *Server) Err() <-chan error { return s.e.Err() }

// Close stops the server and waits until it has stopped. A second Close is
// a no-op. etcd lets open client streams (watches, lease keep-alives)
// finish for up to its request timeout (about 7 s) before cutting them, so
// close this process's own clients first for a quick shutdown.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.stopMaint()
		<-s.maintDone
		s.closing.Store(true)
		s.e.Close()
		<-s.e.Server.StopNotify()
	})
	return nil
}

// isBenign reports errors etcd logs in normal operation of a fresh
// single member: its version monitor fails to write the storage version
// until the first raft term is persisted, and retries by itself.
func isBenign(msg string) bool {
	switch msg {
	case "failed to update storage version":
		return true
	}
	return false
}

// quietOnClose drops the server's log entries once Close has begun: while
// shutting down, etcd logs every listener it closes as an error. It also
// drops the benign errors isBenign names at any time.
type quietOnClose struct {
	zapcore.Core
	closing *atomic.Bool
}

func (q *quietOnClose) With(fields []zapcore.Field) zapcore.Core {
	return &quietOnClose{Core: q.Core.With(fields), closing: q.closing}
}

func (q *quietOnClose) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if q.closing.Load() || isBenign(e.Message) {
		return ce
	}
	return q.Core.Check(e, ce)
}
