package ofrpc_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/contiv/netplugin/ofnet/ofrpc"
)

// echo is a test service.
type echo struct {
	mu      sync.Mutex
	nodes   []ofrpc.OfnetNode
	stop    <-chan struct{} // Block returns when closed
	blocked chan struct{}   // Block signals here when it starts
}

func (e *echo) Echo(arg string, reply *string) error {
	*reply = "echo:" + arg
	return nil
}

func (e *echo) Fail(arg string, reply *bool) error {
	return errors.New("Rule already exists: " + arg)
}

func (e *echo) Node(arg ofrpc.OfnetNode, reply *bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.nodes = append(e.nodes, arg)
	*reply = true
	return nil
}

func (e *echo) Endpoint(arg ofrpc.OfnetEndpoint, reply *ofrpc.OfnetEndpoint) error {
	*reply = arg
	return nil
}

func (e *echo) Rule(arg ofrpc.OfnetPolicyRule, reply *ofrpc.OfnetPolicyRule) error {
	*reply = arg
	return nil
}

func (e *echo) Int(arg int, reply *int) error {
	*reply = arg + 1
	return nil
}

// Block waits until the server's stop channel closes.
func (e *echo) Block(arg string, reply *bool) error {
	select {
	case e.blocked <- struct{}{}:
	default:
	}
	<-e.stop
	return nil
}

// server is one running Serve.
type server struct {
	addr   string
	svc    *echo
	cancel context.CancelFunc
	done   chan error
}

// startServer serves an echo service as "Echo" on addr ("127.0.0.1:0" for
// any port); stopped at cleanup.
func startServer(t *testing.T, addr string) *server {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen %s: %v", addr, err)
	}
	return serveOn(t, ln)
}

func serveOn(t *testing.T, ln net.Listener) *server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &server{addr: ln.Addr().String(), svc: &echo{stop: ctx.Done(), blocked: make(chan struct{}, 1)}, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- ofrpc.Serve(ctx, ln, map[string]any{"Echo": s.svc}) }()
	t.Cleanup(func() { s.stop(t) })
	return s
}

// stop cancels Serve and waits for it (idempotent).
func (s *server) stop(t *testing.T) {
	t.Helper()
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.cancel = nil
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("Serve returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Serve did not return after its context ended")
	}
}

func testCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func newPool(t *testing.T, opts ...ofrpc.Option) *ofrpc.Pool {
	p := ofrpc.NewPool(append([]ofrpc.Option{ofrpc.WithDialAttempts(3), ofrpc.WithDialInterval(20 * time.Millisecond)}, opts...)...)
	t.Cleanup(func() { p.Close() })
	return p
}

// waitClosed reads c until the peer closes it (or the bound passes).
func waitClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 4096)
	for {
		_, err := c.Read(buf)
		if err == nil {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("connection was not closed by the peer")
		}
		return
	}
}
