package ovsdb

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"sync"
	"testing"
	"time"
)

// fakePeer is the server side of a net.Pipe speaking raw JSON.
type fakePeer struct {
	t   *testing.T
	c   net.Conn
	dec *json.Decoder
}

func newPair(t *testing.T, notify notifyFunc) (*rpcConn, *fakePeer) {
	t.Helper()
	a, b := net.Pipe()
	rc := newRPCConn(a, notify)
	t.Cleanup(func() { rc.Close(); b.Close() })
	return rc, &fakePeer{t: t, c: b, dec: json.NewDecoder(bufio.NewReader(b))}
}

func (p *fakePeer) read() map[string]json.RawMessage {
	p.t.Helper()
	p.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var m map[string]json.RawMessage
	if err := p.dec.Decode(&m); err != nil {
		p.t.Fatalf("peer read: %v", err)
	}
	return m
}

func (p *fakePeer) write(s string) {
	p.t.Helper()
	p.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := p.c.Write([]byte(s)); err != nil {
		p.t.Fatalf("peer write: %v", err)
	}
}

func TestRPCCallAndEcho(t *testing.T) {
	var mu sync.Mutex
	var got []string
	rc, peer := newPair(t, func(method string, params json.RawMessage) {
		mu.Lock()
		got = append(got, method+string(params))
		mu.Unlock()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	type result struct {
		raw json.RawMessage
		err error
	}
	done := make(chan result, 1)
	go func() {
		raw, err := rc.Call(ctx, "list_dbs", nil)
		done <- result{raw, err}
	}()
	req := peer.read()
	if string(req["method"]) != `"list_dbs"` || string(req["params"]) != `[]` {
		t.Fatalf("request %v", req)
	}
	// The server asks for an echo, sends a notification and an unknown
	// request, then answers; messages are concatenated without separators.
	peer.write(`{"method":"echo","params":["x",1],"id":"e1"}{"method":"update","params":["m",{}],"id":null}`)
	echo := peer.read()
	if string(echo["result"]) != `["x",1]` || string(echo["id"]) != `"e1"` || string(echo["error"]) != "null" {
		t.Errorf("echo reply %v", echo)
	}
	peer.write(`{"method":"steal","params":[],"id":7}`)
	if r := peer.read(); string(r["id"]) != "7" || string(r["error"]) == "null" {
		t.Errorf("unknown method reply %v", r)
	}
	peer.write(`{"id":999,"result":[],"error":null}{"result":["Open_vSwitch"],"error":null,"id":` + string(req["id"]) + `}`)
	r := <-done
	if r.err != nil || string(r.raw) != `["Open_vSwitch"]` {
		t.Fatalf("call = %s, %v", r.raw, r.err)
	}
	mu.Lock()
	if len(got) != 1 || got[0] != `update["m",{}]` {
		t.Errorf("notifications %v", got)
	}
	mu.Unlock()

	// Error responses.
	go func() {
		_, err := rc.Call(ctx, "get_schema", []any{"nope"})
		done <- result{nil, err}
	}()
	req = peer.read()
	peer.write(`{"result":null,"error":{"error":"unknown database","details":"nope"},"id":` + string(req["id"]) + `}`)
	r = <-done
	var re *RPCError
	if !errors.As(r.err, &re) || re.Err != "unknown database" || re.Details != "nope" || IsTemporary(r.err) {
		t.Errorf("error response: %v", r.err)
	}
}

func TestRPCConnectionLoss(t *testing.T) {
	rc, peer := newPair(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := rc.Call(ctx, "transact", []any{"Open_vSwitch"})
		errc <- err
	}()
	peer.read()
	peer.c.Close()
	err := <-errc
	if !errors.Is(err, ErrDisconnected) || !IsTemporary(err) {
		t.Errorf("call on lost connection: %v", err)
	}
	<-rc.Done()
	if _, err := rc.Call(ctx, "echo", nil); !errors.Is(err, ErrDisconnected) {
		t.Errorf("call after loss: %v", err)
	}
}

func TestRPCBadInputDropsConnection(t *testing.T) {
	for _, in := range []string{`{"method":"update","params":{},"id":null}`, `{"result":1}`, `[1,2]`, `{{`} {
		rc, peer := newPair(t, nil)
		go peer.c.Write([]byte(in))
		select {
		case <-rc.Done():
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: connection not dropped", in)
		}
		if !errors.Is(rc.Err(), ErrDisconnected) {
			t.Errorf("%s: %v", in, rc.Err())
		}
	}
}

func TestRPCCallContext(t *testing.T) {
	rc, peer := newPair(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := rc.Call(ctx, "echo", nil)
		errc <- err
	}()
	peer.read()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v", err)
	}
	// A late answer is ignored.
	peer.write(`{"result":[],"error":null,"id":1}`)
	rc.mu.Lock()
	n := len(rc.pending)
	rc.mu.Unlock()
	if n != 0 {
		t.Errorf("%d pending calls left", n)
	}
}
