// Package dockernetstest serves a fake contiv libnetwork remote plugin
// (network driver + IPAM driver, docs/daemons.md §8.1) on a unique socket under
// /run/docker/plugins, so tests can make a real Docker Engine create and
// delete networks of "our" driver and check what it was asked.
package dockernetstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contiv/netplugin/api/dockernets"
	"github.com/contiv/netplugin/objdb/objdbtest"
)

// Scope is what the fake network driver reports as its capability scope.
var Scope = "local"

// PluginDir is where the engine discovers plugin sockets.
const PluginDir = "/run/docker/plugins"

// Call is one request the engine made to the plugin.
type Call struct {
	Path string          // e.g. "/NetworkDriver.CreateNetwork"
	Body json.RawMessage // request body as sent
}

// Plugin is a running fake plugin.
type Plugin struct {
	Name   string // driver name to pass to docker (and as netmaster's --name)
	Socket string

	srv  *http.Server
	done chan struct{}

	mu    sync.Mutex
	calls []Call
}

// RequireEngine returns a client of the local engine, skipping the test
// when it is not reachable (failing it when CI=true).
func RequireEngine(t testing.TB) *dockernets.Client {
	t.Helper()
	c := dockernets.NewClient("")
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.APIVersion(ctx)
	objdbtest.RequireComponent(t, "docker engine at "+dockernets.DefaultSocket, err)
	return c
}

// UniqueName is prefix plus a random suffix.
func UniqueName(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// Start serves a plugin named with a unique name on PluginDir; it stops
// and its socket is removed when the test ends.
func Start(t testing.TB) *Plugin {
	t.Helper()
	if err := os.MkdirAll(PluginDir, 0o700); err != nil {
		objdbtest.RequireComponent(t, "plugin directory "+PluginDir, err)
	}
	name := UniqueName("contivtest")
	sock := filepath.Join(PluginDir, name+".sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		objdbtest.RequireComponent(t, "plugin socket "+sock, err)
	}
	p := &Plugin{Name: name, Socket: sock, done: make(chan struct{})}
	p.srv = &http.Server{Handler: http.HandlerFunc(p.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(p.done)
		if err := p.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("fake plugin %s: %v", name, err)
		}
	}()
	t.Cleanup(p.stop)
	return p
}

func (p *Plugin) stop() {
	p.srv.Close()
	<-p.done
	os.Remove(p.Socket)
}

// Calls returns the requests so far whose path has suffix ("" = all).
func (p *Plugin) Calls(suffix string) []Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Call
	for _, c := range p.calls {
		if strings.HasSuffix(c.Path, suffix) {
			out = append(out, c)
		}
	}
	return out
}

func (p *Plugin) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	p.mu.Lock()
	p.calls = append(p.calls, Call{Path: r.URL.Path, Body: append(json.RawMessage(nil), body...)})
	p.mu.Unlock()
	reply, status := answer(r.URL.Path, body)
	w.Header().Set("Content-Type", "application/vnd.docker.plugins.v1.2+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(reply)
}

// answer is the reply to one plugin call (shapes of docs/daemons.md §8.1.2-§8.1.6).
func answer(path string, body []byte) (any, int) {
	var req map[string]any
	_ = json.Unmarshal(body, &req)
	str := func(k string) string { s, _ := req[k].(string); return s }
	switch path {
	case "/Plugin.Activate":
		return map[string]any{"Implements": []string{"NetworkDriver", "IpamDriver"}}, http.StatusOK
	case "/NetworkDriver.GetCapabilities":
		return map[string]any{"Err": "", "Scope": Scope}, http.StatusOK
	case "/IpamDriver.GetCapabilities":
		return map[string]any{"Error": "", "RequiresMACAddress": false, "RequiresRequestReplay": false}, http.StatusOK
	case "/IpamDriver.GetDefaultAddressSpaces":
		return map[string]any{"Error": "", "LocalDefaultAddressSpace": "contivtest", "GlobalDefaultAddressSpace": "contivtest"}, http.StatusOK
	case "/IpamDriver.RequestPool":
		pool := str("Pool")
		return map[string]any{"Error": "", "PoolID": pool, "Pool": pool, "Data": nil}, http.StatusOK
	case "/IpamDriver.RequestAddress":
		pool, err := netip.ParsePrefix(str("PoolID"))
		if err != nil {
			return map[string]any{"Error": fmt.Sprintf("bad pool id %q", str("PoolID"))}, http.StatusInternalServerError
		}
		addr := pool.Masked().Addr().Next()
		if a, err := netip.ParseAddr(str("Address")); err == nil {
			addr = a
		}
		return map[string]any{"Error": "", "Address": netip.PrefixFrom(addr, pool.Bits()).String(), "Data": nil}, http.StatusOK
	case "/IpamDriver.ReleasePool", "/IpamDriver.ReleaseAddress":
		return map[string]any{"Error": ""}, http.StatusOK
	case "/Plugin.Deactivate":
		return map[string]any{}, http.StatusOK
	}
	if strings.HasPrefix(path, "/NetworkDriver.") {
		return map[string]any{"Err": ""}, http.StatusOK
	}
	return map[string]any{"Err": "unknown call " + path}, http.StatusNotFound
}

// RemoveAtCleanup removes the docker network named name (if present) when
// the test ends, whatever its outcome.
func RemoveAtCleanup(t testing.TB, c *dockernets.Client, name string) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		nw, err := c.FindNetwork(ctx, name)
		if errors.Is(err, dockernets.ErrNotFound) {
			return
		}
		if err == nil {
			err = c.RemoveNetwork(ctx, nw.ID)
		}
		if err != nil && !errors.Is(err, dockernets.ErrNotFound) {
			t.Errorf("clean up docker network %q: %v", name, err)
		}
	})
}

// Options decodes the "com.docker.network.generic" driver options of a
// recorded NetworkDriver.CreateNetwork call.
func Options(c Call) (map[string]string, error) {
	var req struct {
		Options struct {
			Generic map[string]string `json:"com.docker.network.generic"`
		}
	}
	if err := json.Unmarshal(c.Body, &req); err != nil {
		return nil, fmt.Errorf("decode %s: %w", c.Path, err)
	}
	return req.Options.Generic, nil
}

// PoolRequest is a recorded IpamDriver.RequestPool call.
type PoolRequest struct {
	Pool    string
	Options map[string]string
	V6      bool
}

// PoolRequests decodes the recorded IpamDriver.RequestPool calls.
func (p *Plugin) PoolRequests() ([]PoolRequest, error) {
	var out []PoolRequest
	for _, c := range p.Calls("/IpamDriver.RequestPool") {
		var r PoolRequest
		if err := json.Unmarshal(c.Body, &r); err != nil {
			return nil, fmt.Errorf("decode %s: %w", c.Path, err)
		}
		out = append(out, r)
	}
	return out, nil
}
