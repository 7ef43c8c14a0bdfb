// Package etcd is the etcd v3 backend of objdb. It talks to etcd through
// go.etcd.io/etcd/client/v3 and uses the library's own primitives for
// everything with a lifetime: leases and KeepAlive for registered services,
// concurrency.Session and concurrency.Election for leader locks, and the
// client's resuming Watch for prefix watches.
package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"
	grpcbackoff "google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/contiv/netplugin/objdb"

	"github.com/contiv/netplugin/utils/ctxutil"
)

// DefaultEndpoint is the etcd client URL used when Config.Endpoints is empty
// (the original's --etcd default).
const DefaultEndpoint = "http://127.0.0.1:2379"

// Defaults of the Config durations.
const (
	DefaultDialTimeout    = 5 * time.Second
	DefaultRequestTimeout = 5 * time.Second
	DefaultRetryBudget    = 15 * time.Second
)

// Config configures a Client.
type Config struct {
	// Endpoints are etcd client URLs. Each element may itself be a comma
	// separated list, as the daemons' --etcd flag is
	// ("http://127.0.0.1:2379,http://10.0.0.2:2379"). Only http and https
	// URLs with a host are accepted. Empty means DefaultEndpoint.
	Endpoints []string
	// Root is the absolute key prefix every key lives under
	// (objdb.DefaultRoot when empty).
	Root string
	// DialTimeout bounds each attempt of the connectivity check New makes
	// (DefaultDialTimeout when zero).
	DialTimeout time.Duration
	// RequestTimeout bounds one attempt of one store request
	// (DefaultRequestTimeout when zero).
	RequestTimeout time.Duration
	// RetryBudget bounds how long a request keeps retrying transient
	// errors (store unreachable, no leader, attempt timed out) before it
	// fails with objdb.ErrUnavailable (DefaultRetryBudget when zero). A
	// request makes at least two attempts.
	RetryBudget time.Duration
	// Logger receives the backend's own logs; etcd's client library logs
	// only its errors there. Nil means the logrus standard logger.
	Logger *logrus.Entry
	// TLS, when set, is used for https endpoints: the CAs that sign the
	// servers' certificates and the client certificate etcd's
	// --client-cert-auth asks for (tlsutil.ClientConfig builds it). An
	// https endpoint without it trusts the system roots and presents no
	// certificate.
	TLS *tls.Config
	// Username and Password authenticate to an etcd with auth enabled
	// (both or neither).
	Username, Password string
}

// Client is an objdb.Store on etcd v3.
type Client struct {
	cli       *clientv3.Client
	root      string // absolute, without trailing slash
	endpoints []string
	dialTO    time.Duration
	reqTO     time.Duration
	budget    time.Duration
	log       *logrus.Entry

	// ctx is cancelled by Close; every background goroutine watches it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	services map[string]*registration // by relative key

	regMu sync.Mutex // serialises RegisterService / DeregisterService

	roundTrips atomic.Int64 // KV requests sent (RoundTrips)
}

// RoundTrips is how many key-value requests (reads, writes, transactions;
// every attempt of a retried one) this client has sent to etcd. Lock and
// service keep-alives and watch streams are not counted. Benchmarks read
// it to report store round trips per operation (docs/scale.md).
func (c *Client) RoundTrips() int64 { return c.roundTrips.Load() }

var _ objdb.Store = (*Client)(nil)

// ParseEndpoints splits and validates etcd client URLs. Each element may be
// a comma separated list. It returns "scheme://host:port" strings, or an
// error wrapping objdb.ErrInvalid that names the first bad URL.
func ParseEndpoints(list []string) ([]string, error) {
	var out []string
	for _, item := range list {
		for _, raw := range strings.Split(item, ",") {
			raw = strings.TrimSpace(raw)
			if raw == "" {
				continue
			}
			u, err := url.Parse(raw)
			if err != nil {
				return nil, fmt.Errorf("%w: etcd endpoint %q: %v", objdb.ErrInvalid, raw, err)
			}
			if u.Scheme != "http" && u.Scheme != "https" {
				return nil, fmt.Errorf("%w: etcd endpoint %q: scheme must be http or https", objdb.ErrInvalid, raw)
			}
			if u.Hostname() == "" {
				return nil, fmt.Errorf("%w: etcd endpoint %q: no host", objdb.ErrInvalid, raw)
			}
			if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
				return nil, fmt.Errorf("%w: etcd endpoint %q: only scheme://host:port is allowed", objdb.ErrInvalid, raw)
			}
			out = append(out, u.Scheme+"://"+u.Host)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no etcd endpoint in %q", objdb.ErrInvalid, list)
	}
	return out, nil
}

