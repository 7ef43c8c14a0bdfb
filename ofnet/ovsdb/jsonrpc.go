package ovsdb

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// JSON-RPC 1.0 over a byte stream (RFC 7047 §4): messages are JSON objects
// written back to back. Both sides send requests: the server sends "echo"
// requests and "update" notifications (id null).

// ErrDisconnected is wrapped by errors of calls whose connection was lost
// or is not established. Such errors are temporary.
var ErrDisconnected = errors.New("ovsdb: not connected")

// RPCError is an error object returned in a JSON-RPC response.
type RPCError struct {
	Method string
	// Err is the server's "error" member (string, or JSON text for an
	// object).
	Err     string
	Details string
}

func (e *RPCError) Error() string {
	if e.Details != "" {
		return fmt.Sprintf("ovsdb: %s: %s: %s", e.Method, e.Err, e.Details)
	}
	return fmt.Sprintf("ovsdb: %s: %s", e.Method, e.Err)
}

// Temporary reports whether retrying may help ("not leader" in a clustered
// database, or the server being busy).
func (e *RPCError) Temporary() bool {
	switch e.Err {
	case "not leader", "canceled", "resources exhausted":
		return true
	}
	return false
}

// message is any JSON-RPC 1.0 message. Kind is decided by which members are
// present: a request has "method" and a non-null id, a notification has
// "method" and a null id, a response has "result" or "error" and no method.
type message struct {
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
	ID     json.RawMessage `json:"id"`
}

type msgKind int

const (
	kindRequest msgKind = iota
	kindNotification
	kindResponse
)

// classify checks a decoded message and says what it is.
func (m *message) classify() (msgKind, error) {
	nullID := len(m.ID) == 0 || bytes.Equal(bytes.TrimSpace(m.ID), []byte("null"))
	if m.Method != "" {
		if len(m.Params) > 0 {
			if p := bytes.TrimSpace(m.Params); len(p) == 0 || p[0] != '[' {
				return 0, fmt.Errorf("ovsdb: %s: params are not an array", m.Method)
			}
		}
		if nullID {
			return kindNotification, nil
		}
		return kindRequest, nil
	}
	if nullID {
		return 0, errors.New("ovsdb: response without id")
	}
	return kindResponse, nil
}

// responseID parses the id of a response to one of our requests (we only
// send non-negative integer ids).
func responseID(raw json.RawMessage) (uint64, bool) {
	id, err := strconv.ParseUint(string(bytes.TrimSpace(raw)), 10, 64)
	return id, err == nil
}

// responseError turns a response's "error" member into an error, nil for
// absent or null.
func responseError(method string, m *message) error {
	e := bytes.TrimSpace(m.Error)
	if len(e) == 0 || bytes.Equal(e, []byte("null")) {
		return nil
	}
	re := &RPCError{Method: method}
	var s string
	if json.Unmarshal(e, &s) == nil {
		re.Err = s
		return re
	}
	var obj struct {
		Error   string `json:"error"`
		Details string `json:"details"`
	}
	if json.Unmarshal(e, &obj) == nil && obj.Error != "" {
		re.Err, re.Details = obj.Error, obj.Details
		return re
	}
	re.Err = string(e)
	return re
}

// notifyFunc handles a server notification or request other than echo. It
// runs on the reader goroutine, so messages are handled in the order they
// arrive (an "update" is applied before a later response is delivered).
type notifyFunc func(method string, params json.RawMessage)

type response struct {
	msg *message
}

// rpcConn is one JSON-RPC connection. Its reader goroutine is started by
// newRPCConn and stops when the connection fails or Close is called; done
// is closed after it has exited.
type rpcConn struct {
	conn   net.Conn
	notify notifyFunc

	wmu sync.Mutex // serialises writes

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]chan response
	err     error // set once, when the connection is finished

	lastRecv atomic.Int64 // unix nanoseconds of the last message received

	done chan struct{}
}

const writeTimeout = 10 * time.Second

func newRPCConn(c net.Conn, notify notifyFunc) *rpcConn {
	rc := &rpcConn{conn: c, notify: notify, pending: make(map[uint64]chan response), done: make(chan struct{})}
	rc.lastRecv.Store(time.Now().UnixNano())
	go rc.readLoop()
	return rc
}

