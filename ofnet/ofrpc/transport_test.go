package ofrpc_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/contiv/netplugin/ofnet/ofrpc"
)

func TestCallRoundTrip(t *testing.T) {
	s := startServer(t, "127.0.0.1:0")
	p := newPool(t)
	ctx := testCtx(t, 10*time.Second)

	var out string
	if err := p.Call(ctx, s.addr, "Echo.Echo", "hi", &out); err != nil || out != "echo:hi" {
		t.Fatalf("Echo: %q, %v", out, err)
	}
	ep := ofrpc.OfnetEndpoint{EndpointID: "10.1.0.2:t1", IpAddr: net.ParseIP("10.1.0.2").To4(), Vni: 7,
		OriginatorIp: net.ParseIP("198.18.0.1").To4(), Timestamp: time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)}
	var back ofrpc.OfnetEndpoint
	if err := p.Call(ctx, s.addr, "Echo.Endpoint", ep, &back); err != nil {
		t.Fatal(err)
	}
	if back.EndpointID != ep.EndpointID || !back.IpAddr.Equal(ep.IpAddr) || !back.OriginatorIp.Equal(ep.OriginatorIp) ||
		back.Vni != 7 || !back.Timestamp.Equal(ep.Timestamp) {
		t.Fatalf("endpoint came back as %+v", back)
	}
	var n int
	if err := p.Call(ctx, s.addr, "Echo.Int", 41, &n); err != nil || n != 42 {
		t.Fatalf("Int: %d, %v", n, err)
	}
}

func TestRemoteErrors(t *testing.T) {
	s := startServer(t, "127.0.0.1:0")
	p := newPool(t)
	ctx := testCtx(t, 10*time.Second)
	var ok bool
	err := p.Call(ctx, s.addr, "Echo.Fail", "r1", &ok)
	var re *ofrpc.RemoteError
	if !errors.As(err, &re) || re.Msg != "Rule already exists: r1" {
		t.Fatalf("want the server's error text, got %v", err)
	}
	if !strings.Contains(err.Error(), "Rule already exists: r1") {
		t.Fatalf("error text %q lacks the server's text", err)
	}
	err = p.Call(ctx, s.addr, "Nope.Echo", "x", &ok)
	if !errors.As(err, &re) || !strings.Contains(re.Msg, "can't find service") {
		t.Fatalf("unknown service: got %v", err)
	}
	if !ofrpc.IsUnknownMethod(err) {
		t.Fatalf("IsUnknownMethod(%v) = false", err)
	}
	err = p.Call(ctx, s.addr, "Echo.Nope", "x", &ok)
	if !ofrpc.IsUnknownMethod(err) || !strings.Contains(err.Error(), "can't find method") {
		t.Fatalf("unknown method: got %v", err)
	}
	if err := p.Call(ctx, s.addr, "Echo.Fail", "r1", &ok); ofrpc.IsUnknownMethod(err) {
		t.Fatalf("IsUnknownMethod(%v) = true for a method's own error", err)
	}
	// The connection survives remote errors.
	var out string
	if err := p.Call(ctx, s.addr, "Echo.Echo", "still", &out); err != nil || out != "echo:still" {
		t.Fatalf("after remote errors: %q, %v", out, err)
	}
}

// A server restarted between two calls: the pool notices the dead
// connection and redials.
func TestRedialAfterServerRestart(t *testing.T) {
	s := startServer(t, "127.0.0.1:0")
	p := newPool(t)
	ctx := testCtx(t, 20*time.Second)
	var out string
	if err := p.Call(ctx, s.addr, "Echo.Echo", "one", &out); err != nil {
		t.Fatal(err)
	}
	s.stop(t)
	s2 := startServer(t, s.addr)
	if err := p.Call(ctx, s2.addr, "Echo.Echo", "two", &out); err != nil || out != "echo:two" {
		t.Fatalf("call after restart: %q, %v", out, err)
	}
	// And again while the server is down and comes back during the dial
	// attempts.
	s2.stop(t)
	started := make(chan *server, 1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		ln, err := net.Listen("tcp", s.addr)
		if err != nil {
			started <- nil
			return
		}
		started <- serveOn(t, ln)
	}()
	slow := newPool(t, ofrpc.WithDialAttempts(200), ofrpc.WithDialInterval(20*time.Millisecond))
	if err := slow.Call(ctx, s.addr, "Echo.Echo", "three", &out); err != nil || out != "echo:three" {
		t.Fatalf("call while the server comes up: %q, %v", out, err)
	}
	if <-started == nil {
		t.Fatal("could not listen again on", s.addr)
	}
}

func TestDialFailsAfterAttempts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := newPool(t, ofrpc.WithDialAttempts(3), ofrpc.WithDialInterval(time.Millisecond))
	var out string
	err = p.Call(testCtx(t, 10*time.Second), addr, "Echo.Echo", "x", &out)
	if err == nil || !strings.Contains(err.Error(), "3 attempts") {
		t.Fatalf("want a dial error after 3 attempts, got %v", err)
	}
	var re *ofrpc.RemoteError
	if errors.As(err, &re) {
		t.Fatalf("a dial failure is not a remote error: %v", err)
	}
}

