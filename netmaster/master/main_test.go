package master_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"go.uber.org/goleak"

	"github.com/contiv/netplugin/netmaster/master"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/embedetcd"
	"github.com/contiv/netplugin/objdb/etcd"
	"github.com/contiv/netplugin/objdb/objdbtest"
	"github.com/contiv/netplugin/test/nmproc"
)

// etcdEndpoint is the package's shared embedded etcd; every test works
// under its own root.
var etcdEndpoint string

func TestMain(m *testing.M) {
	nmproc.RunDaemonIfAsked() // the restart and failover tests (process_test.go)
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "master-test-etcd")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	srv, err := embedetcd.Start(ctx, embedetcd.Config{Name: "mastertest", DataDir: dir,
		ClientURL: "http://127.0.0.1:0", PeerURL: "http://127.0.0.1:0", Logger: quietLog()})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start embedded etcd:", err)
		return 1
	}
	etcdEndpoint = srv.Endpoint()
	code := m.Run()
	srv.Close()
	if code == 0 {
		if err := goleak.Find(objdbtest.LeakOptions()...); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			return 1
		}
	}
	return code
}

func quietLog() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	if os.Getenv("MASTER_TEST_LOG") != "" {
		l.SetOutput(os.Stderr)
		l.SetLevel(logrus.DebugLevel)
	}
	return logrus.NewEntry(l)
}

func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// openStore connects a client under root.
func openStore(t testing.TB, endpoint, root string) objdb.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := etcd.New(ctx, etcd.Config{Endpoints: []string{endpoint}, Root: root, Logger: quietLog()})
	if err != nil {
		t.Fatalf("connect to %s: %v", endpoint, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// env is one netmaster leadership term over a fresh root, served by
// httptest. The tests of this package drive whole terms through
// HTTP and so cover netmaster/endpoints and netmaster/controllers too.
type env struct {
	t      testing.TB
	root   string
	st     objdb.Store
	cfg    master.Config
	srv    *httptest.Server
	cancel context.CancelFunc
}

func defaultCfg() master.Config {
	return master.Config{Infra: "default", FwdMode: "bridge", ClusterMode: "test"}
}

func newEnv(t testing.TB) *env { return newEnvCfg(t, defaultCfg()) }

func newEnvCfg(t testing.TB, cfg master.Config) *env {
	t.Helper()
	root := objdbtest.UniqueRoot(t)
	e := &env{t: t, root: root, st: openStore(t, etcdEndpoint, root), cfg: cfg}
	e.start()
	t.Cleanup(e.stop)
	return e
}

// start begins a leadership term (again, after stop: a restart).
func (e *env) start() {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h, err := master.New(e.cfg, quietLog()).Start(ctx, e.st)
	if err != nil {
		cancel()
		e.t.Fatalf("start leader: %v", err)
	}
	e.cancel = cancel
	e.srv = httptest.NewServer(h)
}

func (e *env) stop() {
	if e.srv != nil {
		e.srv.Close()
		e.srv = nil
	}
	if e.cancel != nil {
		e.cancel()
		e.cancel = nil
	}
}

func (e *env) restart() {
	e.t.Helper()
	e.stop()
	e.start()
}

// do sends a request; body "" sends none. JSON content type unless ct set.
func doReq(t testing.TB, base, method, path, body string, ct ...string) (int, string, http.Header) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, base+path, r)
	if err != nil {
		t.Fatalf("new request: %v", err)
	}
	if len(ct) > 0 {
		req.Header.Set("Content-Type", ct[0])
	} else {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func (e *env) do(method, path, body string) (int, string) {
	e.t.Helper()
	code, b, _ := doReq(e.t, e.srv.URL, method, path, body)
	return code, b
}

// ok requires a 200 answer and returns the body.
func (e *env) ok(method, path, body string) string {
	e.t.Helper()
	code, b := e.do(method, path, body)
	if code != http.StatusOK {
		e.t.Fatalf("%s %s %s: want 200, got %d %q", method, path, body, code, b)
	}
	return b
}

// fail requires a client-error answer (400, 404 or 409) whose first line
// is msg ("" = any) and an unchanged store.
func (e *env) fail(method, path, body, msg string) {
	e.t.Helper()
	e.failStatus(method, path, body, 0, msg)
}

// failStatus is fail with the exact status (0: any of 400, 404, 409).
func (e *env) failStatus(method, path, body string, status int, msg string) {
	e.t.Helper()
	before := e.dump()
	code, b := e.do(method, path, body)
	switch {
	case status != 0 && code != status:
		e.t.Fatalf("%s %s %s: want %d, got %d %q", method, path, body, status, code, b)
	case status == 0 && code != http.StatusBadRequest && code != http.StatusNotFound && code != http.StatusConflict:
		e.t.Fatalf("%s %s %s: want 400, 404 or 409, got %d %q", method, path, body, code, b)
	}
	first, _, _ := strings.Cut(b, "\n")
	if msg != "" && first != msg {
		e.t.Fatalf("%s %s %s: want message %q, got %q", method, path, body, msg, first)
	}
	after := e.dump()
	if d := diffDumps(before, after); d != "" {
		e.t.Fatalf("%s %s %s refused (%q) but changed the store:\n%s", method, path, body, first, d)
	}
}

// dump reads every key under the env's root.
func (e *env) dump() map[string]string {
	e.t.Helper()
	kvs, err := e.st.List(testCtx(e.t, 10*time.Second), "")
	if err != nil {
		e.t.Fatalf("dump store: %v", err)
	}
	out := map[string]string{}
	for _, kv := range kvs {
		out[kv.Key] = string(kv.Value)
	}
	return out
}

func diffDumps(a, b map[string]string) string {
	var lines []string
	for k, v := range a {
		if w, ok := b[k]; !ok {
			lines = append(lines, "- "+k)
		} else if w != v {
			lines = append(lines, "~ "+k+"\n    before: "+v+"\n    after:  "+w)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			lines = append(lines, "+ "+k+" = "+b[k])
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
