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

// Serve registers every receiver under its map key (the service name, e.g.
// "OfnetAgent") and serves each connection accepted on ln with the JSON-RPC
// codec until ctx ends. A receiver's RPC methods have the net/rpc shape
// func (r *T) Method(arg A, reply *R) error.
//
// Serve owns ln: when it returns, ln and every connection it accepted are
// closed and every goroutine it started has finished (a method still running
// is waited for, so methods should return promptly once ctx ends). It
// returns nil when ctx ended, or the registration or accept error.
func Serve(ctx context.Context, ln net.Listener, services map[string]any) error {
	return serve(ctx, ln, services, nil)
}

func serve(ctx context.Context, ln net.Listener, services map[string]any, auth Authorizer) error {
	srv := rpc.NewServer()
	for name, rcvr := range services {
		if err := srv.RegisterName(name, rcvr); err != nil {
			ln.Close()
			return fmt.Errorf("ofrpc: register service %q: %w", name, err)
		}
	}
	cs := &connSet{conns: map[net.Conn]struct{}{}}
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
		if !cs.add(conn) {
			conn.Close()
			continue
		}
		go func() {
			defer cs.done(conn)
			// ServeCodec returns when the peer hangs up, sends something
			// that is not a request, or the connection is closed; it
			// waits for running methods and closes the connection.
			srv.ServeCodec(newServerCodec(conn, auth))
		}()
	}
}

// connSet tracks live connections so Serve can close them and wait.
type connSet struct {
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// add records c; false once closeAll ran.
func (s *connSet) add(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	return true
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
