// Package consul is the consul backend of objdb: KV on consul's key/value
// store (compare-and-swap on ModifyIndex), prefix watches on blocking
// queries, leader locks and the service registry on consul sessions.
//
// Consul facts this backend is built around (verified against a real agent,
// see the package tests):
//
//   - Consul keys never start with "/": the root "/contiv.io" is stored as
//     "contiv.io".
//   - A session with TTL T is invalidated by the servers only after up to
//     2×T without a renewal, and T must lie within the agent's
//     session_ttl_min (default 10s) and 24h; a TTL outside is refused with an
//     HTTP 500. A lock or service that must outlive a dead holder by at most
//     ttl therefore asks for a session TTL of ttl/2, raised to the agent's
//     session_ttl_min (read from /v1/agent/self; 10s assumed if unreadable)
//     with a warning; expiry then takes up to 2×session_ttl_min. Test agents
//     run with session_ttl_min = "1s".
//   - Consul keeps no history a client can read: a watch sees the state after
//     each change of the prefix, not every intermediate state. See Watch.
package consul

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/hashicorp/consul/api"
	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/utils/ctxutil"
)

// Defaults of Config.
const (
	DefaultRequestTimeout = 5 * time.Second
	DefaultRetries        = 10
	DefaultRetryBackoff   = 100 * time.Millisecond
	DefaultMaxBackoff     = time.Second
	DefaultWaitTime       = 30 * time.Second

	// lockDelay is the lock-delay of every session this backend creates
	// (the original's 10 ms). Zero cannot be asked for through the API
	// client: it means "consul's default" (15 s).
	lockDelay = 10 * time.Millisecond
	// consulDefaultTTLMin is consul's default session_ttl_min, assumed when
	// the agent refuses a TTL and does not tell its own minimum.
	consulDefaultTTLMin = 10 * time.Second
)

// Config configures a consul client.
type Config struct {
	// Endpoints are consul agents' HTTP addresses "host:port"; a leading
	// "http://" is accepted and stripped. The first that answers is used.
	Endpoints []string
	// Root is the key prefix the client works under (objdb.DefaultRoot when
	// empty). Its leading "/" is stripped: consul keys never start with one.
	Root string
	// RequestTimeout bounds each single request (not blocking queries,
	// which get WaitTime on top). DefaultRequestTimeout when zero.
	RequestTimeout time.Duration
	// Retries is the number of retries of a request that failed for a
	// transient reason (connection refused or reset, server error), with
	// exponential backoff from RetryBackoff up to MaxBackoff. Zero means
	// DefaultRetries; a negative value means no retry.
	Retries      int
	RetryBackoff time.Duration
	MaxBackoff   time.Duration
	// WaitTime is how long one blocking query waits for a change
	// (DefaultWaitTime when zero).
	WaitTime time.Duration
	// Logger receives retries and background failures (logrus standard
	// logger when nil).
	Logger *logrus.Entry
	// TLS, when set, makes the client talk https to the agents: the CAs
	// that sign the agents' certificates and the client certificate an
	// agent with verify_incoming asks for (tlsutil.ClientConfig builds
	// it). An "https://" endpoint without it trusts the system roots.
	TLS *tls.Config
	// Token is the ACL token sent with every request (none when empty;
	// the consul client library then takes CONSUL_HTTP_TOKEN).
	Token string
}

// Client is a connected consul backend. It implements objdb.Store.
type Client struct {
	cfg       Config
	root      string // consul prefix without leading or trailing "/"; "" = whole KV
	endpoint  string // the endpoint in use
	api       *api.Client
	transport *http.Transport
	log       *logrus.Entry

	// base is cancelled by Close; every background goroutine derives from
	// it and is counted in wg.
	base   context.Context
	cancel context.CancelFunc
	lifeMu sync.Mutex // orders goOwned's wg.Add before Close's wg.Wait
	wg     sync.WaitGroup
	closed atomic.Bool

	// ttlMin is the agent's session_ttl_min (nanoseconds; 0 = not read
	// yet); ttlWarned is set once the raised TTL has been logged.
	ttlMin    atomic.Int64
	ttlWarned atomic.Bool

	svcMu    sync.Mutex
	services map[string]*serviceReg // by full consul key
}

var _ objdb.Store = (*Client)(nil)

// ParseEndpoint checks one endpoint and returns it as "host:port". A
// leading "http://" or "https://" and a trailing "/" are stripped; any
// other scheme, a path, a missing or non-numeric port or an empty host is
// an error wrapping objdb.ErrInvalid that names the endpoint.
func ParseEndpoint(ep string) (string, error) {
	_, hp, err := parseEndpoint(ep)
	return hp, err
}

