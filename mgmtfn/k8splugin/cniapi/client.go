package cniapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
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
// call.
type Client struct {
	socket string
	http   *http.Client
}

// NewClient returns a client of the server on socket.
func NewClient(socket string) *Client {
	var d net.Dialer
	return &Client{socket: socket, http: &http.Client{Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", socket)
		},
	}}}
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
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://localhost"+path, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("build %s request: %w", path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%w: post %s on %s: %w", ErrUnavailable, path, c.socket, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodyBytes))
	if err != nil {
		return fmt.Errorf("read the answer of %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var ef errFields
		if json.Unmarshal(raw, &ef) == nil && ef.ErrMsg == "" && ef.Msg != "" {
			ef.ErrMsg, ef.ErrInfo = ef.Msg, ef.Details
		}
		if ef.ErrMsg == "" {
			ef.ErrMsg = strings.TrimSpace(string(raw))
		}
		_ = json.Unmarshal(raw, out)
		return &ServerError{Status: resp.StatusCode, Msg: ef.ErrMsg, Details: ef.ErrInfo, Code: ef.Code}
	}
	if out == nil || len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("decode the answer of %s: %w", path, err)
	}
	return nil
}
