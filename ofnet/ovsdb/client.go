// Package ovsdb is an RFC 7047 OVSDB client: JSON-RPC 1.0 over a unix or
// TCP stream, schema-typed values, transactions, and a monitor-fed cache of
// the Open_vSwitch tables that survives server restarts by reconnecting and
// re-monitoring. On top of it are the idempotent bridge and port helpers the
// netplugin OVS driver needs (bridge.go, port.go).
//
//	c, err := ovsdb.Dial(ctx, "unix:/var/run/openvswitch/db.sock")
//	defer c.Close()
//	err = c.CreateBridge(ctx, ovsdb.BridgeSpec{Name: "contivVxlanBridge", DatapathType: "netdev"})
package ovsdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/contiv/netplugin/utils/ctxutil"
)

// DefaultTables are the tables the client monitors unless WithTables says
// otherwise.
var defaultTables = []string{"Open_vSwitch", "Bridge", "Port", "Interface", "Controller"}

// ErrClosed is returned by calls on a closed Client.
var ErrClosed = errors.New("ovsdb: client closed")

// DialFunc opens the stream to the server.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Option configures a Client.
type Option func(*options)

type options struct {
	db            string
	tables        []string
	dial          DialFunc
	minBackoff    time.Duration
	maxBackoff    time.Duration
	probeInterval time.Duration
	logf          func(format string, args ...any)
}

// WithDatabase selects the database (default "Open_vSwitch").
func WithDatabase(name string) Option { return func(o *options) { o.db = name } }

// WithTables sets the tables to monitor (all their columns). The default
// is Open_vSwitch, Bridge, Port, Interface and Controller; the bridge and
// port helpers need those.
func WithTables(tables ...string) Option {
	return func(o *options) { o.tables = append([]string(nil), tables...) }
}

// WithAllTables monitors every table of the database (all columns), as
// upstream netplugin does.
func WithAllTables() Option { return func(o *options) { o.tables = nil } }

// WithDialer replaces net.Dialer.DialContext, e.g. to dial from another
// network namespace.
func WithDialer(d DialFunc) Option { return func(o *options) { o.dial = d } }

// WithBackoff sets the reconnect delay range (default 50ms..5s, doubling,
// with jitter).
func WithBackoff(min, max time.Duration) Option {
	return func(o *options) { o.minBackoff, o.maxBackoff = min, max }
}

// WithProbeInterval sets how long the connection may be silent before the
// client sends an "echo" to check the server (default 5s; 0 disables).
// When nothing at all arrives for another interval the connection is
// dropped and the client reconnects.
func WithProbeInterval(d time.Duration) Option { return func(o *options) { o.probeInterval = d } }

// WithLogf sets a logger for connection events (default: none).
func WithLogf(f func(format string, args ...any)) Option { return func(o *options) { o.logf = f } }

// Client is a connection to one ovsdb-server database with a monitor cache.
// It reconnects by itself until Close. All methods are safe for concurrent
// use.
type Client struct {
	network, addr string
	opts          options
	cache         *Cache

	mu      sync.Mutex
	conn    *rpcConn      // nil while disconnected
	ready   chan struct{} // closed while conn != nil
	schema  *Schema
	syncs   uint64
	closed  bool
	lastErr error

	cancel context.CancelFunc
	done   chan struct{} // closed when the supervisor has exited
}

// ParseEndpoint splits "unix:/path" or "tcp:host:port" into a network and
// an address.
func ParseEndpoint(endpoint string) (network, addr string, err error) {
	switch {
	case strings.HasPrefix(endpoint, "unix:") && len(endpoint) > len("unix:"):
		return "unix", strings.TrimPrefix(endpoint, "unix:"), nil
	case strings.HasPrefix(endpoint, "tcp:"):
		addr := strings.TrimPrefix(endpoint, "tcp:")
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return "", "", fmt.Errorf("ovsdb: endpoint %q: %w", endpoint, err)
		}
		return "tcp", addr, nil
	}
	return "", "", fmt.Errorf("ovsdb: endpoint %q: want unix:PATH or tcp:HOST:PORT", endpoint)
}