// parseEndpoint is ParseEndpoint that also returns the scheme the
// endpoint named ("" when none).
func parseEndpoint(ep string) (scheme, hostport string, err error) {
	s := strings.TrimSpace(ep)
	for _, sch := range []string{"http", "https"} {
		if rest, ok := strings.CutPrefix(s, sch+"://"); ok {
			scheme, s = sch, rest
			break
		}
	}
	s = strings.TrimSuffix(s, "/")
	if s == "" {
		return "", "", fmt.Errorf("%w: consul endpoint %q is empty", objdb.ErrInvalid, ep)
	}
	if strings.Contains(s, "://") {
		return "", "", fmt.Errorf("%w: consul endpoint %q: only http:// and https:// are supported", objdb.ErrInvalid, ep)
	}
	hp, err := checkHostPort(ep, s)
	return scheme, hp, err
}

func checkHostPort(ep, s string) (string, error) {
	if strings.ContainsAny(s, "/?#@ ") {
		return "", fmt.Errorf("%w: consul endpoint %q: want host:port", objdb.ErrInvalid, ep)
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", fmt.Errorf("%w: consul endpoint %q: %v", objdb.ErrInvalid, ep, err)
	}
	if host == "" {
		return "", fmt.Errorf("%w: consul endpoint %q has no host", objdb.ErrInvalid, ep)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return "", fmt.Errorf("%w: consul endpoint %q: port %q is not a number in 1-65535", objdb.ErrInvalid, ep, port)
	}
	return net.JoinHostPort(host, port), nil
}

