package ofrpc_test

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/contiv/netplugin/ofnet/ofrpc"
)

// pipeListener hands out in-memory connections.
type pipeListener struct {
	conns chan net.Conn
	once  sync.Once
	done  chan struct{}
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// dial returns the client end of a new connection.
func (l *pipeListener) dial() net.Conn {
	c, s := net.Pipe()
	select {
	case l.conns <- s:
	case <-l.done:
		s.Close()
	}
	return c
}

// FuzzServe feeds arbitrary bytes to a server whose methods take every
// argument type of the protocol: decoding them must never panic and the
// server must always shut down.
func FuzzServe(f *testing.F) {
	for _, s := range []string{
		`{"method":"Echo.Node","params":[{"HostAddr":"10.0.2.15","HostPort":9002}],"id":0}`,
		`{"method":"Echo.Endpoint","params":[{"EndpointID":"10.1.0.2:t","IpAddr":"10.1.0.2","Ipv6Addr":null,"Timestamp":"2024-01-02T03:04:05Z"}],"id":1}`,
		`{"method":"Echo.Rule","params":[{"RuleId":"r","IpProtocol":6,"DstPort":80}],"id":"x"}`,
		`{"method":"Echo.Int","params":[7],"id":null}{"method":"Echo.Echo","params":["a"],"id":2}`,
		`{"method":"Echo.Endpoint","params":[{"IpAddr":"::ffff:1.2.3.4","Timestamp":"bad"}],"id":3}`,
		`{"method":"Echo","params":[],"id":4}`,
		"{not json",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ln := newPipeListener()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- ofrpc.Serve(ctx, ln, map[string]any{"Echo": &echo{stop: ctx.Done(), blocked: make(chan struct{}, 1)}})
		}()
		c := ln.dial()
		drained := make(chan struct{})
		go func() {
			io.Copy(io.Discard, c)
			close(drained)
		}()
		c.Write(data)
		c.Close()
		<-drained
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Serve: %v", err)
		}
	})
}
