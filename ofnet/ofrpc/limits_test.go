package ofrpc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contiv/netplugin/ofnet/ofrpc"
)

// rejects records what a server reported through Limits.OnReject.
type rejects struct {
	mu   sync.Mutex
	errs []error
}

func (r *rejects) add(_ net.Addr, err error) {
	r.mu.Lock()
	r.errs = append(r.errs, err)
	r.mu.Unlock()
}

func (r *rejects) has(target error) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.errs {
		if errors.Is(e, target) {
			return true
		}
	}
	return false
}

// serveLimited serves the echo service on loopback with limits.
func serveLimited(t *testing.T, l ofrpc.Limits) (string, *rejects) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rj := &rejects{}
	l.OnReject = rj.add
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- ofrpc.ServeLimits(ctx, ln, map[string]any{"Echo": &echo{stop: ctx.Done(), blocked: make(chan struct{}, 1)}}, l)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeLimits: %v", err)
		}
	})
	return ln.Addr().String(), rj
}

// echoRequest is an Echo.Echo request of exactly n bytes (n >= 60).
func echoRequest(n int) []byte {
	const head, tail = `{"method":"Echo.Echo","params":["`, `"],"id":1}`
	return []byte(head + strings.Repeat("x", n-len(head)-len(tail)) + tail)
}

type response struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *string         `json:"error"`
}

// roundTrip sends req on c and reads one response.
func roundTrip(t *testing.T, c net.Conn, req []byte) response {
	t.Helper()
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var r response
	if err := json.NewDecoder(bufio.NewReader(c)).Decode(&r); err != nil {
		t.Fatalf("read response: %v", err)
	}
	return r
}

// A request of MaxMessageBytes is served; one byte more is answered with
// an error and the connection is closed.
func TestMaxMessageBytes(t *testing.T) {
	addr, rj := serveLimited(t, ofrpc.Limits{MaxMessageBytes: 1024})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if r := roundTrip(t, c, echoRequest(1024)); r.Error != nil || !strings.HasPrefix(string(r.Result), `"echo:xxx`) {
		t.Fatalf("request at the bound: %+v", r)
	}
	r := roundTrip(t, c, echoRequest(1025))
	if r.Error == nil || !strings.Contains(*r.Error, "request too large: more than 1024 bytes: connection closed") || string(r.ID) != "null" {
		t.Fatalf("request over the bound: %+v", r)
	}
	waitClosed(t, c)
	if !rj.has(ofrpc.ErrMessageTooLarge) {
		t.Fatalf("rejection not reported: %v", rj.errs)
	}
	// The default bound is 1 MiB.
	addr, _ = serveLimited(t, ofrpc.Limits{})
	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if r := roundTrip(t, c2, echoRequest(ofrpc.DefaultMaxMessageBytes)); r.Error != nil {
		t.Fatalf("1 MiB request: %+v", *r.Error)
	}
	if r := roundTrip(t, c2, echoRequest(ofrpc.DefaultMaxMessageBytes+1)); r.Error == nil {
		t.Fatal("1 MiB + 1 request served")
	}
	waitClosed(t, c2)
}

// Beyond MaxConns a connection is closed as soon as it is accepted; the
// open ones go on, and a freed slot is taken again.
func TestMaxConns(t *testing.T) {
	addr, rj := serveLimited(t, ofrpc.Limits{MaxConns: 2})
	var open []net.Conn
	for i := 0; i < 2; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if r := roundTrip(t, c, echoRequest(100)); r.Error != nil {
			t.Fatalf("conn %d: %s", i, *r.Error)
		}
		open = append(open, c)
	}
	extra, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	extra.Write(echoRequest(100))
	waitClosed(t, extra)
	if !rj.has(ofrpc.ErrTooManyConns) {
		t.Fatalf("refusal not reported: %v", rj.errs)
	}
	if r := roundTrip(t, open[0], echoRequest(100)); r.Error != nil {
		t.Fatalf("open conn after a refusal: %s", *r.Error)
	}
	open[1].Close()
	// The server notices the close on its next read; then a slot is free.
	var c net.Conn
	for i := 0; ; i++ {
		c, err = net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Write(echoRequest(100))
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		var r response
		if err := json.NewDecoder(c).Decode(&r); err == nil && r.Error == nil {
			break
		}
		c.Close()
		if i == 100 {
			t.Fatal("no slot after a connection closed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.Close()
}

// A connection that sends nothing, or only part of a request, for
// IdleTimeout is closed; a Pool client redials on its next call.
func TestIdleTimeout(t *testing.T) {
	addr, rj := serveLimited(t, ofrpc.Limits{IdleTimeout: 200 * time.Millisecond})
	for _, partial := range []string{"", `{"method":"Echo.Echo","par`} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte(partial))
		waitClosed(t, c)
		c.Close()
	}
	var ne net.Error
	rj.mu.Lock()
	timeouts := 0
	for _, e := range rj.errs {
		if errors.As(e, &ne) && ne.Timeout() {
			timeouts++
		}
	}
	rj.mu.Unlock()
	if timeouts != 2 {
		t.Fatalf("idle closes reported: %v", rj.errs)
	}
	p := newPool(t)
	ctx := testCtx(t, 10*time.Second)
	for i := 0; i < 2; i++ {
		var out string
		if err := p.Call(ctx, addr, "Echo.Echo", fmt.Sprint(i), &out); err != nil || out != fmt.Sprintf("echo:%d", i) {
			t.Fatalf("call %d: %q %v", i, out, err)
		}
		time.Sleep(400 * time.Millisecond) // the server closes the idle client
	}
}