// New validates cfg, connects to the first endpoint that answers a read
// and returns the client. Malformed endpoints fail at once with
// objdb.ErrInvalid; unreachable ones fail after the retry budget (or when
// ctx ends) with an error wrapping objdb.ErrUnavailable.
func New(ctx context.Context, cfg Config) (*Client, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, fmt.Errorf("%w: no consul endpoint given", objdb.ErrInvalid)
	}
	eps := make([]string, 0, len(cfg.Endpoints))
	schemes := map[string]bool{}
	for _, ep := range cfg.Endpoints {
		sch, hp, err := parseEndpoint(ep)
		if err != nil {
			return nil, err
		}
		schemes[sch] = true
		eps = append(eps, hp)
	}
	scheme, err := pickScheme(schemes, cfg.TLS != nil)
	if err != nil {
		return nil, err
	}
	if scheme == "https" && cfg.TLS == nil {
		cfg.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if cfg.Root == "" {
		cfg.Root = objdb.DefaultRoot
	}
	root := strings.Trim(cfg.Root, "/")
	if root != "" {
		if err := objdb.CheckKey(root); err != nil {
			return nil, fmt.Errorf("consul root %q: %w", cfg.Root, err)
		}
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.Retries == 0 {
		cfg.Retries = DefaultRetries
	} else if cfg.Retries < 0 {
		cfg.Retries = 0
	}
	if cfg.RetryBackoff <= 0 {
		cfg.RetryBackoff = DefaultRetryBackoff
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	if cfg.WaitTime <= 0 {
		cfg.WaitTime = DefaultWaitTime
	}
	if cfg.Logger == nil {
		cfg.Logger = logrus.NewEntry(logrus.StandardLogger())
	}
	log := cfg.Logger.WithField("objdb", "consul")

	// Probe the endpoints in turn, round after round, until one answers a
	// read or the budget is spent.
	var lastErr error
	bo := cfg.newBackoff()
	for attempt := 0; attempt <= cfg.Retries; attempt++ {
		for _, ep := range eps {
			c, err := newClient(cfg, scheme, ep, root, log)
			if err != nil {
				return nil, err
			}
			rctx, cancel := context.WithTimeout(ctx, cfg.RequestTimeout)
			_, _, err = c.api.KV().Get(c.full("probe"), (&api.QueryOptions{}).WithContext(rctx))
			cancel()
			if err == nil {
				log.WithField("endpoint", ep).Debug("connected to consul")
				return c, nil
			}
			c.transport.CloseIdleConnections()
			c.cancel()
			if ctx.Err() != nil {
				return nil, fmt.Errorf("connect to consul %s: %w (last error: %v)", strings.Join(eps, ","), ctx.Err(), err)
			}
			if aerr := authError(scheme, ep, cfg, err); aerr != nil {
				return nil, aerr
			}
			lastErr = fmt.Errorf("consul endpoint %s: %w", ep, err)
			if !transient(err) {
				return nil, fmt.Errorf("connect to consul: %w", lastErr)
			}
		}
		if attempt == cfg.Retries {
			break
		}
		d := bo.NextBackOff()
		log.WithError(lastErr).Warnf("consul not reachable, retry %d/%d in %v", attempt+1, cfg.Retries, d)
		if !ctxutil.Sleep(ctx, d) {
			return nil, fmt.Errorf("connect to consul %s: %w (last error: %v)", strings.Join(eps, ","), ctx.Err(), lastErr)
		}
	}
	return nil, fmt.Errorf("connect to consul %s: %w: %v", strings.Join(eps, ","), objdb.ErrUnavailable, lastErr)
}

func newClient(cfg Config, scheme, ep, root string, log *logrus.Entry) (*Client, error) {
	tr := &http.Transport{
		Proxy:               nil, // loopback and cluster-internal: never through an HTTP proxy
		DialContext:         (&net.Dialer{Timeout: cfg.RequestTimeout, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        64,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
	}
	if cfg.TLS != nil {
		tr.TLSClientConfig = cfg.TLS.Clone()
		tr.TLSHandshakeTimeout = cfg.RequestTimeout
	}
	ac, err := api.NewClient(&api.Config{Address: ep, Scheme: scheme, Transport: tr, Token: cfg.Token})
	if err != nil {
		return nil, fmt.Errorf("%w: consul endpoint %q: %v", objdb.ErrInvalid, ep, err)
	}
	base, cancel := context.WithCancel(context.Background())
	return &Client{
		cfg:       cfg,
		root:      root,
		endpoint:  ep,
		api:       ac,
		transport: tr,
		log:       log.WithField("endpoint", ep),
		base:      base,
		cancel:    cancel,
		services:  map[string]*serviceReg{},
	}, nil
}

// Root is the consul key prefix of this client (no leading "/").
func (c *Client) Root() string { return c.root }

// Endpoint is the agent address in use.
func (c *Client) Endpoint() string { return c.endpoint }

// Close stops every watch, lock campaign and service keep-alive and waits
// for them. Sessions are not destroyed: registered services and held locks
// expire by TTL, as if the process had died. A second Close is a no-op.
func (c *Client) Close() error {
	c.lifeMu.Lock()
	already := c.closed.Swap(true)
	c.lifeMu.Unlock()
	if already {
		return nil
	}
	c.cancel()
	c.wg.Wait()
	c.transport.CloseIdleConnections()
	return nil
}

// full maps a relative key or prefix ("" = everything under the root) to
// its consul key.
func (c *Client) full(rel string) string {
	if c.root == "" {
		return rel
	}
	return c.root + "/" + rel
}

// rel maps a consul key back to a relative key.
func (c *Client) rel(full string) string {
	if c.root == "" {
		return full
	}
	return strings.TrimPrefix(full, c.root+"/")
}

func (c *Client) checkOpen() error {
	if c.closed.Load() {
		return objdb.ErrClosed
	}
	return nil
}

// goOwned runs fn in a goroutine owned by the client (Close cancels c.base
// and waits for it). It fails with ErrClosed once Close has begun.
func (c *Client) goOwned(fn func()) error {
	c.lifeMu.Lock()
	defer c.lifeMu.Unlock()
	if c.closed.Load() {
		return objdb.ErrClosed
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		fn()
	}()
	return nil
}

// transient reports whether err is worth retrying: transport failures and
// server-side errors. Client errors (4xx) are final.
func transient(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.Canceled) {
		return false
	}
	var se api.StatusError
	if errors.As(err, &se) {
		return se.Code >= 500 || se.Code == http.StatusTooManyRequests
	}
	if errors.Is(err, objdb.ErrInvalid) || errors.Is(err, objdb.ErrConflict) || errors.Is(err, objdb.ErrNotFound) {
		return false
	}
	// Everything else comes from the transport or from reading a reply:
	// connection refused or reset, EOF, a request timeout.
	return true
}

// newBackoff returns the retry delays between RetryBackoff and MaxBackoff
// (the shared ctxutil backoff).
func (cfg *Config) newBackoff() *backoff.ExponentialBackOff {
	return ctxutil.NewBackoff(cfg.RetryBackoff, cfg.MaxBackoff)
}

// retry runs one request (given its own RequestTimeout on top of ctx) until
// it succeeds, fails for good, or the retry budget is spent; then the error
// wraps objdb.ErrUnavailable. what names the operation and its object.
func (c *Client) retry(ctx context.Context, what string, fn func(ctx context.Context) error) error {
	return c.retryTimeout(ctx, what, c.cfg.RequestTimeout, fn)
}

func (c *Client) retryTimeout(ctx context.Context, what string, timeout time.Duration, fn func(ctx context.Context) error) error {
	bo := c.cfg.newBackoff()
	for attempt := 0; ; attempt++ {
		rctx, cancel := context.WithTimeout(ctx, timeout)
		err := fn(rctx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", what, ctx.Err())
		}
		if !transient(err) {
			return fmt.Errorf("%s: %w", what, err)
		}
		if attempt >= c.cfg.Retries {
			return fmt.Errorf("%s: %w after %d attempts: %v", what, objdb.ErrUnavailable, attempt+1, err)
		}
		d := bo.NextBackOff()
		c.log.WithError(err).Debugf("%s: retry %d/%d in %v", what, attempt+1, c.cfg.Retries, d)
		if !ctxutil.Sleep(ctx, d) {
			return fmt.Errorf("%s: %w", what, ctx.Err())
		}
	}
}

// blockingTimeout bounds one blocking query: consul adds up to WaitTime/16
// of jitter to the wait.
func (c *Client) blockingTimeout() time.Duration {
	return c.cfg.WaitTime + c.cfg.WaitTime/16 + c.cfg.RequestTimeout
}

func qopts(ctx context.Context) *api.QueryOptions {
	return (&api.QueryOptions{}).WithContext(ctx)
}

func wopts(ctx context.Context) *api.WriteOptions {
	return (&api.WriteOptions{}).WithContext(ctx)
}