// New connects to etcd and proves the connection with a read, retrying with
// exponential backoff within cfg.RetryBudget and ctx. Bad configuration
// fails at once with objdb.ErrInvalid; an unreachable store fails with
// objdb.ErrUnavailable naming the endpoints.
func New(ctx context.Context, cfg Config) (*Client, error) {
	eps := cfg.Endpoints
	if len(eps) == 0 {
		eps = []string{DefaultEndpoint}
	}
	endpoints, err := ParseEndpoints(eps)
	if err != nil {
		return nil, err
	}
	root := cfg.Root
	if root == "" {
		root = objdb.DefaultRoot
	}
	root = strings.TrimRight(root, "/")
	log := cfg.Logger
	if log == nil {
		log = logrus.NewEntry(logrus.StandardLogger())
	}
	log = log.WithField("store", "etcd")

	c := &Client{
		root:      root,
		endpoints: endpoints,
		dialTO:    orDefault(cfg.DialTimeout, DefaultDialTimeout),
		reqTO:     orDefault(cfg.RequestTimeout, DefaultRequestTimeout),
		budget:    orDefault(cfg.RetryBudget, DefaultRetryBudget),
		log:       log,
		services:  map[string]*registration{},
	}
	tlsCfg, err := clientTLS(endpoints, cfg.TLS)
	if err != nil {
		return nil, err
	}
	if (cfg.Username == "") != (cfg.Password == "") {
		return nil, fmt.Errorf("%w: etcd user name and password go together", objdb.ErrInvalid)
	}
	// A certificate the store refuses looks to gRPC like a store that is
	// down; ask each endpoint once over plain TLS to tell the two apart.
	if err := probeTLS(ctx, endpoints, tlsCfg, c.dialTO); err != nil {
		return nil, err
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())

	cli, err := clientv3.New(clientv3.Config{
		TLS:         tlsCfg,
		Username:    cfg.Username,
		Password:    cfg.Password,
		Endpoints:   endpoints,
		DialTimeout: c.dialTO,
		// Keep-alive probes notice a dead connection and make the
		// client redial instead of waiting on a half-open socket.
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 3 * time.Second,
		Context:              c.ctx,
		// Redial a store that came back within seconds: gRPC's default
		// reconnect backoff grows to two minutes.
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           grpcbackoff.Config{BaseDelay: 250 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 3 * time.Second},
			MinConnectTimeout: c.dialTO,
		})},
		Logger: NewZapLogger(log.WithField("component", "etcd-client"), zapcore.ErrorLevel),
	})
	if err != nil {
		c.cancel()
		if isAuthErr(err) {
			return nil, fmt.Errorf("etcd at %s refused user %q: %w: %v", strings.Join(endpoints, ","), cfg.Username, objdb.ErrAuth, err)
		}
		return nil, fmt.Errorf("etcd client for %s: %w", strings.Join(endpoints, ","), err)
	}
	c.cli = cli

	err = c.retry(ctx, "connect", root, c.dialTO, func(actx context.Context) error {
		_, err := cli.Get(actx, root, clientv3.WithCountOnly())
		return err
	})
	if err != nil {
		c.cancel()
		cli.Close()
		if isAuthErr(err) {
			who := "this client"
			if cfg.Username != "" {
				who = fmt.Sprintf("user %q", cfg.Username)
			}
			return nil, fmt.Errorf("etcd at %s refused %s: %w: %v", strings.Join(endpoints, ","), who, objdb.ErrAuth, err)
		}
		if errors.Is(err, objdb.ErrUnavailable) {
			// The store may have come up refusing the certificate after
			// the first probe: say so rather than "unavailable".
			if perr := probeTLS(ctx, endpoints, tlsCfg, c.dialTO); perr != nil {
				return nil, perr
			}
		}
		return nil, fmt.Errorf("connect to etcd at %s: %w", strings.Join(endpoints, ","), err)
	}
	log.WithField("endpoints", strings.Join(endpoints, ",")).Debug("connected to etcd")
	return c, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Root returns the absolute key prefix of this client.
func (c *Client) Root() string { return c.root }

// Endpoints returns the normalised client URLs in use.
func (c *Client) Endpoints() []string { return append([]string(nil), c.endpoints...) }

// Close stops every watch, lock campaign and service keep-alive, waits for
// their goroutines and closes the connection. Services are not deregistered
// and held locks are not resigned: their leases expire by TTL, as if the
// process had died. A second Close is a no-op.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
	if err := c.cli.Close(); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("close etcd client: %w", err)
	}
	return nil
}

