package netctl

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/contiv/netplugin/utils/problem"
)

// originalClient handles an answer as the original's REST client did
// (docs/rest-errors.md "Two kinds of client"): it reads the body only on
// 500; a 404 is "Page not found!", a 403 "Access denied!", any other
// non-200 the status line. It sends no Accept header.
func originalClient(t *testing.T, method, u, body string) string {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	switch resp.StatusCode {
	case http.StatusOK:
		return "OK"
	case http.StatusInternalServerError:
		return string(b)
	case http.StatusNotFound:
		return "Page not found!"
	case http.StatusForbidden:
		return "Access denied!"
	}
	return resp.Status
}

// recorder is a proxy in front of netmaster that notes each answer's
// status and content type, so a test sees what netctl was sent.
type recorder struct {
	mu      sync.Mutex
	answers []string
	reqs    []sent
}

// sent is a request netctl sent.
type sent struct{ method, uri, body string }

func (rc *recorder) start(t *testing.T, base string) string {
	t.Helper()
	target, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	p := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		ModifyResponse: func(resp *http.Response) error {
			rc.mu.Lock()
			defer rc.mu.Unlock()
			rc.answers = append(rc.answers, resp.Status+" "+resp.Header.Get("Content-Type"))
			return nil
		},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		rc.mu.Lock()
		rc.reqs = append(rc.reqs, sent{r.Method, r.URL.RequestURI(), string(b)})
		rc.mu.Unlock()
		p.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func (rc *recorder) take() ([]string, []sent) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	a, q := rc.answers, rc.reqs
	rc.answers, rc.reqs = nil, nil
	return a, q
}

