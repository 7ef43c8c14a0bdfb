package netctl

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// authRecorder is a TLS netmaster stand-in that records the Authorization
// header of every request.
type authRecorder struct {
	*httptest.Server
	mu   sync.Mutex
	auth []string
}

func newAuthRecorder(t *testing.T, h http.HandlerFunc) *authRecorder {
	a := &authRecorder{}
	a.Server = quietTLSServer(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.auth = append(a.auth, r.Header.Get("Authorization"))
		a.mu.Unlock()
		if h != nil {
			h(w, r)
			return
		}
		_, _ = w.Write([]byte(`[]`))
	})
	t.Cleanup(a.Close)
	return a
}

func (a *authRecorder) seen() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.auth...)
}

func secret(t *testing.T, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTokenSources: the token comes from NETCTL_TOKEN, NETCTL_TOKEN_FILE
// or --token-file (mode 0600 only), or from --token with a warning.
func TestTokenSources(t *testing.T) {
	srv := newAuthRecorder(t, nil)
	file := secret(t, "from-file\n", 0o600)
	cases := []struct {
		name string
		env  map[string]string
		args []string
		want string
		warn bool
	}{
		{"env", map[string]string{"NETCTL_TOKEN": "from-env"}, nil, "Bearer from-env", false},
		{"env file", map[string]string{"NETCTL_TOKEN_FILE": file}, nil, "Bearer from-file", false},
		{"flag file", map[string]string{"NETCTL_TOKEN": "from-env"}, []string{"--token-file", file}, "Bearer from-file", false},
		{"flag", nil, []string{"--token", "from-flag"}, "Bearer from-flag", true},
	}
	for _, tc := range cases {
		before := len(srv.seen())
		args := append(append([]string{"--tls-ca-file", serverCA(t, srv.Server), "--netmaster", srv.URL}, tc.args...), "tenant", "ls", "-q")
		r := runNetctl(t, runOpts{env: tc.env}, args...)
		got := srv.seen()[before:]
		if r.code != 0 || len(got) != 1 || got[0] != tc.want {
			t.Errorf("%s: %+v, sent %q, want %q", tc.name, r, got, tc.want)
		}
		if warned := strings.Contains(r.stderr, "visible") || strings.Contains(r.stderr, "(ps)"); warned != tc.warn {
			t.Errorf("%s: warning %v, want %v: %q", tc.name, warned, tc.warn, r.stderr)
		}
	}
	// A token file others can read is refused, naming the fix.
	r := runNetctl(t, runOpts{}, "--tls-ca-file", serverCA(t, srv.Server), "--netmaster", srv.URL, "--token-file", secret(t, "x", 0o644), "tenant", "ls")
	if r.code != exitInvalid || !strings.Contains(r.stderr, "chmod 600") {
		t.Errorf("0644 token file: %+v", r)
	}
	r = runNetctl(t, runOpts{}, "--tls-ca-file", serverCA(t, srv.Server), "--netmaster", srv.URL, "--token-file", file, "--token", "x", "tenant", "ls")
	if r.code == 0 || !strings.Contains(r.stderr, "not both") {
		t.Errorf("both: %+v", r)
	}
}

// TestTokenNeverInClear: over http to a host other than loopback the
// token is not sent and the command fails saying why; loopback http is
// accepted (netmaster accepts tokens there too).
func TestTokenNeverInClear(t *testing.T) {
	n := App(Options{Getenv: func(string) string { return "" }})
	n.netmaster = "http://198.18.7.1:9999"
	n.token = "secret-token"
	sent := false
	hc := n.newHTTPClient()
	b := hc.Transport.(bearer)
	b.next = roundTripFunc(func(*http.Request) (*http.Response, error) {
		sent = true
		return nil, errors.New("not reached")
	})
	hc.Transport = b
	_, err := hc.Get(n.netmaster + "/api/v1/tenants/")
	if !errors.Is(err, errTokenInClear) || sent {
		t.Fatalf("http to 198.18.7.1: err %v, sent %v", err, sent)
	}

	f := newFake(t, map[string]string{"GET /api/v1/tenants/": `[]`})
	var auth string
	f.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		_, _ = w.Write([]byte(`[]`))
	})
	r := runNetctl(t, runOpts{env: map[string]string{"NETMASTER": f.URL, "NETCTL_TOKEN": "loop-token"}}, "tenant", "ls", "-q")
	if r.code != 0 || auth != "Bearer loop-token" {
		t.Fatalf("loopback http: %+v, sent %q", r, auth)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestTokenNotAcrossRedirect: a redirect to another host is not followed,
// and the other host sees no token, neither the bearer token nor the
// config file's X-Auth-Token.
func TestTokenNotAcrossRedirect(t *testing.T) {
	var mu sync.Mutex
	var otherSaw []string
	other := quietTLSServer(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		otherSaw = append(otherSaw, r.Header.Get("Authorization")+"|"+r.Header.Get("X-Auth-Token"))
		mu.Unlock()
		_, _ = w.Write([]byte(`[]`))
	})
	defer other.Close()
	nm := newAuthRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	})
	home := writeConfig(t, `{"token": "CONFIGTOKEN"}`)
	r := runNetctl(t, runOpts{home: home, env: map[string]string{"NETCTL_TOKEN": "bearer-token"}},
		"--tls-ca-file", serverCA(t, nm.Server), "--netmaster", nm.URL, "tenant", "ls", "-q")
	if r.code == 0 || !strings.Contains(r.stderr, "does not follow a redirect to another host") {
		t.Errorf("redirect: %+v", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(otherSaw) != 0 {
		t.Errorf("the other host got requests: %q", otherSaw)
	}
	// The bearer never adds the token for another origin, whatever the
	// client's redirect policy.
	u, _ := url.Parse(nm.URL)
	b := bearer{token: "t", origin: origin(u), next: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if h := r.Header.Get("Authorization"); h != "" {
			t.Errorf("token sent to %s", r.URL)
		}
		return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
	})}
	req, _ := http.NewRequest(http.MethodGet, other.URL+"/x", nil)
	if _, err := b.RoundTrip(req); err != nil {
		t.Fatal(err)
	}
}
