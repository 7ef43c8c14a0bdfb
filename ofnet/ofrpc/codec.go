package ofrpc

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/rpc"
	"sync"
	"time"
)

// msgReader splits a byte stream into JSON objects without decoding them,
// so a request's size is known (and bounded) before any of it is parsed.
// Only the brackets, strings and escapes are tracked; whether the object
// is valid JSON is json.Unmarshal's business.
type msgReader struct {
	r    *bufio.Reader
	max  int // < 0: unbounded
	buf  []byte
	open []byte // closing bracket of each open one, innermost last
}

func newMsgReader(r io.Reader, max int) *msgReader {
	return &msgReader{r: bufio.NewReaderSize(r, 4096), max: max}
}

// next returns the next object (valid until the following call). It
// returns io.EOF at a clean end of stream, io.ErrUnexpectedEOF inside an
// object, ErrMessageTooLarge beyond the bound and ErrMalformed when what
// follows is not an object.
func (m *msgReader) next() ([]byte, error) {
	if cap(m.buf) > 64<<10 { // do not keep a large buffer per connection
		m.buf, m.open = nil, nil
	}
	m.buf = m.buf[:0]
	c, err := m.r.ReadByte()
	for err == nil && (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
		c, err = m.r.ReadByte()
	}
	if err != nil {
		return nil, err
	}
	if c != '{' {
		return nil, fmt.Errorf("%w: a request starts with '{', not %q", ErrMalformed, c)
	}
	m.open = m.open[:0] // the brackets not yet closed
	inString, escaped := false, false
	for {
		if m.max >= 0 && len(m.buf) >= m.max {
			return nil, fmt.Errorf("%w: more than %d bytes", ErrMessageTooLarge, m.max)
		}
		m.buf = append(m.buf, c)
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{':
			m.open = append(m.open, '}')
		case c == '[':
			m.open = append(m.open, ']')
		case c == '}' || c == ']':
			if m.open[len(m.open)-1] != c {
				return nil, fmt.Errorf("%w: %q closes %q", ErrMalformed, c, m.open[len(m.open)-1])
			}
			m.open = m.open[:len(m.open)-1]
			if len(m.open) == 0 {
				return m.buf, nil
			}
		case !outsideString[c]:
			// Garbage is refused as soon as it is seen, not when the
			// bound or the deadline is reached.
			return nil, fmt.Errorf("%w: byte %q outside a string", ErrMalformed, c)
		}
		if c, err = m.r.ReadByte(); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
}

// outsideString lists the bytes JSON allows outside strings besides
// brackets and quotes: separators, whitespace, numbers and the letters of
// true, false and null.
var outsideString = func() (t [256]bool) {
	for _, c := range []byte(",: \t\r\n0123456789+-.eEtrufalsn") {
		t[c] = true
	}
	return t
}()

// limitedCodec is net/rpc's ServerCodec for JSON-RPC 1.0 (the shape of
// docs/dataplane.md §6) with the limits: each request is framed by
// msgReader under a read deadline before it is decoded.
type limitedCodec struct {
	conn   net.Conn
	msgs   *msgReader
	limits Limits

	params *json.RawMessage // of the request being read

	mu      sync.Mutex // guards seq, pending
	seq     uint64
	pending map[uint64]*json.RawMessage // seq → the client's id

	wmu sync.Mutex // one response at a time
	enc *json.Encoder
}

func newLimitedCodec(conn net.Conn, l Limits) *limitedCodec {
	return &limitedCodec{conn: conn, msgs: newMsgReader(conn, l.MaxMessageBytes), limits: l,
		pending: map[uint64]*json.RawMessage{}, enc: json.NewEncoder(conn)}
}

type wireRequest struct {
	Method string           `json:"method"`
	Params *json.RawMessage `json:"params"`
	ID     *json.RawMessage `json:"id"`
}

type wireResponse struct {
	ID     *json.RawMessage `json:"id"`
	Result any              `json:"result"`
	Error  any              `json:"error"`
}

var jsonNull = json.RawMessage("null")

// errorWriteTimeout bounds the answer to a refused request.
const errorWriteTimeout = 2 * time.Second

func (c *limitedCodec) ReadRequestHeader(r *rpc.Request) error {
	if c.limits.IdleTimeout > 0 {
		// Every net.Conn of the standard library takes deadlines; a
		// connection type that does not is served without one.
		_ = c.conn.SetReadDeadline(time.Now().Add(c.limits.IdleTimeout))
	}
	msg, err := c.msgs.next()
	if err != nil {
		if errors.Is(err, ErrMessageTooLarge) || errors.Is(err, ErrMalformed) {
			c.limits.reject(c.conn.RemoteAddr(), err)
			c.writeError(err.Error() + ": connection closed")
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			c.limits.reject(c.conn.RemoteAddr(), fmt.Errorf("ofrpc: idle for %s: %w", c.limits.IdleTimeout, err))
		}
		return err
	}
	var req wireRequest
	if err := json.Unmarshal(msg, &req); err != nil {
		err = fmt.Errorf("%w: %w", ErrMalformed, err)
		c.limits.reject(c.conn.RemoteAddr(), err)
		c.writeError(err.Error() + ": connection closed")
		return err
	}
	r.ServiceMethod = req.Method
	c.params = req.Params
	c.mu.Lock()
	c.seq++
	c.pending[c.seq] = req.ID
	r.Seq = c.seq
	c.mu.Unlock()
	return nil
}

func (c *limitedCodec) ReadRequestBody(x any) error {
	if x == nil {
		return nil
	}
	if c.params == nil {
		return errors.New("ofrpc: request without params")
	}
	// params is a one-element array holding the argument.
	params := [1]any{x}
	return json.Unmarshal(*c.params, &params)
}

func (c *limitedCodec) WriteResponse(r *rpc.Response, x any) error {
	c.mu.Lock()
	id, ok := c.pending[r.Seq]
	delete(c.pending, r.Seq)
	c.mu.Unlock()
	if !ok {
		return errors.New("ofrpc: response to an unknown request")
	}
	if id == nil {
		id = &jsonNull
	}
	resp := wireResponse{ID: id}
	if r.Error == "" {
		resp.Result = x
	} else {
		resp.Error = r.Error
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.enc.Encode(resp)
}

// writeError answers a request that could not be read (no id known).
func (c *limitedCodec) writeError(msg string) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.conn.SetWriteDeadline(time.Now().Add(errorWriteTimeout))
	_ = c.enc.Encode(wireResponse{ID: &jsonNull, Error: msg})
	_ = c.conn.SetWriteDeadline(time.Time{})
}

func (c *limitedCodec) Close() error { return c.conn.Close() }
