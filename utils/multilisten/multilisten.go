// Package multilisten listens on one port of several addresses as one
// net.Listener: netplugin's agent RPC port opens on the control and VTEP
// addresses only, never on every interface (docs/security.md,
// "Listeners").
package multilisten

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
)

// Listen opens port on each distinct, non-empty address of ips, each
// wrapped in tlsCfg when set, as one listener; it fails when one of them
// cannot be opened (closing the others) or there is no address.
func Listen(ips []string, port int, tlsCfg *tls.Config) (net.Listener, error) {
	seen := map[string]bool{}
	var lns []net.Listener
	for _, ip := range ips {
		if ip == "" || seen[ip] {
			continue
		}
		seen[ip] = true
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, fmt.Errorf("listen on %s port %d: %w", ip, port, err)
		}
		if tlsCfg != nil {
			ln = tls.NewListener(ln, tlsCfg)
		}
		lns = append(lns, ln)
	}
	if len(lns) == 0 {
		return nil, errors.New("no address to listen on")
	}
	if len(lns) == 1 {
		return lns[0], nil
	}
	return newMultiListener(lns), nil
}

// multiListener accepts from several listeners. One goroutine per listener
// feeds conns until its listener is closed; Close closes them all and
// waits for those goroutines.
type multiListener struct {
	lns   []net.Listener
	conns chan net.Conn
	errs  chan error
	done  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup
}

func newMultiListener(lns []net.Listener) *multiListener {
	m := &multiListener{lns: lns, conns: make(chan net.Conn), errs: make(chan error, len(lns)), done: make(chan struct{})}
	for _, ln := range lns {
		m.wg.Add(1)
		go m.feed(ln)
	}
	return m
}

func (m *multiListener) feed(ln net.Listener) {
	defer m.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			select {
			case m.errs <- err:
			default:
			}
			return
		}
		select {
		case m.conns <- c:
		case <-m.done:
			c.Close()
			return
		}
	}
}

// Accept returns the next connection of any listener, or the first
// listener's failure.
func (m *multiListener) Accept() (net.Conn, error) {
	select {
	case c := <-m.conns:
		return c, nil
	case <-m.done:
		return nil, net.ErrClosed
	case err := <-m.errs:
		m.Close()
		return nil, err
	}
}

// Close closes every listener and waits for the feeding goroutines.
func (m *multiListener) Close() error {
	m.once.Do(func() {
		close(m.done)
		for _, ln := range m.lns {
			ln.Close()
		}
		m.wg.Wait()
	})
	return nil
}

// Addr is the first listener's address.
func (m *multiListener) Addr() net.Addr { return m.lns[0].Addr() }
