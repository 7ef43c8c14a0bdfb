// Package trafficprobe is the application traffic the tests send between
// containers: a TCP echo (request/response and bulk transfers checked by
// SHA-256) and a UDP echo whose answer also carries the IP TOS byte the
// server received, so a test sees the DSCP marking on the receiving side.
// The netprobe command (test/tools/netprobe) runs it inside a container's
// namespace; see docs/traffic.md.
package trafficprobe

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// maxDatagram is the largest UDP payload the echo handles.
const maxDatagram = 9000

// udpRetry is how often UDPEcho resends while no answer came.
const udpRetry = 200 * time.Millisecond

// Server is a set of TCP and UDP echo sockets.
type Server struct {
	lns   []net.Listener
	pcs   []*net.UDPConn
	conns sync.WaitGroup
	mu    sync.Mutex
	open  map[net.Conn]struct{}
}

// Listen opens TCP listeners and UDP sockets on the given addresses
// (host:port). On error nothing stays open.
func Listen(tcp, udp []string) (*Server, error) {
	s := &Server{open: map[net.Conn]struct{}{}}
	for _, a := range tcp {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			s.close()
			return nil, fmt.Errorf("trafficprobe: listen tcp %s: %w", a, err)
		}
		s.lns = append(s.lns, ln)
	}
	for _, a := range udp {
		ua, err := net.ResolveUDPAddr("udp", a)
		if err != nil {
			s.close()
			return nil, fmt.Errorf("trafficprobe: udp address %q: %w", a, err)
		}
		pc, err := net.ListenUDP("udp", ua)
		if err == nil {
			err = recvTOS(pc)
		}
		if err != nil {
			if pc != nil {
				pc.Close()
			}
			s.close()
			return nil, fmt.Errorf("trafficprobe: listen udp %s: %w", a, err)
		}
		s.pcs = append(s.pcs, pc)
	}
	return s, nil
}

// recvTOS asks the kernel for the TOS byte of every received datagram.
func recvTOS(pc *net.UDPConn) error {
	rc, err := pc.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_RECVTOS, 1)
	})
	return errors.Join(err, serr)
}

// Serve answers until ctx ends, then closes every socket and waits for
// its goroutines.
func (s *Server) Serve(ctx context.Context) {
	var wg sync.WaitGroup
	for _, ln := range s.lns {
		wg.Go(func() { s.acceptLoop(ln) })
	}
	for _, pc := range s.pcs {
		wg.Go(func() { udpLoop(pc) })
	}
	<-ctx.Done()
	s.close()
	wg.Wait()
	s.conns.Wait()
}

func (s *Server) close() {
	for _, ln := range s.lns {
		ln.Close()
	}
	for _, pc := range s.pcs {
		pc.Close()
	}
	s.mu.Lock()
	for c := range s.open {
		c.Close()
	}
	s.open = nil
	s.mu.Unlock()
}

func (s *Server) acceptLoop(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.open == nil { // closing
			s.mu.Unlock()
			c.Close()
			return
		}
		s.open[c] = struct{}{}
		s.conns.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.conns.Done()
			// Echo until the client's half-close, then close.
			io.Copy(c, c)
			c.Close()
			s.mu.Lock()
			delete(s.open, c)
			s.mu.Unlock()
		}()
	}
}

// udpLoop answers each datagram with the TOS byte it arrived with
// followed by its payload.
func udpLoop(pc *net.UDPConn) {
	buf := make([]byte, maxDatagram)
	oob := make([]byte, 64)
	out := make([]byte, maxDatagram+1)
	for {
		n, oobn, _, from, err := pc.ReadMsgUDP(buf, oob)
		if err != nil {
			return
		}
		out[0] = tosOf(oob[:oobn])
		copy(out[1:], buf[:n])
		pc.WriteToUDP(out[:n+1], from)
	}
}

func tosOf(oob []byte) byte {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0
	}
	for _, m := range msgs {
		if m.Header.Level == unix.IPPROTO_IP && m.Header.Type == unix.IP_TOS && len(m.Data) > 0 {
			return m.Data[0]
		}
	}
	return 0
}

// Payload returns n random bytes.
func Payload(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// TCPEcho connects to addr, sends payload, half-closes, reads the echo
// and checks that its SHA-256 matches. ctx bounds the whole exchange.
func TCPEcho(ctx context.Context, addr string, payload []byte) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("tcp connect %s: %w", addr, err)
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	werr := make(chan error, 1)
	go func() {
		_, err := c.Write(payload)
		if err == nil {
			err = c.(*net.TCPConn).CloseWrite()
		}
		werr <- err
	}()
	h := sha256.New()
	n, rerr := io.Copy(h, c)
	if err := <-werr; err != nil {
		return fmt.Errorf("tcp send %d bytes to %s: %w", len(payload), addr, err)
	}
	if rerr != nil {
		return fmt.Errorf("tcp receive from %s (%d of %d bytes): %w", addr, n, len(payload), rerr)
	}
	want := sha256.Sum256(payload)
	if got := h.Sum(nil); !bytes.Equal(got, want[:]) {
		return fmt.Errorf("tcp echo from %s: %d bytes with SHA-256 %x, sent %d bytes with %x", addr, n, got, len(payload), want)
	}
	return nil
}

// UDPEcho sends payload to addr (again every 200 ms) until the echo comes
// back or ctx ends (give it a deadline), and returns the TOS byte the
// server saw.
func UDPEcho(ctx context.Context, addr string, payload []byte) (tos byte, err error) {
	if len(payload) > maxDatagram {
		return 0, fmt.Errorf("trafficprobe: UDP payload of %d bytes exceeds %d", len(payload), maxDatagram)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "udp", addr)
	if err != nil {
		return 0, fmt.Errorf("udp socket to %s: %w", addr, err)
	}
	defer c.Close()
	buf := make([]byte, maxDatagram+1)
	var last error
	for {
		if _, err := c.Write(payload); err != nil {
			last = err // e.g. an ICMP error of the previous try
		}
		until := time.Now().Add(udpRetry)
		if dl, ok := ctx.Deadline(); ok && dl.Before(until) {
			until = dl
		}
		c.SetReadDeadline(until)
		n, err := c.Read(buf)
		if err == nil && n == len(payload)+1 && bytes.Equal(buf[1:n], payload) {
			return buf[0], nil
		}
		if err != nil {
			last = err
		}
		if ctx.Err() != nil || deadlinePassed(ctx) {
			// The read deadline can pass a moment before ctx's own timer
			// fires: the cause is the deadline all the same.
			cause := ctx.Err()
			if cause == nil {
				cause = context.DeadlineExceeded
			}
			return 0, fmt.Errorf("udp echo from %s: no answer: %w", addr, errors.Join(cause, last))
		}
	}
}

func deadlinePassed(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}
