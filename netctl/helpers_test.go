package netctl

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeNetmaster records every request and answers from canned routes.
// A route value is "<status>:<body>" or just "<body>" (status 200).
// Unknown routes answer 404 for GET and 200 with an empty body otherwise.
type fakeNetmaster struct {
	*httptest.Server
	mu     sync.Mutex
	reqs   []string
	tokens []string
	routes map[string]string
}

func newFake(t *testing.T, routes map[string]string) *fakeNetmaster {
	t.Helper()
	f := &fakeNetmaster{routes: routes}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeNetmaster) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := r.Method + " " + r.URL.Path
	if len(body) > 0 {
		rec += " " + string(body)
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, rec)
	f.tokens = append(f.tokens, r.Header.Get("X-Auth-Token"))
	ans, ok := f.routes[r.Method+" "+r.URL.Path]
	f.mu.Unlock()
	if !ok {
		if r.Method == http.MethodGet {
			http.Error(w, "not routed", http.StatusNotFound)
		}
		return
	}
	status := http.StatusOK
	if len(ans) >= 4 && ans[3] == ':' && ans[0] >= '1' && ans[0] <= '5' {
		switch ans[:3] {
		case "500":
			status = 500
		case "403":
			status = 403
		case "404":
			status = 404
		case "401":
			status = 401
		case "201":
			status = 201
		case "400":
			status = 400
		case "409":
			status = 409
		case "503":
			status = 503
		}
		ans = ans[4:]
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, ans)
}

func (f *fakeNetmaster) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.reqs...)
}

// result of one netctl run.
type result struct {
	stdout, stderr string
	code           int
}

type runOpts struct {
	env     map[string]string
	home    string
	stdin   string
	pass    string
	passErr error
}

var fixedNow = time.Date(2026, 11, 22, 2, 18, 27, 0, time.UTC)

func runNetctl(t *testing.T, o runOpts, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	home := o.home
	if home == "" {
		home = t.TempDir()
	}
	n := App(Options{
		Stdout:           &out,
		Stderr:           &errb,
		Stdin:            strings.NewReader(o.stdin),
		Getenv:           func(k string) string { return o.env[k] },
		HomeDir:          func() (string, error) { return home, nil },
		ReadPassword:     func() (string, error) { return o.pass, o.passErr },
		Now:              func() time.Time { return fixedNow },
		StderrIsTerminal: func() bool { return false },
	})
	code := n.Run(append([]string{"netctl"}, args...))
	return result{out.String(), errb.String(), code}
}

// run runs netctl against the fake netmaster f.
func (f *fakeNetmaster) run(t *testing.T, args ...string) result {
	t.Helper()
	return runNetctl(t, runOpts{env: map[string]string{"NETMASTER": f.URL}}, args...)
}

// errLine is the error record for msg at fixedNow.
func errLine(msg string) string {
	return `time="2026-11-22T02:18:27Z" level=error msg=` + quoteValue(msg) + " \n"
}
