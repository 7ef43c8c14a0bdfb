// Package masterclient is netplugin's client of the leader netmaster's
// /plugin/* HTTP API (docs/daemons.md §5.4).
//
// Every call finds the netmaster afresh: the holder of the leader lock
// "netmaster/leader" (its value is the leader's internal "ip:port"), or,
// while nobody holds the lock, the registered "netmaster" service instances
// (their HTTP port; a follower proxies to the leader once there is one).
// The original fell back to the "netmaster.rpc" entries on the JSON-RPC port
// 9001, which cannot answer HTTP (docs/daemons.md §10 row 1).
package masterclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/utils/problem"
)

// Names netmaster registers under (docs/daemons.md §2.3, §2.4). They are
// repeated here so that netplugin does not import netmaster's packages.
const (
	LeaderLock       = "netmaster/leader"
	NetmasterService = "netmaster"
)

// Retry defaults of the original's MasterPostReq: three attempts, one
// second apart, on "connection refused".
const (
	DefaultAttempts      = 3
	DefaultRetryInterval = time.Second
)

// observerID is the holder ID of the lock handle used only to read the
// current holder; it never campaigns.
const observerID = "netplugin-masterclient-observer"

// maxErrorBody bounds how much of an error answer is read into the error.
const maxErrorBody = 64 << 10

// ErrNoMaster: neither a lock holder nor a registered netmaster instance.
var ErrNoMaster = errors.New("masterclient: no netmaster found")

// Store is what the client needs from the cluster store; objdb.Store has it.
type Store interface {
	objdb.Locker
	GetService(ctx context.Context, name string) ([]objdb.ServiceInfo, error)
}

// StatusError is a non-200 answer. Message is the netmaster's message: the
// detail of a problem details answer (the client asks for them, so a
// refusal keeps its 4xx status), else the body text.
type StatusError struct {
	URL        string
	StatusCode int
	Message    string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("netmaster %s answered %d: %s", e.URL, e.StatusCode, e.Message)
}

// Option changes a Client setting.
type Option func(*Client)

// WithHTTPClient sets the HTTP client (default: one with a 30 s timeout).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// WithTLS makes the client speak HTTPS with cfg to netmaster
// (docs/operations.md, "TLS and tokens").
func WithTLS(cfg *tls.Config) Option {
	return func(c *Client) {
		c.scheme = "https"
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = cfg
		c.http = &http.Client{Timeout: 30 * time.Second, Transport: tr}
	}
}

// WithToken sends "Authorization: Bearer <token>" with every request.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithRetry sets how many times a request is tried while every netmaster
// refuses the connection, and the pause between tries. attempts < 1 means 1.
func WithRetry(attempts int, interval time.Duration) Option {
	return func(c *Client) {
		if attempts < 1 {
			attempts = 1
		}
		c.attempts, c.interval = attempts, interval
	}
}

// Client posts to the leader netmaster. It is safe for concurrent use.
type Client struct {
	st       Store
	scheme   string // http or https
	token    string // bearer token ("": none)
	http     *http.Client
	attempts int
	interval time.Duration
}

// New returns a client that finds netmaster through st.
func New(st Store, opts ...Option) *Client {
	c := &Client{
		st:       st,
		scheme:   "http",
		http:     &http.Client{Timeout: 30 * time.Second},
		attempts: DefaultAttempts,
		interval: DefaultRetryInterval,
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Post sends req as JSON to http://<netmaster>/plugin/<path> and decodes a
// 200 answer into resp (nil: the body is ignored). A non-200 answer is a
// *StatusError carrying the body text. When every known netmaster refuses
// the connection the call is retried, with the netmaster looked up again.
func (c *Client) Post(ctx context.Context, path string, req, resp any) error {
	path = strings.TrimPrefix(strings.TrimPrefix(path, "/"), "plugin/")
	return c.Do(ctx, http.MethodPost, "/plugin/"+path, req, resp)
}

// Do is Post for any method and path of the leader netmaster (e.g. the
// REST API, "/api/v1/networks/<key>/"); req nil sends no body.
func (c *Client) Do(ctx context.Context, method, path string, req, resp any) error {
	var body []byte
	if req != nil {
		var err error
		if body, err = json.Marshal(req); err != nil {
			return fmt.Errorf("encode %s request: %w", path, err)
		}
	}
	for attempt := 1; ; attempt++ {
		addrs, err := c.masters(ctx)
		if err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
		var refused error
		for _, addr := range addrs {
			err := c.sendOnce(ctx, method, addr, path, body, resp)
			if !errors.Is(err, syscall.ECONNREFUSED) {
				return err
			}
			refused = err
		}
		if attempt >= c.attempts {
			return fmt.Errorf("%s %s: gave up after %d attempts: %w", method, path, attempt, refused)
		}
		t := time.NewTimer(c.interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s %s: %w", method, path, ctx.Err())
		case <-t.C:
		}
	}
}

func (c *Client) sendOnce(ctx context.Context, method, addr, path string, body []byte, resp any) error {
	url := c.scheme + "://" + addr + path
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	hreq, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return fmt.Errorf("build request for %s: %w", url, err)
	}
	if body != nil {
		hreq.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.token)
	}
	// Refusals keep their 4xx status as problem details
	// (docs/rest-errors.md "Two kinds of client").
	hreq.Header.Set("Accept", problem.Accept)
	hresp, err := c.http.Do(hreq)
	if err != nil {
		return fmt.Errorf("%s %s: %w", strings.ToLower(method), url, err)
	}
	defer hresp.Body.Close()
	if hresp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(hresp.Body, maxErrorBody))
		if d, ok := problem.Parse(hresp.Header, hresp.StatusCode, msg); ok {
			return &StatusError{URL: url, StatusCode: hresp.StatusCode, Message: d.Error()}
		}
		return &StatusError{URL: url, StatusCode: hresp.StatusCode, Message: strings.TrimSpace(string(msg))}
	}
	if resp == nil {
		_, _ = io.Copy(io.Discard, hresp.Body)
		return nil
	}
	if err := json.NewDecoder(hresp.Body).Decode(resp); err != nil {
		return fmt.Errorf("decode answer of %s: %w", url, err)
	}
	return nil
}

// masters returns the addresses to try, in order: the lock holder alone,
// or else every registered netmaster instance (a self-declared leader
// first).
func (c *Client) masters(ctx context.Context) ([]string, error) {
	lock, err := c.st.NewLock(LeaderLock, observerID, time.Second)
	if err != nil {
		return nil, fmt.Errorf("open leader lock %q: %w", LeaderLock, err)
	}
	holder, err := lock.Holder(ctx)
	if err != nil {
		return nil, fmt.Errorf("read leader lock %q: %w", LeaderLock, err)
	}
	if holder != "" {
		return []string{holder}, nil
	}
	infos, err := c.st.GetService(ctx, NetmasterService)
	if err != nil {
		return nil, fmt.Errorf("list %q service instances: %w", NetmasterService, err)
	}
	sort.SliceStable(infos, func(i, j int) bool {
		li, lj := infos[i].Role == "leader", infos[j].Role == "leader"
		if li != lj {
			return li
		}
		return instanceAddr(infos[i]) < instanceAddr(infos[j])
	})
	addrs := make([]string, 0, len(infos))
	for _, in := range infos {
		addrs = append(addrs, instanceAddr(in))
	}
	if len(addrs) == 0 {
		return nil, ErrNoMaster
	}
	return addrs, nil
}

func instanceAddr(in objdb.ServiceInfo) string {
	return net.JoinHostPort(in.HostAddr, strconv.Itoa(in.Port))
}