// Dial connects to endpoint ("unix:/path" or "tcp:host:port"), reads the
// schema and starts monitoring. ctx bounds only this first connection;
// afterwards the client keeps (re)connecting in the background until Close.
func Dial(ctx context.Context, endpoint string, opts ...Option) (*Client, error) {
	network, addr, err := ParseEndpoint(endpoint)
	if err != nil {
		return nil, err
	}
	o := options{
		db:            "Open_vSwitch",
		tables:        defaultTables,
		minBackoff:    50 * time.Millisecond,
		maxBackoff:    5 * time.Second,
		probeInterval: 5 * time.Second,
		logf:          func(string, ...any) {},
	}
	for _, opt := range opts {
		opt(&o)
	}
	if o.dial == nil {
		var d net.Dialer
		o.dial = d.DialContext
	}
	if o.minBackoff <= 0 {
		o.minBackoff = 50 * time.Millisecond
	}
	if o.maxBackoff < o.minBackoff {
		o.maxBackoff = o.minBackoff
	}
	c := &Client{network: network, addr: addr, opts: o, cache: newCache(), ready: make(chan struct{}), done: make(chan struct{})}
	conn, err := c.connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("ovsdb: connect to %s: %w", endpoint, err)
	}
	c.setConn(conn)
	runCtx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go c.supervise(runCtx, conn)
	return c, nil
}

// Close stops the client: it closes the connection and waits for its
// goroutines to exit. The cache stays readable.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		<-c.done
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	<-c.done
	return nil
}

// Cache returns the monitor cache.
func (c *Client) Cache() *Cache { return c.cache }

// Schema returns the schema read on the latest connection.
func (c *Client) Schema() *Schema {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.schema
}

// Connected reports whether the client currently has a synced connection.
func (c *Client) Connected() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conn != nil
}

// Syncs counts completed (re)connections: 1 after Dial, +1 after every
// reconnect whose monitor has refilled the cache.
func (c *Client) Syncs() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.syncs
}

// WaitConnected blocks until the client has a synced connection.
func (c *Client) WaitConnected(ctx context.Context) error {
	_, err := c.getConn(ctx)
	return err
}

func (c *Client) setConn(conn *rpcConn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if conn != nil {
		c.conn = conn
		c.syncs++
		close(c.ready)
		return
	}
	if c.conn != nil {
		c.conn = nil
		c.ready = make(chan struct{})
	}
}

func (c *Client) getConn(ctx context.Context) (*rpcConn, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, ErrClosed
		}
		conn, ready, lastErr := c.conn, c.ready, c.lastErr
		c.mu.Unlock()
		if conn != nil {
			return conn, nil
		}
		select {
		case <-ready:
		case <-c.done:
			return nil, ErrClosed
		case <-ctx.Done():
			if lastErr != nil {
				return nil, fmt.Errorf("%w (%v): %w", ErrDisconnected, lastErr, ctx.Err())
			}
			return nil, fmt.Errorf("%w: %w", ErrDisconnected, ctx.Err())
		}
	}
}

// supervise owns the connection: it probes it, and when it fails it
// reconnects with backoff until ctx ends.
func (c *Client) supervise(ctx context.Context, conn *rpcConn) {
	defer close(c.done)
	for {
		c.watch(ctx, conn)
		if ctx.Err() != nil {
			conn.Close()
			return
		}
		c.setConn(nil)
		conn.Close()
		c.opts.logf("ovsdb: connection to %s lost: %v", c.addr, conn.Err())
		conn = c.reconnect(ctx)
		if conn == nil {
			return
		}
		c.setConn(conn)
		c.opts.logf("ovsdb: reconnected to %s", c.addr)
	}
}

// watch returns when conn fails or ctx ends, probing it with echo.
func (c *Client) watch(ctx context.Context, conn *rpcConn) {
	var tick <-chan time.Time
	if c.opts.probeInterval > 0 {
		t := time.NewTicker(c.opts.probeInterval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-conn.Done():
			return
		case <-tick:
			if conn.idle() < c.opts.probeInterval {
				continue // the server is talking; no need to ask
			}
			pctx, cancel := context.WithTimeout(ctx, c.opts.probeInterval)
			_, err := conn.Call(pctx, "echo", []any{"probe"})
			cancel()
			// Anything received (not only the echo reply) proves the
			// server alive; a busy server may answer late.
			if err != nil && ctx.Err() == nil && conn.idle() >= c.opts.probeInterval {
				conn.fail(fmt.Errorf("%w: no answer to echo probe for %v: %v", ErrDisconnected, conn.idle().Round(time.Millisecond), err))
				return
			}
		}
	}
}

