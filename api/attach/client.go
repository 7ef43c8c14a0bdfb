package attach

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
)

// Client calls the attach API over a unix socket. It keeps no connection
// open between calls.
type Client struct {
	socketPath string
	http       *http.Client
}

// StatusError is a non-200 answer; Message is the server's "error" text.
// A 400 answer wraps ErrInvalidRequest.
type StatusError struct {
	StatusCode int
	Message    string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("attach API answered %d: %s", e.StatusCode, e.Message)
}

// Unwrap lets errors.Is(err, ErrInvalidRequest) hold for a 400.
func (e *StatusError) Unwrap() error {
	if e.StatusCode == http.StatusBadRequest {
		return ErrInvalidRequest
	}
	return nil
}

// NewClient returns a client of the server on socketPath.
func NewClient(socketPath string) *Client {
	var d net.Dialer
	return &Client{socketPath: socketPath, http: &http.Client{Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", socketPath)
		},
	}}}
}

// Attach asks the agent to attach a container; ctx bounds the call.
func (c *Client) Attach(ctx context.Context, req Request) (Result, error) {
	var res Result
	if err := c.post(ctx, PathAttach, req, &res); err != nil {
		return Result{}, fmt.Errorf("attach container %q to %s/%s: %w", req.ContainerID, req.Tenant, req.Network, err)
	}
	return res, nil
}

// Detach asks the agent to detach a container.
func (c *Client) Detach(ctx context.Context, req DetachRequest) error {
	if err := c.post(ctx, PathDetach, req, nil); err != nil {
		return fmt.Errorf("detach container %q from %s/%s: %w", req.ContainerID, req.Tenant, req.Network, err)
	}
	return nil
}

func (c *Client) post(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
	}
	// The host part is ignored: the transport always dials the socket.
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://netplugin"+path, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(hreq)
	if err != nil {
		return fmt.Errorf("post %s on %s: %w", path, c.socketPath, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodyBytes))
	if err != nil {
		return fmt.Errorf("read answer of %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var eb errorBody
		if json.Unmarshal(raw, &eb) != nil || eb.Error == "" {
			eb.Error = strings.TrimSpace(string(raw))
		}
		return &StatusError{StatusCode: resp.StatusCode, Message: eb.Error}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("decode answer of %s: %w", path, err)
	}
	return nil
}
