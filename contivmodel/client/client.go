// Package client is the Go REST client of the netmaster object model, with
// the method names and error behaviour of the original client (spec
// docs/netctl.md §3, docs/rest-api.md §1.7): <Type>Post, <Type>Get, <Type>List,
// <Type>Delete and <Type>Inspect for every type, over one request helper.
package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/contiv/netplugin/utils/problem"
)

// ContivClient talks to one netmaster (or auth_proxy) base URL.
type ContivClient struct {
	baseURL    string
	httpClient *http.Client
	authToken  string
}

// NewContivClient returns a client for baseURL ("http://host:9999"). Paths
// are appended to it verbatim.
func NewContivClient(baseURL string) (*ContivClient, error) {
	if !strings.HasPrefix(baseURL, "http://") && !strings.HasPrefix(baseURL, "https://") {
		return nil, fmt.Errorf("invalid URL %q: must begin with http:// or https://", baseURL)
	}
	return &ContivClient{baseURL: baseURL, httpClient: &http.Client{}}, nil
}

// SetHttpClient replaces the HTTP client (e.g. one that skips TLS
// verification for --insecure).
func (c *ContivClient) SetHttpClient(hc *http.Client) error {
	if hc == nil {
		return errors.New("nil http client")
	}
	c.httpClient = hc
	return nil
}

// SetAuthToken makes every request carry "X-Auth-Token: <token>". Tokens
// are only sent to an https auth_proxy.
func (c *ContivClient) SetAuthToken(token string) error {
	if !strings.HasPrefix(c.baseURL, "https://") {
		return errors.New("setting auth token requires a https auth_proxy URL")
	}
	c.authToken = token
	return nil
}

// Login posts the credentials to the auth_proxy login endpoint and returns
// the raw response and its body; the caller interprets the status.
func (c *ContivClient) Login(username, password string) (*http.Response, []byte, error) {
	body, err := json.Marshal(struct {
		Username string `json:"username"`
		Password string `json:"password"`
	}{username, password})
	if err != nil {
		return nil, nil, err
	}
	req, err := http.NewRequest(http.MethodPost, c.baseURL+"/api/v1/auth_proxy/login/", bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return c.roundTrip(req)
}

// HTTPError is a non-200 answer. The client asks for problem details
// (utils/problem, docs/rest-errors.md "Two kinds of client"), so a
// netmaster's refusal keeps its status (400, 404 of a missing object, 408,
// 409, 413) and Problem holds it, its Detail the message. Its text is the
// netmaster's message; for answers without one it is what the original
// client reported: the body for 500, "Page not found!" for a 404 of an
// unknown route, "Access denied!" for 403, the status line otherwise.
type HTTPError struct {
	StatusCode int
	Body       []byte
	Problem    *problem.Details // nil unless the answer was problem details
	msg        string
}

// Unwrap gives the problem details to errors.As.
func (e *HTTPError) Unwrap() error {
	if e.Problem == nil {
		return nil
	}
	return e.Problem
}

func (e *HTTPError) Error() string { return e.msg }

func statusError(resp *http.Response, body []byte) error {
	e := &HTTPError{StatusCode: resp.StatusCode, Body: body}
	if d, ok := problem.Parse(resp.Header, resp.StatusCode, body); ok {
		e.Problem = d
		e.msg = d.Error() + "\n"
		return e
	}
	switch resp.StatusCode {
	case http.StatusInternalServerError:
		e.msg = string(body)
	case http.StatusBadRequest, http.StatusRequestTimeout, http.StatusConflict, http.StatusRequestEntityTooLarge:
		e.msg = string(body)
		if !isText(resp) || len(body) == 0 {
			e.msg = resp.Status
		}
	case http.StatusNotFound:
		e.msg = "Page not found!"
		if isText(resp) && len(body) > 0 && string(body) != routeNotFound {
			e.msg = string(body)
		}
	case http.StatusForbidden:
		e.msg = "Access denied!"
	default:
		e.msg = resp.Status
	}
	return e
}

// routeNotFound is the body of Go's 404 for a path no route serves.
const routeNotFound = "404 page not found\n"

func isText(resp *http.Response) bool {
	return strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain")
}

func (c *ContivClient) roundTrip(req *http.Request) (*http.Response, []byte, error) {
	if c.authToken != "" {
		req.Header.Set("X-Auth-Token", c.authToken)
	}
	req.Header.Set("Accept", problem.Accept)
	resp, err := c.httpClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp, nil, err
	}
	return resp, body, nil
}

// request is the one helper every typed method goes through. It sends
// method to path (under the base URL) with an optional JSON body, maps
// non-200 answers to *HTTPError (a 404 on DELETE counts as success) and
// decodes a 200 body into out when out is non-nil.
func (c *ContivClient) request(method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		buf, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, c.baseURL+path, body)
	if err != nil {
		return err
	}
	resp, data, err := c.roundTrip(req)
	if err != nil {
		return err
	}
	if method == http.MethodDelete && resp.StatusCode == http.StatusNotFound {
		return nil
	}
	if resp.StatusCode != http.StatusOK {
		return statusError(resp, data)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

func itemPath(plural, key string) string { return "/api/v1/" + plural + "/" + key + "/" }

func post(c *ContivClient, plural, key string, obj any) error {
	return c.request(http.MethodPost, itemPath(plural, key), obj, nil)
}

func get[T any](c *ContivClient, plural, key string) (*T, error) {
	var obj T
	if err := c.request(http.MethodGet, itemPath(plural, key), nil, &obj); err != nil {
		return nil, err
	}
	return &obj, nil
}

func list[T any](c *ContivClient, plural string) (*[]*T, error) {
	var objs []*T
	if err := c.request(http.MethodGet, "/api/v1/"+plural+"/", nil, &objs); err != nil {
		return nil, err
	}
	return &objs, nil
}

func del(c *ContivClient, plural, key string) error {
	return c.request(http.MethodDelete, itemPath(plural, key), nil, nil)
}

func inspect[T any](c *ContivClient, plural, key string) (*T, error) {
	var obj T
	if err := c.request(http.MethodGet, "/api/v1/inspect/"+plural+"/"+key+"/", nil, &obj); err != nil {
		return nil, err
	}
	return &obj, nil
}

// key joins key parts with ":" (no escaping, as the original).
func key(parts ...string) string { return strings.Join(parts, ":") }