func (c *Client) reconnect(ctx context.Context) *rpcConn {
	// The jitter of the shared backoff keeps clients of one restarted
	// server from reconnecting in lockstep.
	bo := ctxutil.NewBackoff(c.opts.minBackoff, c.opts.maxBackoff)
	for {
		if !ctxutil.Sleep(ctx, bo.NextBackOff()) {
			return nil
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		conn, err := c.connect(cctx)
		cancel()
		if err == nil {
			return conn
		}
		if ctx.Err() != nil {
			return nil
		}
		c.mu.Lock()
		c.lastErr = err
		c.mu.Unlock()
		c.opts.logf("ovsdb: reconnect to %s: %v", c.addr, err)
	}
}

// monitorID is the json-value naming our monitor.
const monitorID = "netplugin"

// connect dials, checks the database, reads its schema and monitors the
// tables. When it returns, the cache equals the server's current state.
func (c *Client) connect(ctx context.Context) (*rpcConn, error) {
	nc, err := c.opts.dial(ctx, c.network, c.addr)
	if err != nil {
		return nil, err
	}
	// Updates that arrive before the monitor's initial reply has been put
	// into the cache are queued, then applied in order.
	ms := &monitorSync{cache: c.cache}
	conn := newRPCConn(nc, ms.notify)
	ms.setFail(conn.fail)
	ok := false
	defer func() {
		if !ok {
			conn.Close()
		}
	}()
	// Dialing may have outlived ctx's deadline handling; bound the setup.
	stop := context.AfterFunc(ctx, func() { conn.fail(fmt.Errorf("%w: %v", ErrDisconnected, ctx.Err())) })
	defer stop()

	raw, err := conn.Call(ctx, "list_dbs", nil)
	if err != nil {
		return nil, err
	}
	var dbs []string
	if err := json.Unmarshal(raw, &dbs); err != nil {
		return nil, fmt.Errorf("list_dbs: %w", err)
	}
	found := false
	for _, d := range dbs {
		found = found || d == c.opts.db
	}
	if !found {
		return nil, fmt.Errorf("database %q not served (have %v)", c.opts.db, dbs)
	}
	raw, err = conn.Call(ctx, "get_schema", []any{c.opts.db})
	if err != nil {
		return nil, err
	}
	schema, err := ParseSchema(raw)
	if err != nil {
		return nil, err
	}
	ms.setSchema(schema)
	tables := c.opts.tables
	if tables == nil {
		for name := range schema.Tables {
			tables = append(tables, name)
		}
	}
	reqs := map[string]any{}
	for _, t := range tables {
		if schema.Tables[t] == nil {
			return nil, fmt.Errorf("table %s not in schema %s", t, schema.Name)
		}
		reqs[t] = map[string]any{"select": map[string]bool{"initial": true, "insert": true, "delete": true, "modify": true}}
	}
	raw, err = conn.Call(ctx, "monitor", []any{c.opts.db, monitorID, reqs})
	if err != nil {
		return nil, err
	}
	initial, err := decodeTableUpdates(schema, raw)
	if err != nil {
		return nil, fmt.Errorf("monitor: %w", err)
	}
	if err := ms.synced(tables, initial); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.schema = schema
	c.lastErr = nil
	c.mu.Unlock()
	ok = true
	return conn, nil
}

// monitorSync feeds one connection's monitor into the cache.
type monitorSync struct {
	cache *Cache

	mu     sync.Mutex
	schema *Schema
	ready  bool
	queue  []json.RawMessage
	err    error
	fail   func(error)
}

func (m *monitorSync) setFail(f func(error)) {
	m.mu.Lock()
	m.fail = f
	m.mu.Unlock()
}

func (m *monitorSync) setSchema(s *Schema) {
	m.mu.Lock()
	m.schema = s
	m.mu.Unlock()
}

// notify runs on the connection's reader goroutine.
func (m *monitorSync) notify(method string, params json.RawMessage) {
	if method != "update" {
		return
	}
	var p []json.RawMessage
	if err := json.Unmarshal(params, &p); err != nil || len(p) != 2 {
		return
	}
	var id string
	if json.Unmarshal(p[0], &id) != nil || id != monitorID {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.ready {
		m.queue = append(m.queue, p[1])
		return
	}
	m.applyLocked(p[1])
}

func (m *monitorSync) applyLocked(raw json.RawMessage) {
	u, err := decodeTableUpdates(m.schema, raw)
	if err != nil {
		// A row we cannot decode would make the cache differ from the
		// server: drop the connection so a reconnect rebuilds the cache.
		m.err = err
		if m.ready && m.fail != nil {
			m.fail(fmt.Errorf("%w: bad update: %v", ErrDisconnected, err))
		}
		return
	}
	m.cache.apply(u)
}

func (m *monitorSync) synced(tables []string, initial tableUpdates) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cache.replace(tables, initial)
	for _, raw := range m.queue {
		m.applyLocked(raw)
	}
	m.queue = nil
	m.ready = true
	return m.err
}

// Transact runs ops as one transaction. It waits (bounded by ctx) for a
// connection if the client is reconnecting. A failed operation is returned
// as *TxnError; see IsTemporary for retry decisions.
func (c *Client) Transact(ctx context.Context, ops ...Operation) ([]OpResult, error) {
	conn, err := c.getConn(ctx)
	if err != nil {
		return nil, err
	}
	schema := c.Schema()
	if err := validateOps(schema, ops); err != nil {
		return nil, err
	}
	params := make([]any, 0, len(ops)+1)
	params = append(params, c.opts.db)
	for _, op := range ops {
		params = append(params, op)
	}
	raw, err := conn.Call(ctx, "transact", params)
	if err != nil {
		return nil, err
	}
	return decodeTxnResult(schema, ops, raw)
}

// ListDBs returns the databases the server serves.
func (c *Client) ListDBs(ctx context.Context) ([]string, error) {
	conn, err := c.getConn(ctx)
	if err != nil {
		return nil, err
	}
	raw, err := conn.Call(ctx, "list_dbs", nil)
	if err != nil {
		return nil, err
	}
	var dbs []string
	if err := json.Unmarshal(raw, &dbs); err != nil {
		return nil, fmt.Errorf("%w: list_dbs: %v", ErrBadValue, err)
	}
	return dbs, nil
}

// GetSchema fetches a database's schema from the server.
func (c *Client) GetSchema(ctx context.Context, db string) (*Schema, error) {
	conn, err := c.getConn(ctx)
	if err != nil {
		return nil, err
	}
	raw, err := conn.Call(ctx, "get_schema", []any{db})
	if err != nil {
		return nil, err
	}
	return ParseSchema(raw)
}

// ErrSchema is wrapped by errors about operations that do not fit the
// schema; nothing is sent to the server.
var ErrSchema = errors.New("ovsdb: operation does not match schema")

func validateOps(s *Schema, ops []Operation) error {
	if s == nil {
		return nil
	}
	for i, op := range ops {
		switch op.Op {
		case "comment", "commit", "abort", "assert":
			continue
		}
		ts := s.Tables[op.Table]
		if ts == nil {
			return fmt.Errorf("%w: operation %d (%s): no table %q", ErrSchema, i, op.Op, op.Table)
		}
		check := func(col string) error {
			if _, ok := ts.column(col); !ok {
				return fmt.Errorf("%w: operation %d (%s %s): no column %q", ErrSchema, i, op.Op, op.Table, col)
			}
			return nil
		}
		for col := range op.Row {
			if err := check(col); err != nil {
				return err
			}
		}
		for _, w := range op.Where {
			if err := check(w.Column); err != nil {
				return err
			}
		}
		for _, m := range op.Mutations {
			if err := check(m.Column); err != nil {
				return err
			}
		}
		for _, col := range op.Columns {
			if err := check(col); err != nil {
				return err
			}
		}
	}
	return nil
}