// goStart runs f in a goroutine that Close waits for.
func (c *Client) goStart(f func()) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return objdb.ErrClosed
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
	return nil
}

// withClient returns a context that ends when ctx ends or the client is
// closed.
func (c *Client) withClient(ctx context.Context) (context.Context, context.CancelFunc) {
	cctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.ctx, cancel)
	return cctx, func() {
		stop()
		cancel()
	}
}

// full maps a relative key to the absolute etcd key.
func (c *Client) full(key string) string { return c.root + "/" + key }

// rel maps an absolute etcd key back to a relative one.
func (c *Client) rel(key []byte) string {
	return strings.TrimPrefix(string(key), c.root+"/")
}

// checkPrefix validates a List/Watch prefix: "" (everything under the root)
// or a relative key, possibly ending in "/".
func checkPrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	return objdb.CheckKey(prefix)
}

// isTransient reports errors worth retrying: the store is unreachable or
// has no leader, or one attempt timed out.
func isTransient(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		return ee.Code() == codes.Unavailable
	}
	if s, ok := status.FromError(err); ok {
		return s.Code() == codes.Unavailable || s.Code() == codes.DeadlineExceeded
	}
	return false
}

// Retry delays: the shared backoff (ctxutil.NewBackoff) between these.
const (
	backoffMin = 100 * time.Millisecond
	backoffMax = 2 * time.Second
)

// retry runs f with a per-attempt timeout until it succeeds, fails with a
// non-transient error, ctx ends, the client is closed or the retry budget
// is spent. Errors are wrapped with op and key; a spent budget wraps
// objdb.ErrUnavailable.
func (c *Client) retry(ctx context.Context, op, key string, attemptTO time.Duration, f func(context.Context) error) error {
	start := time.Now()
	bo := ctxutil.NewBackoff(backoffMin, backoffMax)
	for attempt := 1; ; attempt++ {
		if c.ctx.Err() != nil {
			return fmt.Errorf("%s %q: %w", op, key, objdb.ErrClosed)
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s %q: %w", op, key, err)
		}
		actx, cancel := c.withClient(ctx)
		actx, cancelTO := context.WithTimeout(actx, attemptTO)
		c.roundTrips.Add(1)
		err := f(actx)
		cancelTO()
		cancel()
		if err == nil {
			return nil
		}
		if c.ctx.Err() != nil {
			return fmt.Errorf("%s %q: %w", op, key, objdb.ErrClosed)
		}
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("%s %q: %w", op, key, cerr)
		}
		if !isTransient(err) {
			return fmt.Errorf("%s %q: %w", op, key, err)
		}
		d := bo.NextBackOff()
		// Give up when the budget is spent, but never after a single
		// attempt: one slow attempt on a busy machine is not an outage.
		if attempt >= 2 && time.Since(start)+d > c.budget {
			return fmt.Errorf("%s %q: %w after %d attempts in %s: %w",
				op, key, objdb.ErrUnavailable, attempt, time.Since(start).Round(time.Millisecond), err)
		}
		c.log.WithFields(logrus.Fields{"op": op, "key": key, "attempt": attempt, "error": err}).
			Warn("etcd request failed, retrying")
		sctx, scancel := c.withClient(ctx)
		ctxutil.Sleep(sctx, d)
		scancel()
	}
}

// doWrite is do for a write: uncertain reports that an attempt failed after
// it may have reached the store (it timed out, lost its connection or was
// cancelled), so it may have been applied although the call fails.
func (c *Client) doWrite(ctx context.Context, op, key string, f func(context.Context) error) (uncertain bool, err error) {
	err = c.do(ctx, op, key, func(actx context.Context) error {
		err := f(actx)
		if err != nil && (isTransient(err) || errors.Is(err, context.Canceled) || status.Code(err) == codes.Canceled) {
			uncertain = true
		}
		return err
	})
	return uncertain, err
}

// markUncertain adds objdb.ErrUncertain to err when an attempt may have
// been applied.
func markUncertain(err error, uncertain bool) error {
	if !uncertain || errors.Is(err, objdb.ErrUncertain) {
		return err
	}
	return fmt.Errorf("%w (%w)", err, objdb.ErrUncertain)
}

// do is retry with the request timeout.
func (c *Client) do(ctx context.Context, op, key string, f func(context.Context) error) error {
	return c.retry(ctx, op, key, c.reqTO, f)
}
