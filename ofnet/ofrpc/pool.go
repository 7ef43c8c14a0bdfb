package ofrpc

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/rpc"
	"net/rpc/jsonrpc"
	"strings"
	"sync"
	"time"
)

// ErrPoolClosed is returned by Call after Close.
var ErrPoolClosed = errors.New("ofrpc: pool closed")

// RemoteError is an error the called method returned on the server: Msg is
// the server's text.
type RemoteError struct {
	Addr, Method string
	Msg          string
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("ofrpc: %s on %s: %s", e.Method, e.Addr, e.Msg)
}

// IsUnknownMethod reports whether err is a server's answer that it has no
// such service or method: net/rpc answers "rpc: can't find service X" or
// "rpc: can't find method X" (an older peer without one of this project's
// additions).
func IsUnknownMethod(err error) bool {
	var remote *RemoteError
	return errors.As(err, &remote) && strings.HasPrefix(remote.Msg, "rpc: can't find ")
}

// Defaults of the dial policy (docs/dataplane.md §6: 5 attempts 1 s apart).
const (
	DefaultDialAttempts = 5
	DefaultDialInterval = time.Second
	DefaultDialTimeout  = 5 * time.Second
)

// Option configures a Pool.
type Option func(*poolOptions)

type poolOptions struct {
	attempts int
	interval time.Duration
	timeout  time.Duration
	tls      *tls.Config
}

// WithTLS makes every connection TLS with cfg (docs/operations.md, "TLS
// and tokens"); the peer's certificate is checked against the address
// dialled.
func WithTLS(cfg *tls.Config) Option { return func(o *poolOptions) { o.tls = cfg } }

// WithDialAttempts sets how many times a dial is tried before Call fails
// (at least 1).
func WithDialAttempts(n int) Option { return func(o *poolOptions) { o.attempts = max(n, 1) } }

// WithDialInterval sets the pause between dial attempts.
func WithDialInterval(d time.Duration) Option { return func(o *poolOptions) { o.interval = d } }

// WithDialTimeout bounds one dial attempt.
func WithDialTimeout(d time.Duration) Option { return func(o *poolOptions) { o.timeout = d } }

// Pool holds one persistent JSON-RPC client per "addr:port". It is safe for
// concurrent use; calls to one address share its connection.
type Pool struct {
	opts poolOptions

	mu      sync.Mutex
	entries map[string]*poolEntry
	closed  bool
}

// poolEntry is one address. sem (one slot) is held while dialling, so one
// caller dials and the others wait for its result; c is guarded by Pool.mu.
type poolEntry struct {
	sem chan struct{}
	c   *rpc.Client
}

// NewPool returns an empty pool; clients are dialled on first use.
func NewPool(opts ...Option) *Pool {
	o := poolOptions{attempts: DefaultDialAttempts, interval: DefaultDialInterval, timeout: DefaultDialTimeout}
	for _, f := range opts {
		f(&o)
	}
	return &Pool{opts: o, entries: map[string]*poolEntry{}}
}

// Call invokes method ("Service.Method") on addr ("host:port") with arg and
// decodes the result into reply. It dials lazily (the configured attempts
// and interval). When the call fails for a transport reason (connection
// shut down, unexpected EOF, reset, ...) the client is dropped, redialled
// once and the call retried once; the methods of this protocol are
// idempotent. An error returned by the remote method comes back as a
// *RemoteError carrying the server's text and is not retried. When ctx ends
// first, the client is dropped (its connection may be stuck) and the error
// wraps ctx.Err().
func (p *Pool) Call(ctx context.Context, addr, method string, arg, reply any) error {
	for attempt := 0; ; attempt++ {
		c, err := p.client(ctx, addr)
		if err != nil {
			return fmt.Errorf("ofrpc: %s on %s: %w", method, addr, err)
		}
		err = invoke(ctx, c, method, arg, reply)
		if err == nil {
			return nil
		}
		var se rpc.ServerError
		if errors.As(err, &se) {
			return &RemoteError{Addr: addr, Method: method, Msg: string(se)}
		}
		p.dropClient(addr, c)
		if ctx.Err() != nil || attempt > 0 {
			return fmt.Errorf("ofrpc: %s on %s: %w", method, addr, err)
		}
	}
}

// invoke runs one call on c, abandoning it when ctx ends: c is closed then
// (which fails the call at once) so reply is never written after return.
func invoke(ctx context.Context, c *rpc.Client, method string, arg, reply any) error {
	call := c.Go(method, arg, reply, make(chan *rpc.Call, 1))
	select {
	case <-call.Done:
		return call.Error
	case <-ctx.Done():
		c.Close()
		<-call.Done
		return ctx.Err()
	}
}

// client returns the live client of addr, dialling it if needed.
func (p *Pool) client(ctx context.Context, addr string) (*rpc.Client, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, ErrPoolClosed
		}
		e := p.entries[addr]
		if e == nil {
			e = &poolEntry{sem: make(chan struct{}, 1)}
			p.entries[addr] = e
		}
		if e.c != nil {
			c := e.c
			p.mu.Unlock()
			return c, nil
		}
		p.mu.Unlock()

		select {
		case e.sem <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		p.mu.Lock()
		if c := e.c; c != nil { // another caller dialled meanwhile
			p.mu.Unlock()
			<-e.sem
			return c, nil
		}
		p.mu.Unlock()

		c, err := p.dial(ctx, addr)

		p.mu.Lock()
		current := !p.closed && p.entries[addr] == e
		if err == nil && current {
			e.c = c
		}
		p.mu.Unlock()
		<-e.sem
		switch {
		case err != nil:
			return nil, err
		case !current: // dropped or closed while dialling
			c.Close()
			continue
		}
		return c, nil
	}
}

// dial connects to addr with the configured attempts.
func (p *Pool) dial(ctx context.Context, addr string) (*rpc.Client, error) {
	d := net.Dialer{Timeout: p.opts.timeout}
	var err error
	for i := 0; i < p.opts.attempts; i++ {
		if i > 0 {
			t := time.NewTimer(p.opts.interval)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			}
		}
		var conn net.Conn
		if p.opts.tls != nil {
			conn, err = (&tls.Dialer{NetDialer: &d, Config: p.opts.tls}).DialContext(ctx, "tcp", addr)
		} else {
			conn, err = d.DialContext(ctx, "tcp", addr)
		}
		if err == nil {
			return rpc.NewClientWithCodec(jsonrpc.NewClientCodec(conn)), nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	return nil, fmt.Errorf("dial %s (%d attempts): %w", addr, p.opts.attempts, err)
}

// dropClient forgets c if it is still addr's client, and closes it.
func (p *Pool) dropClient(addr string, c *rpc.Client) {
	p.mu.Lock()
	if e := p.entries[addr]; e != nil && e.c == c {
		e.c = nil
	}
	p.mu.Unlock()
	c.Close()
}

// Drop closes and forgets the client of addr, if any; the next Call dials
// again.
func (p *Pool) Drop(addr string) {
	p.mu.Lock()
	e := p.entries[addr]
	delete(p.entries, addr)
	var c *rpc.Client
	if e != nil {
		c = e.c
	}
	p.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

// Close closes every client; later calls fail with ErrPoolClosed. A dial in
// progress finishes and is closed.
func (p *Pool) Close() error {
	p.mu.Lock()
	var clients []*rpc.Client
	for _, e := range p.entries {
		if e.c != nil {
			clients = append(clients, e.c)
			e.c = nil
		}
	}
	p.entries = map[string]*poolEntry{}
	p.closed = true
	p.mu.Unlock()
	for _, c := range clients {
		c.Close()
	}
	return nil
}
