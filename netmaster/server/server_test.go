package server

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/objdbtest"
	"github.com/contiv/netplugin/utils/daemonflags"
	"github.com/contiv/netplugin/utils/version"
)

// freeAddr returns a free TCP address on ip (a loopback address, so two
// netmasters do not share service keys).
func freeAddr(t *testing.T, ip string) string {
	t.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

type running struct {
	d      *Daemon
	cancel context.CancelFunc
	done   chan error
	addr   string
	once   sync.Once
}

// testConfig is a test netmaster on addr using the etcd at endpoint.
func testConfig(endpoint, addr string) Config {
	return Config{
		Common:          daemonflags.Common{Mode: "test", NetMode: "vxlan", FwdMode: "routing", EtcdEndpoints: []string{endpoint}},
		ExternalAddress: addr, InternalAddress: addr, LeaderTTL: 2 * time.Second,
	}
}

// launch runs a netmaster with cfg and leader until the test ends and
// returns once it is ready; name tags its failures.
func launch(t *testing.T, cfg Config, leader Leader, name string) *running {
	t.Helper()
	d, err := New(cfg, leader, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{d: d, cancel: cancel, done: make(chan error, 1), addr: cfg.ExternalAddress}
	go func() { r.done <- d.Run(ctx) }()
	t.Cleanup(r.stop)
	select {
	case <-d.Ready():
	case err := <-r.done:
		t.Fatalf("daemon %s exited: %v", name, err)
	case <-time.After(30 * time.Second):
		t.Fatalf("daemon %s not ready", name)
	}
	return r
}

// startDaemon runs a netmaster whose leader API answers "leader <name>".
func startDaemon(t *testing.T, endpoint, name string) *running {
	t.Helper()
	cfg := testConfig(endpoint, freeAddr(t, "127.0.0.1"))
	cfg.Version = version.Info{Version: "v-test"}
	leader := LeaderFunc(func(ctx context.Context, st objdb.Store) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "leader "+name+" "+r.Method+" "+r.URL.RequestURI())
		}), nil
	})
	return launch(t, cfg, leader, name)
}

func (r *running) stop() { r.once.Do(r.stopOnce) }

func (r *running) stopOnce() {
	r.cancel()
	select {
	case <-r.done:
	case <-time.After(20 * time.Second):
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		panic("daemon did not stop within 20s\n" + string(buf[:n]))
	}
}

func get(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestLeaderFollowerProxyAndHandover(t *testing.T) {
	srv := objdbtest.StartEmbeddedEtcd(t)
	a := startDaemon(t, srv.Endpoint, "A")
	waitFor(t, 10*time.Second, "A to lead", func() bool { return a.d.State() == RoleLeader })
	b := startDaemon(t, srv.Endpoint, "B")
	time.Sleep(300 * time.Millisecond)
	if b.d.State() != RoleFollower {
		t.Fatalf("B state %s", b.d.State())
	}
	// Every path and method reaches the leader through the follower, unchanged.
	code, body := get(t, b.addr, "/api/v1/networks/?x=1")
	if code != 200 || body != "leader A GET /api/v1/networks/?x=1" {
		t.Fatalf("proxied GET: %d %q", code, body)
	}
	resp, err := http.Post("http://"+b.addr+"/plugin/createEndpoint", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	pb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(pb) != "leader A POST /plugin/createEndpoint" {
		t.Fatalf("proxied POST: %q", pb)
	}
	// /info (answered by the leader) names the leader and both netmasters.
	code, body = get(t, b.addr, "/info")
	var info map[string]any
	if code != 200 || json.Unmarshal([]byte(body), &info) != nil {
		t.Fatalf("/info: %d %s", code, body)
	}
	if info["leader-ip"] != a.addr || info["current-state"] != "leader" {
		t.Fatalf("/info: %s", body)
	}
	if code, body := get(t, b.addr, "/version"); code != 200 || !strings.Contains(body, `"Version":"v-test"`) {
		t.Fatalf("/version: %d %s", code, body)
	}
	// Graceful stop of the leader hands over quickly.
	start := time.Now()
	a.stop()
	waitFor(t, 5*time.Second, "B to lead", func() bool { return b.d.State() == RoleLeader })
	t.Logf("hand-over after graceful leader stop: %v", time.Since(start))
	if code, body := get(t, b.addr, "/api/v1/tenants/"); code != 200 || body != "leader B GET /api/v1/tenants/" {
		t.Fatalf("new leader: %d %q", code, body)
	}
}

func TestFollowerWithoutLeader(t *testing.T) {
	srv := objdbtest.StartEmbeddedEtcd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Once nobody holds the lock, a follower answers 500 "Leader not found".
	a := startDaemon(t, srv.Endpoint, "A")
	waitFor(t, 10*time.Second, "A to lead", func() bool { return a.d.State() == RoleLeader })
	h := a.d.followerHandler()
	a.d.lock.Release(ctx)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/tenants/", nil))
	if rec.Code != http.StatusInternalServerError || strings.TrimSpace(rec.Body.String()) != "Leader not found" {
		t.Fatalf("no leader: %d %q", rec.Code, rec.Body.String())
	}
}