// TestEdgeRefusals drives every kind of refusal of docs/rest-errors.md
// against a real netmaster with two clients: one that handles errors as
// the original's client did prints the server's reason for each (never
// "Page not found!" or a bare status line), and our netctl (and a request
// asking for problem details) still gets the 4xx status with a
// problem details body carrying the same reason.
func TestEdgeRefusals(t *testing.T) {
	base := startNetmaster(t)
	rc := &recorder{}
	proxied := rc.start(t, base)
	ours := func(args ...string) result {
		return runNetctl(t, runOpts{env: map[string]string{"NETMASTER": proxied}}, args...)
	}
	for _, args := range [][]string{
		{"tenant", "create", "edge"},
		{"net", "create", "-t", "edge", "-s", "198.18.77.0/24", "-g", "198.18.77.254", "web"},
		{"policy", "create", "-t", "edge", "pol"},
		{"policy", "rule-add", "-t", "edge", "-d", "in", "-l", "tcp", "-P", "80", "pol", "1"},
		{"group", "create", "-t", "edge", "-p", "pol", "web", "front"},
	} {
		if r := ours(args...); r.code != 0 {
			t.Fatalf("netctl %s: exit %d %s", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	_, _ = rc.take()

	// The refusals of a scripted netctl session (the commands the
	// original's netctl printed "400 Bad Request", "409 Conflict" or
	// "Page not found!" for), as netctl sends them.
	session := []struct {
		args   []string
		status int
		reason string
	}{
		{[]string{"net", "create", "-t", "edge", "-s", "198.18.78.0/33", "bad"}, 400, "subnet string invalid format"},
		{[]string{"net", "create", "-t", "edge", "-e", "vlan", "-p", "5000", "-s", "198.18.79.0/24", "hightag"}, 409, "requested vlan not available - vlan:5000"},
		{[]string{"net", "create", "-t", "nosuch", "-s", "198.18.80.0/24", "orphan"}, 404, "Tenant nosuch not found"},
		{[]string{"net", "inspect", "-t", "edge", "nonet"}, 404, "network not found"},
		{[]string{"group", "create", "-t", "edge", "nonet", "g2"}, 404, "Network nonet not found"},
		{[]string{"group", "inspect", "-t", "edge", "nogroup"}, 404, "endpointGroup not found"},
		{[]string{"endpoint", "inspect", "noep"}, 404, "endpoint not found"},
		{[]string{"policy", "rule-add", "-t", "edge", "-d", "in", "-l", "tcp", "-P", "70000", "pol", "2"}, 400, "port Value Out of bound"},
		{[]string{"policy", "rule-rm", "-t", "edge", "pol", "99"}, 409, "rule not found"},
		{[]string{"global", "set", "--fwd-mode", "bridge"}, 409, "Unable to update forwarding mode due to existing 1 vxlans"},
		{[]string{"tenant", "rm", "edge"}, 409, "cannot delete edge has 1 endpoint groups"},
		{[]string{"net", "rm", "-t", "edge", "nonet"}, 409, "network not found"},
	}
	for _, c := range session {
		name := strings.Join(c.args, " ")
		r := ours(c.args...)
		answers, reqs := rc.take()
		if r.code == 0 {
			t.Errorf("netctl %s succeeded: %s", name, r.stdout)
			continue
		}
		last := ""
		if len(answers) > 0 {
			last = answers[len(answers)-1]
		}
		if !strings.HasPrefix(last, http.StatusText(c.status)) && !strings.HasPrefix(last, itoa(c.status)+" ") {
			t.Errorf("netctl %s: netmaster answered %q, want %d %s", name, last, c.status, problem.ContentType)
		}
		if !strings.HasSuffix(last, problem.ContentType) {
			t.Errorf("netctl %s: answer %q is not problem details", name, last)
		}
		if r.stderr != errLine(c.reason) || strings.Contains(r.stderr, "Page not found!") ||
			strings.Contains(r.stderr, http.StatusText(c.status)) {
			t.Errorf("netctl %s: stderr %q, want the reason (with %q)", name, r.stderr, c.reason)
		}
		// The same request from the original's client: it prints the reason.
		if len(reqs) > 0 {
			q := reqs[len(reqs)-1]
			if got := originalClient(t, q.method, base+q.uri, q.body); got != c.reason+"\n" {
				t.Errorf("netctl %s: the original's client prints %q for %s %s, want %q", name, got, q.method, q.uri, c.reason)
			}
		}
		t.Logf("netctl %s → %s: %s", name, last, c.reason)
	}

	// Every kind of refusal of docs/rest-errors.md, as requests: the
	// original's client prints the reason, a problem details client gets
	// the status and the same reason.
	long := strings.Repeat("x", 1025)
	requests := []struct {
		what, method, path, body string
		status                   int
	}{
		{"body that does not decode", "POST", "/api/v1/tenants/t2/", `{"tenantName":`, 400},
		{"field that fails validation", "POST", "/api/v1/tenants/-bad/", `{"tenantName":"-bad"}`, 400},
		{"gateway outside the subnet", "POST", "/api/v1/networks/edge:gw/", `{"tenantName":"edge","networkName":"gw","encap":"vxlan","subnet":"198.18.81.0/24","gateway":"198.18.82.1"}`, 400},
		{"key in the body differs from the URL", "POST", "/api/v1/networks/edge:a/", `{"tenantName":"edge","networkName":"b","encap":"vxlan","subnet":"198.18.83.0/24"}`, 400},
		{"bad key in the URL", "DELETE", "/api/v1/tenants/t1%2F..%2Fvictim/", "", 400},
		{"key too long", "GET", "/api/v1/tenants/" + long + "/", "", 400},
		{"invalid UTF-8", "POST", "/api/v1/tenants/u/", "{\"tenantName\":\"u\xff\"}", 400},
		{"type without controller", "POST", "/api/v1/volumes/edge:v/", `{"tenantName":"edge","volumeName":"v"}`, 400},
		{"GET of a missing object", "GET", "/api/v1/networks/edge:nonet/", "", 404},
		{"inspect of a missing object", "GET", "/api/v1/inspect/endpointGroups/edge:nogroup/", "", 404},
		{"plugin request naming a missing network", "POST", "/plugin/createEndpoint", `{"TenantName":"edge","NetworkName":"nonet","ConfigEP":{"Container":"c1"}}`, 404},
		{"plugin request missing a field", "POST", "/plugin/createEndpoint", `{"TenantName":"edge","NetworkName":"web"}`, 400},
		{"DELETE of a missing object", "DELETE", "/api/v1/policys/edge:nopol/", "", 409},
		{"in use", "DELETE", "/api/v1/networks/edge:web/", "", 409},
		{"already exists with other settings", "POST", "/api/v1/networks/edge:web/", `{"tenantName":"edge","networkName":"web","encap":"vxlan","subnet":"198.18.84.0/24"}`, 409},
		{"body too large", "POST", "/api/v1/tenants/big/", `{"tenantName":"big","x":"` + strings.Repeat("y", 5<<20) + `"}`, 413},
	}
	for _, c := range requests {
		req, err := http.NewRequest(c.method, base+c.path, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", problem.Accept)
		if c.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		d, ok := problem.Parse(resp.Header, resp.StatusCode, b)
		if resp.StatusCode != c.status || !ok || d.Status != c.status || d.Detail == "" {
			t.Errorf("%s: problem client got %d %q %s, want %d with problem details", c.what, resp.StatusCode, resp.Header.Get("Content-Type"), b, c.status)
			continue
		}
		got := originalClient(t, c.method, base+c.path, c.body)
		if got != d.Detail+"\n" {
			t.Errorf("%s: the original's client prints %q, want the reason %q", c.what, got, d.Detail)
		}
		t.Logf("%s: %d %q", c.what, c.status, d.Detail)
	}

	// A path no route serves stays 404 for both kinds (the original's
	// client prints "Page not found!", as it always did).
	if got := originalClient(t, "GET", base+"/api/v1/nosuchtype/", ""); got != "Page not found!" {
		t.Errorf("unknown route: the original's client prints %q", got)
	}
	// The refusals changed nothing: the setup is intact.
	if r := ours("net", "ls", "-t", "edge", "-q"); r.code != 0 || r.stdout != "web\n" {
		t.Errorf("networks of edge after the refusals: %q %q", r.stdout, r.stderr)
	}
	if got := originalClient(t, "GET", base+"/api/v1/tenants/nobody/", ""); got != "tenant not found\n" {
		t.Errorf("GET of a missing tenant: the original's client prints %q", got)
	}
}

func itoa(n int) string {
	return strconv.Itoa(n)
}
