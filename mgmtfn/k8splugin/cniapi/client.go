package cniapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"strconv"
	"strings"
	"time"
)

// ErrUnavailable: the server could not be reached (netplugin is down or
// not in kubernetes mode).
var ErrUnavailable = errors.New("contiv CNI server unavailable")

// ServerError is a non-200 answer with the server's message and the CNI
// code it suggests (0 when none).
type ServerError struct {
	Status  int
	Msg     string
	Details string
	Code    uint
}

func (e *ServerError) Error() string {
	if e.Details != "" {
		return fmt.Sprintf("contiv CNI server answered %d: %s (%s)", e.Status, e.Msg, e.Details)
	}
	return fmt.Sprintf("contiv CNI server answered %d: %s", e.Status, e.Msg)
}

// Client calls the CNI server over its unix socket, one connection per
// call. It speaks the HTTP/1.1 it needs itself (a POST with a JSON body,
// an answer with a length, chunked or up to the close) instead of using
// net/http: that package and what it brings (TLS, certificates) doubled
// the time the CNI binary takes to start, a cost every ADD pays
// (docs/scale.md, "CNI ADD against the bridge plugin").
type Client struct {
	socket string
}

// NewClient returns a client of the server on socket.
func NewClient(socket string) *Client {
	return &Client{socket: socket}
}

// AddPod attaches a pod.
func (c *Client) AddPod(ctx context.Context, p PodAttr) (RspAddPod, error) {
	var r RspAddPod
	err := c.Post(ctx, PathAddPod, p, &r)
	return r, err
}

// DelPod detaches a pod; an unknown attachment succeeds.
func (c *Client) DelPod(ctx context.Context, p PodAttr) error {
	var r RspAddPod
	return c.Post(ctx, PathDelPod, p, &r)
}

// CheckPod verifies an attachment and returns what it was given.
func (c *Client) CheckPod(ctx context.Context, p PodAttr) (RspAddPod, error) {
	var r RspAddPod
	err := c.Post(ctx, PathCheckPod, p, &r)
	return r, err
}

// GC removes the attachments of a network that are not in g.Valid.
func (c *Client) GC(ctx context.Context, g GCRequest) (RspGC, error) {
	var r RspGC
	err := c.Post(ctx, PathGC, g, &r)
	return r, err
}

// Status asks whether the server can serve AddPod.
func (c *Client) Status(ctx context.Context) error {
	var r RspStatus
	return c.Post(ctx, PathStatus, struct{}{}, &r)
}

// errFields reads the message and code of any error answer: the CNI
// server's (errmsg, errinfo) or a CNI error object's (msg, details; the
// Mesos CNI server's, mgmtfn/mesosplugin).
type errFields struct {
	ErrMsg  string `json:"errmsg"`
	ErrInfo string `json:"errinfo"`
	Msg     string `json:"msg"`
	Details string `json:"details"`
	Code    uint   `json:"code"`
}

// Post sends in as JSON to path on the socket and decodes a 200 answer
// into out; any other answer is a *ServerError, a server that cannot be
// reached ErrUnavailable.
func (c *Client) Post(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("encode %s request: %w", path, err)
	}
	if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \r\n") {
		return fmt.Errorf("build %s request: bad path", path)
	}
	status, raw, err := c.roundTrip(ctx, path, body)
	if err != nil {
		return err
	}
	if status != statusOK {
		var ef errFields
		if json.Unmarshal(raw, &ef) == nil && ef.ErrMsg == "" && ef.Msg != "" {
			ef.ErrMsg, ef.ErrInfo = ef.Msg, ef.Details
		}
		if ef.ErrMsg == "" {
			ef.ErrMsg = strings.TrimSpace(string(raw))
		}
		_ = json.Unmarshal(raw, out)
		return &ServerError{Status: status, Msg: ef.ErrMsg, Details: ef.ErrInfo, Code: ef.Code}
	}
	if out == nil || len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("decode the answer of %s: %w", path, err)
	}
	return nil
}

// statusOK is HTTP's 200.
const statusOK = 200

