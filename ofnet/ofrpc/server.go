package ofrpc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/rpc"
	"sync"
	"time"
)

// Serve is ServeLimits with the default Limits.
func Serve(ctx context.Context, ln net.Listener, services map[string]any) error {
	return ServeLimits(ctx, ln, services, Limits{})
}

// ServeLimits registers every receiver under its map key (the service name,
// e.g. "OfnetAgent") and serves each connection accepted on ln with the
// JSON-RPC codec until ctx ends, within limits (docs/security.md, "RPC
// limits"). A receiver's RPC methods have the net/rpc shape
// func (r *T) Method(arg A, reply *R) error.
//
// ServeLimits owns ln: when it returns, ln and every connection it
// accepted are closed and every goroutine it started has finished (a
// method still running is waited for, so methods should return promptly
// once ctx ends). It returns nil when ctx ended, or the registration or
// accept error.
func ServeLimits(ctx context.Context, ln net.Listener, services map[string]any, limits Limits) error {
	limits = limits.withDefaults()
	srv := rpc.NewServer()
	for name, rcvr := range services {
		if err := srv.RegisterName(name, rcvr); err != nil {
			ln.Close()
			return fmt.Errorf("ofrpc: register service %q: %w", name, err)
		}
	}
	cs := &connSet{conns: map[net.Conn]struct{}{}, max: limits.MaxConns}
	stop := context.AfterFunc(ctx, func() {
		ln.Close()
		cs.closeAll()
	})
	defer func() {
		stop()
		ln.Close()
		cs.closeAll()
		cs.wg.Wait()
	}()

	var delay time.Duration
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				// Transient (e.g. too many open files): back off as
				// net/http does.
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				select {
				case <-time.After(delay):
					continue
				case <-ctx.Done():
					return nil
				}
			}
			return fmt.Errorf("ofrpc: accept on %s: %w", ln.Addr(), err)
		}
		delay = 0
		if err := cs.add(conn); err != nil {
			conn.Close()
			if !errors.Is(err, net.ErrClosed) {
				limits.reject(conn.RemoteAddr(), err)
			}
			continue
		}
		go func() {
			defer cs.done(conn)
			// ServeCodec returns when the peer hangs up, sends something
			// that is not a request or is too large, stays idle, or the
			// connection is closed; it waits for running methods and
			// closes the connection.
			var codec rpc.ServerCodec = newLimitedCodec(conn, limits)
			if limits.Authorize != nil {
				codec = &authCodec{ServerCodec: codec, conn: conn, auth: limits.Authorize}
			}
			srv.ServeCodec(codec)
		}()
	}
}

// connSet tracks live connections so Serve can close them and wait.
type connSet struct {
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	max    int // < 0: unbounded
	closed bool
	wg     sync.WaitGroup
}

// add records c: net.ErrClosed once closeAll ran, ErrTooManyConns at the
// bound.
func (s *connSet) add(c net.Conn) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return net.ErrClosed
	}
	if s.max >= 0 && len(s.conns) >= s.max {
		return fmt.Errorf("%w: %d open", ErrTooManyConns, len(s.conns))
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	return nil
}

func (s *connSet) done(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	c.Close()
	s.wg.Done()
}

func (s *connSet) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
}
