// Package mastertest serves netmaster leadership terms (netmaster/master)
// to tests over an embedded etcd: Run starts the etcd for a test binary,
// Env is one term over a fresh store root with request helpers that check
// answers and that refused requests leave the store unchanged. The tests of
// netmaster/master, netmaster/endpoints and netmaster/controllers use it.
package mastertest

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
)

// Run starts an embedded etcd, stores its client endpoint in *endpoint,
// runs the tests and, when they pass, checks for leaked goroutines. It
// returns the exit code for os.Exit.
func Run(m *testing.M, endpoint *string) int {
	dir, err := os.MkdirTemp("", "master-test-etcd")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	srv, err := embedetcd.Start(ctx, embedetcd.Config{Name: "mastertest", DataDir: dir,
		ClientURL: "http://127.0.0.1:0", PeerURL: "http://127.0.0.1:0", Logger: QuietLog()})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start embedded etcd:", err)
		return 1
	}
	*endpoint = srv.Endpoint()
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

// QuietLog discards the log unless MASTER_TEST_LOG is set.
func QuietLog() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	if os.Getenv("MASTER_TEST_LOG") != "" {
		l.SetOutput(os.Stderr)
		l.SetLevel(logrus.DebugLevel)
	}
	return logrus.NewEntry(l)
}

// Ctx is a context cancelled after d or when the test ends.
func Ctx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// OpenStore connects a client under root.
func OpenStore(t testing.TB, endpoint, root string) objdb.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := etcd.New(ctx, etcd.Config{Endpoints: []string{endpoint}, Root: root, Logger: QuietLog()})
	if err != nil {
		t.Fatalf("connect to %s: %v", endpoint, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Env is one netmaster leadership term (master.New) over a store root,
// served by httptest: tests drive whole terms through HTTP.
type Env struct {
	T    testing.TB
	Root string
	St   objdb.Store
	Cfg  master.Config
	Srv  *httptest.Server

	cancel context.CancelFunc
}

// Etcd is a test package's shared embedded etcd: the package's TestMain
// runs its tests through Main, and each test starts its terms, each over
// a fresh root, with New or NewCfg.
type Etcd struct{ endpoint string }

// Main is Run for the package's etcd.
func (e *Etcd) Main(m *testing.M) int { return Run(m, &e.endpoint) }

// New starts a term with DefaultConfig (New).
func (e *Etcd) New(t testing.TB) *Env { return New(t, e.endpoint, DefaultConfig()) }

// NewCfg starts a term with cfg (New).
func (e *Etcd) NewCfg(t testing.TB, cfg master.Config) *Env { return New(t, e.endpoint, cfg) }

// DefaultConfig is the term configuration of most tests.
func DefaultConfig() master.Config {
	return master.Config{Infra: "default", FwdMode: "bridge", ClusterMode: "test"}
}

// New starts a term with cfg over a fresh root of the etcd at endpoint,
// stopped when the test ends.
func New(t testing.TB, endpoint string, cfg master.Config) *Env {
	t.Helper()
	root := objdbtest.UniqueRoot(t)
	return StartOn(t, root, OpenStore(t, endpoint, root), cfg)
}

// StartOn starts a term with cfg over st (whose root is root), stopped
// when the test ends.
func StartOn(t testing.TB, root string, st objdb.Store, cfg master.Config) *Env {
	t.Helper()
	e := &Env{T: t, Root: root, St: st, Cfg: cfg}
	e.Start()
	t.Cleanup(e.Stop)
	return e
}

// Start begins a leadership term (again, after stop: a restart).
func (e *Env) Start() {
	e.T.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h, err := master.New(e.Cfg, QuietLog()).Start(ctx, e.St)
	if err != nil {
		cancel()
		e.T.Fatalf("start leader: %v", err)
	}
	e.cancel = cancel
	e.Srv = httptest.NewServer(h)
}

// Stop ends the term and its server.
func (e *Env) Stop() {
	if e.Srv != nil {
		e.Srv.Close()
		e.Srv = nil
	}
	if e.cancel != nil {
		e.cancel()
		e.cancel = nil
	}
}

// Restart stops the term and starts a new one over the same store.
func (e *Env) Restart() {
	e.T.Helper()
	e.Stop()
	e.Start()
}

// DoReq sends a request; body "" sends none. JSON content type unless ct set.
func DoReq(t testing.TB, base, method, path, body string, ct ...string) (int, string, http.Header) {
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

// Do sends a request to the term.
func (e *Env) Do(method, path, body string) (int, string) {
	e.T.Helper()
	code, b, _ := DoReq(e.T, e.Srv.URL, method, path, body)
	return code, b
}

// OK requires a 200 answer and returns the body.
func (e *Env) OK(method, path, body string) string {
	e.T.Helper()
	code, b := e.Do(method, path, body)
	if code != http.StatusOK {
		e.T.Fatalf("%s %s %s: want 200, got %d %q", method, path, body, code, b)
	}
	return b
}

// Fail requires a client-error answer (400, 404 or 409) whose first line
// is msg ("" = any) and an unchanged store.
func (e *Env) Fail(method, path, body, msg string) {
	e.T.Helper()
	e.FailStatus(method, path, body, 0, msg)
}

// FailStatus is Fail with the exact status (0: any of 400, 404, 409).
func (e *Env) FailStatus(method, path, body string, status int, msg string) {
	e.T.Helper()
	before := e.Dump()
	code, b := e.Do(method, path, body)
	switch {
	case status != 0 && code != status:
		e.T.Fatalf("%s %s %s: want %d, got %d %q", method, path, body, status, code, b)
	case status == 0 && code != http.StatusBadRequest && code != http.StatusNotFound && code != http.StatusConflict:
		e.T.Fatalf("%s %s %s: want 400, 404 or 409, got %d %q", method, path, body, code, b)
	}
	first, _, _ := strings.Cut(b, "\n")
	if msg != "" && first != msg {
		e.T.Fatalf("%s %s %s: want message %q, got %q", method, path, body, msg, first)
	}
	after := e.Dump()
	if d := DiffDumps(before, after); d != "" {
		e.T.Fatalf("%s %s %s refused (%q) but changed the store:\n%s", method, path, body, first, d)
	}
}

// Dump reads every key under the env's root.
func (e *Env) Dump() map[string]string {
	e.T.Helper()
	kvs, err := e.St.List(Ctx(e.T, 10*time.Second), "")
	if err != nil {
		e.T.Fatalf("dump store: %v", err)
	}
	out := map[string]string{}
	for _, kv := range kvs {
		out[kv.Key] = string(kv.Value)
	}
	return out
}

// DiffDumps lists the keys added (+), removed (-) and changed (~) from a
// to b, sorted.
func DiffDumps(a, b map[string]string) string {
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