// roundTrip posts body to path on a new connection and returns the
// answer's status and body (at most MaxBodyBytes of it). A failure before
// the answer's header is read wraps ErrUnavailable (and the context's
// error when it ended).
func (c *Client) roundTrip(ctx context.Context, path string, body []byte) (int, []byte, error) {
	unavailable := func(err error) error {
		if cerr := ctx.Err(); cerr != nil {
			err = fmt.Errorf("%w (%w)", cerr, err)
		}
		return fmt.Errorf("%w: post %s on %s: %w", ErrUnavailable, path, c.socket, err)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.socket)
	if err != nil {
		return 0, nil, unavailable(err)
	}
	defer conn.Close()
	// The context bounds the whole exchange: when it ends, every read or
	// write under way fails.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	req := fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: localhost\r\nUser-Agent: contiv-cni\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", path, len(body))
	if _, err := conn.Write(append(req, body...)); err != nil {
		return 0, nil, unavailable(err)
	}
	br := bufio.NewReader(conn)
	tp := textproto.NewReader(br)
	var status int
	var hdr textproto.MIMEHeader
	for {
		line, err := tp.ReadLine()
		if err != nil {
			return 0, nil, unavailable(fmt.Errorf("read the status line: %w", err))
		}
		if status, err = parseStatusLine(line); err != nil {
			return 0, nil, unavailable(err)
		}
		if hdr, err = tp.ReadMIMEHeader(); err != nil {
			return 0, nil, unavailable(fmt.Errorf("read the header: %w", err))
		}
		if status >= 200 || status == 101 {
			break
		}
		// An interim answer (100 Continue): the real one follows.
	}
	raw, err := readBody(br, hdr)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			err = fmt.Errorf("%w (%w)", cerr, err)
		}
		return 0, nil, fmt.Errorf("read the answer of %s: %w", path, err)
	}
	return status, raw, nil
}

// parseStatusLine reads the status code of "HTTP/1.x NNN reason".
func parseStatusLine(line string) (int, error) {
	proto, rest, ok := strings.Cut(line, " ")
	if !ok || !strings.HasPrefix(proto, "HTTP/1.") {
		return 0, fmt.Errorf("malformed status line %q", line)
	}
	code, _, _ := strings.Cut(rest, " ")
	n, err := strconv.Atoi(code)
	if err != nil || len(code) != 3 || n < 100 {
		return 0, fmt.Errorf("malformed status line %q", line)
	}
	return n, nil
}

// readBody reads an answer's body as its header frames it: chunked, a
// Content-Length, or up to the end of the connection; at most
// MaxBodyBytes of it are kept (the rest is not read).
func readBody(br *bufio.Reader, hdr textproto.MIMEHeader) ([]byte, error) {
	if te := strings.ToLower(strings.TrimSpace(hdr.Get("Transfer-Encoding"))); te != "" {
		if te != "chunked" {
			return nil, fmt.Errorf("unsupported transfer encoding %q", te)
		}
		return readChunked(br, MaxBodyBytes)
	}
	if cl := hdr.Get("Content-Length"); cl != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(cl), 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("bad Content-Length %q", cl)
		}
		buf := make([]byte, min(n, MaxBodyBytes))
		if _, err := io.ReadFull(br, buf); err != nil {
			return nil, fmt.Errorf("body of %d bytes: %w", n, err)
		}
		return buf, nil
	}
	return io.ReadAll(io.LimitReader(br, MaxBodyBytes))
}

// readChunked decodes a chunked body, keeping at most limit bytes.
func readChunked(br *bufio.Reader, limit int64) ([]byte, error) {
	var out []byte
	for {
		line, err := readCRLFLine(br)
		if err != nil {
			return nil, fmt.Errorf("chunk size: %w", err)
		}
		sizeHex, _, _ := strings.Cut(line, ";") // chunk extensions are ignored
		size, err := strconv.ParseInt(strings.TrimSpace(sizeHex), 16, 64)
		if err != nil || size < 0 {
			return nil, fmt.Errorf("bad chunk size %q", line)
		}
		if size == 0 {
			for { // trailer fields up to the empty line
				if line, err = readCRLFLine(br); err != nil {
					return nil, fmt.Errorf("chunked trailer: %w", err)
				}
				if line == "" {
					return out, nil
				}
			}
		}
		keep := min(size, limit-int64(len(out)))
		chunk := make([]byte, keep)
		if _, err := io.ReadFull(br, chunk); err != nil {
			return nil, fmt.Errorf("chunk of %d bytes: %w", size, err)
		}
		if out = append(out, chunk...); keep < size {
			return out, nil // the limit: the rest is not read
		}
		if line, err = readCRLFLine(br); err != nil || line != "" {
			return nil, fmt.Errorf("chunk of %d bytes not followed by CRLF", size)
		}
	}
}

// maxLine bounds a chunk-size or trailer line.
const maxLine = 4096

// readCRLFLine reads one line without its CRLF (or LF).
func readCRLFLine(br *bufio.Reader) (string, error) {
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) || len(line) > maxLine {
		return "", errors.New("line too long")
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return "", err
	}
	return strings.TrimRight(string(line), "\r\n"), nil
}
