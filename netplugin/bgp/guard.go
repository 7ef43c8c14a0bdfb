package bgp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// GoBGP never talks to the neighbor directly: it peers over loopback with a
// guard that relays the session's bytes and checks the framing of every
// message the neighbor sends before GoBGP sees it (docs/dataplane.md §3.4).
// GoBGP listens on gobgpAddr; its peer is guardAddr, the address the guard
// connects to it from and listens on for GoBGP's own connections.
const (
	gobgpAddr = "127.0.179.1"
	guardAddr = "127.0.179.2"

	// maxSessions bounds the relayed connections (a session and a
	// collision pair fit with room to spare).
	maxSessions = 4
	// notifyTimeout bounds the write of the NOTIFICATION to a neighbor.
	notifyTimeout = 2 * time.Second
)

// guard is the framing relay between the neighbor and GoBGP.
type guard struct {
	log      logrus.FieldLogger
	neighbor netip.Addr
	routerIP netip.Addr
	peerPort int // the neighbor's BGP port, for the connections GoBGP opens
	backend  string
	dialer   net.Dialer // towards GoBGP, from guardAddr

	outer, inner net.Listener
	wg           sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// listenGuard opens the guard's listeners: routerIP:port for the neighbor,
// guardAddr on a free port for GoBGP.
func listenGuard(routerIP, neighbor netip.Addr, port, peerPort int, log logrus.FieldLogger) (*guard, error) {
	outer, err := net.Listen("tcp", net.JoinHostPort(routerIP.String(), strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("bgp: listen for the neighbor: %w", err)
	}
	inner, err := net.Listen("tcp", net.JoinHostPort(guardAddr, "0"))
	if err != nil {
		outer.Close()
		return nil, fmt.Errorf("bgp: listen for GoBGP on %s: %w", guardAddr, err)
	}
	return &guard{log: log, neighbor: neighbor, routerIP: routerIP, peerPort: peerPort,
		outer: outer, inner: inner, conns: map[net.Conn]struct{}{},
		dialer: net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(guardAddr)}, Timeout: 5 * time.Second}}, nil
}

// innerPort is the port GoBGP connects to for sessions it opens.
func (g *guard) innerPort() int { return g.inner.Addr().(*net.TCPAddr).Port }

// serve relays sessions to GoBGP at backend until ctx ends, then closes
// every connection and waits for its goroutines.
func (g *guard) serve(ctx context.Context, backend string) {
	g.backend = backend
	g.wg.Add(2)
	go g.acceptLoop(ctx, g.outer, g.fromNeighbor)
	go g.acceptLoop(ctx, g.inner, g.fromGoBGP)
	<-ctx.Done()
	g.outer.Close()
	g.inner.Close()
	g.mu.Lock()
	for c := range g.conns {
		c.Close()
	}
	g.mu.Unlock()
	g.wg.Wait()
}

// close releases the listeners of a guard that never served.
func (g *guard) close() {
	g.outer.Close()
	g.inner.Close()
}

func (g *guard) acceptLoop(ctx context.Context, ln net.Listener, handle func(context.Context, net.Conn)) {
	defer g.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
				g.log.WithError(err).Warn("bgp guard: accept")
				time.Sleep(100 * time.Millisecond)
				continue
			}
			return
		}
		if !g.track(c) {
			g.log.WithField("remote", c.RemoteAddr().String()).Warn("bgp guard: too many connections, closed this one")
			c.Close()
			continue
		}
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			handle(ctx, c)
		}()
	}
}

// track records c for the shutdown; false when the guard is full.
func (g *guard) track(c net.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.conns[c]; ok {
		return true
	}
	if len(g.conns) >= 2*maxSessions {
		return false
	}
	g.conns[c] = struct{}{}
	return true
}

func (g *guard) untrack(cs ...net.Conn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range cs {
		delete(g.conns, c)
		c.Close()
	}
}

// fromNeighbor relays a connection the neighbor opened to GoBGP's listener.
func (g *guard) fromNeighbor(ctx context.Context, nc net.Conn) {
	remote, _ := netip.ParseAddrPort(nc.RemoteAddr().String())
	if remote.Addr().Unmap() != g.neighbor {
		g.log.WithField("remote", nc.RemoteAddr().String()).Warn("bgp guard: connection from an address that is not the neighbor, closed")
		g.untrack(nc)
		return
	}
	bc, err := g.dialer.DialContext(ctx, "tcp", g.backend)
	if err != nil {
		g.log.WithError(err).Warn("bgp guard: connect to GoBGP")
		g.untrack(nc)
		return
	}
	g.relay(nc, bc)
}

// fromGoBGP relays a connection GoBGP opened to the neighbor.
func (g *guard) fromGoBGP(ctx context.Context, bc net.Conn) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: g.routerIP.AsSlice()}, Timeout: 5 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", net.JoinHostPort(g.neighbor.String(), strconv.Itoa(g.peerPort)))
	if err != nil {
		g.log.WithError(err).Debug("bgp guard: connect to the neighbor")
		g.untrack(bc)
		return
	}
	g.relay(nc, bc)
}

// relay forwards whole messages both ways until one side ends or the
// neighbor breaks the framing; then both connections are closed.
func (g *guard) relay(nc, bc net.Conn) {
	if !g.track(nc) || !g.track(bc) {
		g.untrack(nc, bc)
		return
	}
	defer g.untrack(nc, bc)
	var wmu sync.Mutex // whole messages to the neighbor, NOTIFICATION included
	violated := false  // under wmu
	done := make(chan struct{})
	go func() {
		defer close(done)
		// GoBGP's side: its framing is trusted, but it is forwarded a message
		// at a time so that a NOTIFICATION never lands inside one.
		_ = forward(bc, nc, &wmu)
		wmu.Lock()
		if !violated { // else the NOTIFICATION is on its way: relay closes nc
			nc.Close()
		}
		wmu.Unlock()
	}()
	err := forward(nc, bc, nil)
	var he *headerError
	if errors.As(err, &he) {
		// The deadline also bounds a write of GoBGP's that holds wmu.
		_ = nc.SetWriteDeadline(time.Now().Add(notifyTimeout))
		wmu.Lock()
		violated = true
		bc.Close()
		_, _ = nc.Write(he.notification())
		wmu.Unlock()
		// Half-close, then drain what the neighbor still sends for a
		// moment: closing with unread input resets the connection, and a
		// reset can discard the NOTIFICATION before the neighbor reads it.
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		_ = nc.SetReadDeadline(time.Now().Add(notifyTimeout))
		_, _ = io.CopyN(io.Discard, nc, 1<<20)
		g.log.WithField("neighbor", g.neighbor).WithField("reason", he.reason).
			Warn("bgp guard: the neighbor sent a malformed message; NOTIFICATION sent, session closed")
	}
	nc.Close()
	bc.Close()
	<-done
}

// forward copies checked messages from src to dst until an error. A nil
// wmu means dst has no other writer.
func forward(src, dst net.Conn, wmu *sync.Mutex) error {
	buf := make([]byte, maxMsgLen)
	for {
		if _, err := io.ReadFull(src, buf[:headerLen]); err != nil {
			return err
		}
		n, err := checkHeader(buf[:headerLen])
		if err != nil {
			return err
		}
		if _, err := io.ReadFull(src, buf[headerLen:n]); err != nil {
			return err
		}
		if wmu != nil {
			wmu.Lock()
		}
		_, err = dst.Write(buf[:n])
		if wmu != nil {
			wmu.Unlock()
		}
		if err != nil {
			return err
		}
	}
}