// A peer that accepts but never answers: the call ends with the context,
// and the stuck connection is dropped (the peer sees it closed).
func TestCallDeadPeerHonoursContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conns := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(conns)
				return
			}
			conns <- c
		}
	}()
	p := newPool(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var out string
	err = p.Call(ctx, ln.Addr().String(), "Echo.Echo", "x", &out)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want the context's error, got %v", err)
	}
	c := <-conns
	defer c.Close()
	waitClosed(t, c)
	if len(conns) != 0 {
		t.Fatalf("the pool dialled again after the context ended")
	}
}

// Malformed input from a raw TCP client: the server closes that
// connection, does not panic, and keeps serving others.
func TestServeMalformedJSON(t *testing.T) {
	s := startServer(t, "127.0.0.1:0")
	for _, g := range []struct {
		data string
		// truncated input is only an error once the client stops
		// sending; the others are rejected as soon as they are read.
		truncated bool
	}{
		{"{not json", false},
		{"\x00\x01\x02\xff", false},
		{`["method","Echo.Echo"]`, false},
		{strings.Repeat("[", 20000), false},
		{`{"method":"Echo.Echo","params":[1,2`, true},
	} {
		c, err := net.Dial("tcp", s.addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte(g.data)); err != nil {
			t.Fatal(err)
		}
		if g.truncated {
			c.(*net.TCPConn).CloseWrite()
		}
		waitClosed(t, c)
		c.Close()
	}
	p := newPool(t)
	var out string
	if err := p.Call(testCtx(t, 10*time.Second), s.addr, "Echo.Echo", "alive", &out); err != nil || out != "echo:alive" {
		t.Fatalf("server after garbage: %q, %v", out, err)
	}
}

// Well-formed JSON with bad parameters gets an error response and the
// connection goes on.
func TestServeBadParams(t *testing.T) {
	s := startServer(t, "127.0.0.1:0")
	c, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	for i, req := range []string{
		`{"method":"Echo.Node","params":{"HostAddr":"x"},"id":1}`,
		`{"method":"Echo.Node","params":[{"HostPort":"nope"}],"id":2}`,
		`{"method":"Echo.Endpoint","params":[{"IpAddr":"300.1.1.1"}],"id":3}`,
		`{"method":"Echo.Node","id":4}`,
		`{"method":"NoDot","params":[1],"id":5}`,
	} {
		fmt.Fprintln(c, req)
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if !strings.Contains(line, fmt.Sprintf(`"id":%d`, i+1)) || strings.Contains(line, `"error":null`) {
			t.Fatalf("request %d: want an error response, got %s", i, line)
		}
	}
	fmt.Fprintln(c, `{"method":"Echo.Echo","params":["ok"],"id":"abc"}`)
	line, err := r.ReadString('\n')
	if err != nil || line != `{"id":"abc","result":"echo:ok","error":null}`+"\n" {
		t.Fatalf("good request after bad ones: %q, %v", line, err)
	}
}

// Stopping Serve closes the listener and live connections, and waits for
// running methods.
func TestServeStop(t *testing.T) {
	s := startServer(t, "127.0.0.1:0")
	idle, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	p := newPool(t)
	blocked := make(chan error, 1)
	go func() {
		var ok bool
		blocked <- p.Call(context.Background(), s.addr, "Echo.Block", "", &ok)
	}()
	select {
	case <-s.svc.blocked:
	case <-time.After(10 * time.Second):
		t.Fatal("the blocking call never reached the server")
	}
	s.stop(t)
	waitClosed(t, idle)
	if _, err := net.Dial("tcp", s.addr); err == nil {
		t.Fatalf("listener still accepts after Serve returned")
	}
	if err := <-blocked; err != nil {
		t.Logf("blocked call ended with %v", err)
	}
}

// One pool, many concurrent callers: one connection, every reply right.
func TestConcurrentCallsShareOneConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	s := serveOn(t, cl)
	p := newPool(t)
	ctx := testCtx(t, 20*time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for j := 0; j < 20; j++ {
				var out string
				arg := fmt.Sprintf("%d-%d", i, j)
				if err := p.Call(ctx, s.addr, "Echo.Echo", arg, &out); err != nil || out != "echo:"+arg {
					errs <- fmt.Errorf("%s: %q, %v", arg, out, err)
					return
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := cl.accepted.Load(); n != 1 {
		t.Fatalf("%d connections accepted, want 1", n)
	}
}

func TestDropAndClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	s := serveOn(t, cl)
	p := ofrpc.NewPool()
	ctx := testCtx(t, 10*time.Second)
	var out string
	for i := 0; i < 3; i++ {
		if err := p.Call(ctx, s.addr, "Echo.Echo", "x", &out); err != nil {
			t.Fatal(err)
		}
		p.Drop(s.addr)
	}
	if n := cl.accepted.Load(); n != 3 {
		t.Fatalf("%d connections after 3 drops, want 3", n)
	}
	p.Drop("127.0.0.1:1") // unknown: no-op
	p.Close()
	if err := p.Call(ctx, s.addr, "Echo.Echo", "x", &out); !errors.Is(err, ofrpc.ErrPoolClosed) {
		t.Fatalf("call after Close: %v", err)
	}
}

func TestServeRejectsBadReceiver(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	type noMethods struct{}
	err = ofrpc.Serve(context.Background(), ln, map[string]any{"X": &noMethods{}})
	if err == nil {
		t.Fatal("Serve accepted a receiver without RPC methods")
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Fatal("listener left open after a registration error")
	}
}

type countingListener struct {
	net.Listener
	accepted atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}