// Close closes the connection and waits for the reader to exit.
func (rc *rpcConn) Close() error {
	rc.fail(fmt.Errorf("%w: connection closed", ErrDisconnected))
	<-rc.done
	return nil
}

// Done is closed when the connection has failed or was closed.
func (rc *rpcConn) Done() <-chan struct{} { return rc.done }

// idle returns how long nothing has been received.
func (rc *rpcConn) idle() time.Duration {
	return time.Since(time.Unix(0, rc.lastRecv.Load()))
}

// Err returns why the connection finished.
func (rc *rpcConn) Err() error {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.err
}

func (rc *rpcConn) fail(err error) {
	rc.mu.Lock()
	if rc.err == nil {
		rc.err = err
		for id, ch := range rc.pending {
			close(ch)
			delete(rc.pending, id)
		}
	}
	rc.mu.Unlock()
	rc.conn.Close()
}

func (rc *rpcConn) readLoop() {
	defer close(rc.done)
	dec := json.NewDecoder(bufio.NewReaderSize(rc.conn, 64<<10))
	for {
		var m message
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			rc.fail(fmt.Errorf("%w: read: %v", ErrDisconnected, err))
			return
		}
		rc.lastRecv.Store(time.Now().UnixNano())
		kind, err := m.classify()
		if err != nil {
			rc.fail(fmt.Errorf("%w: protocol error: %v", ErrDisconnected, err))
			return
		}
		switch kind {
		case kindResponse:
			id, ok := responseID(m.ID)
			if !ok {
				continue // not ours
			}
			rc.mu.Lock()
			ch := rc.pending[id]
			delete(rc.pending, id)
			rc.mu.Unlock()
			if ch != nil {
				ch <- response{msg: &m} // buffered, never blocks
			}
		case kindRequest:
			if m.Method == "echo" {
				params := m.Params
				if len(params) == 0 {
					params = json.RawMessage("[]")
				}
				rc.send(&message{Result: params, Error: json.RawMessage("null"), ID: m.ID})
				continue
			}
			rc.send(&message{Result: json.RawMessage("null"), Error: mustJSON("unknown method " + m.Method), ID: m.ID})
		case kindNotification:
			if rc.notify != nil {
				rc.notify(m.Method, m.Params)
			}
		}
	}
}

func mustJSON(s string) json.RawMessage {
	b, _ := json.Marshal(s) // a string always marshals
	return b
}

// send writes one message; a write failure finishes the connection.
func (rc *rpcConn) send(m *message) error {
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	rc.wmu.Lock()
	defer rc.wmu.Unlock()
	rc.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := rc.conn.Write(data); err != nil {
		rc.fail(fmt.Errorf("%w: write: %v", ErrDisconnected, err))
		return rc.Err()
	}
	return nil
}

// Call sends a request and waits for its response. params is marshalled
// as the JSON array of parameters.
func (rc *rpcConn) Call(ctx context.Context, method string, params []any) (json.RawMessage, error) {
	if params == nil {
		params = []any{}
	}
	p, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("ovsdb: %s: encode params: %w", method, err)
	}
	ch := make(chan response, 1)
	rc.mu.Lock()
	if rc.err != nil {
		err := rc.err
		rc.mu.Unlock()
		return nil, err
	}
	rc.nextID++
	id := rc.nextID
	rc.pending[id] = ch
	rc.mu.Unlock()

	if err := rc.send(&message{Method: method, Params: p, ID: json.RawMessage(strconv.FormatUint(id, 10))}); err != nil {
		rc.forget(id)
		return nil, err
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return nil, rc.Err()
		}
		if err := responseError(method, r.msg); err != nil {
			return nil, err
		}
		return r.msg.Result, nil
	case <-ctx.Done():
		rc.forget(id)
		return nil, ctx.Err()
	}
}

func (rc *rpcConn) forget(id uint64) {
	rc.mu.Lock()
	delete(rc.pending, id)
	rc.mu.Unlock()
}
