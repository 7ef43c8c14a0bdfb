// Package dockernets keeps Docker networks in step with contiv networks and
// endpoint groups in docker cluster mode (docs/daemons.md §4.14): a small
// Docker Engine API client over the unix socket (networks only) and the
// create/delete rules of the original netmaster. It sits under api/ because
// netmaster, netplugin and the Docker front end (mgmtfn/dockplugin) all name
// Docker networks by the same rule (docs/architecture.md, "Dependency
// direction").
package dockernets

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultSocket is the Docker Engine's API socket.
const DefaultSocket = "/var/run/docker.sock"

// BaseAPIVersion is the API version the original spoke; a newer one is
// used only when the engine's minimum is above it.
const BaseAPIVersion = "1.23"

// Sentinel errors.
var (
	// ErrNotFound: the engine has no such network.
	ErrNotFound = errors.New("dockernets: docker network not found")
	// ErrOtherDriver: a network of that name exists with another driver.
	// Its text is what the REST API shows (docs/rest-api.md §2.4 step 9).
	ErrOtherDriver = errors.New("network name used by another driver")
)

// APIError is a non-2xx answer of the engine.
type APIError struct {
	Status  int
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("docker engine: %d %s", e.Status, e.Message)
}

// Client talks to one Docker Engine. It is safe for concurrent use.
type Client struct {
	hc *http.Client
	ua string

	mu      sync.Mutex
	version string // negotiated API version, "" until first use
}

// NewClient returns a client of the engine listening on socket
// ("" = DefaultSocket). Nothing is dialled until the first call.
func NewClient(socket string) *Client {
	if socket == "" {
		socket = DefaultSocket
	}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
		MaxIdleConns:    4,
		IdleConnTimeout: 30 * time.Second,
	}
	return &Client{
		hc: &http.Client{Transport: tr, Timeout: 60 * time.Second},
		ua: fmt.Sprintf("Docker-Client/%s (%s)", BaseAPIVersion, runtime.GOOS),
	}
}

// Close drops idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// APIVersion is the version used in request paths: BaseAPIVersion, or the
// engine's MinAPIVersion when that is newer. It asks the engine once.
func (c *Client) APIVersion(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version != "" {
		return c.version, nil
	}
	var v struct {
		APIVersion    string `json:"ApiVersion"`
		MinAPIVersion string `json:"MinAPIVersion"`
	}
	if err := c.call(ctx, http.MethodGet, "/version", nil, &v); err != nil {
		return "", fmt.Errorf("docker version: %w", err)
	}
	c.version = NegotiateVersion(v.MinAPIVersion)
	return c.version, nil
}

// NegotiateVersion is max(BaseAPIVersion, min) comparing "major.minor"
// numerically; an unparsable min keeps BaseAPIVersion.
func NegotiateVersion(min string) string {
	if versionLess(BaseAPIVersion, min) {
		return min
	}
	return BaseAPIVersion
}

func versionLess(a, b string) bool {
	pa, okA := parseVersion(a)
	pb, okB := parseVersion(b)
	if !okA || !okB {
		return false
	}
	if pa[0] != pb[0] {
		return pa[0] < pb[0]
	}
	return pa[1] < pb[1]
}

func parseVersion(s string) ([2]int, bool) {
	maj, min, ok := strings.Cut(s, ".")
	if !ok {
		return [2]int{}, false
	}
	a, err1 := strconv.Atoi(maj)
	b, err2 := strconv.Atoi(min)
	if err1 != nil || err2 != nil || a < 0 || b < 0 {
		return [2]int{}, false
	}
	return [2]int{a, b}, true
}

// versioned sends a request under "/v<version>".
func (c *Client) versioned(ctx context.Context, method, path string, body, out any) error {
	v, err := c.APIVersion(ctx)
	if err != nil {
		return err
	}
	return c.call(ctx, method, "/v"+v+path, body, out)
}

// call sends body as JSON (nil: none) and decodes a 2xx answer into out
// (nil: discarded). Other answers become *APIError.
func (c *Client) call(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://docker"+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", c.ua)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return &APIError{Status: resp.StatusCode, Message: errorMessage(data)}
	}
	if out == nil || len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return nil
}

// errorMessage is the engine's {"message": …} text, or the raw body.
func errorMessage(body []byte) string {
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) == nil && e.Message != "" {
		return e.Message
	}
	return strings.TrimSpace(string(body))
}

func isStatus(err error, status int) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == status
}

// escape is a path element.
func escape(s string) string { return url.PathEscape(s) }
