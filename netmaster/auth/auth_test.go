package auth

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const file = `# tokens
admin-token-0123456789,alice,admin

reader-token-0123456789,bob,read-only
`

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "no tokens"},
		{"a,b\n", "line 1: want token,name,role"},
		{"short,n,admin\n", "line 1: token shorter than 16"},
		{"admin-token-0123456789,,admin\n", "line 1: empty name"},
		{"admin-token-0123456789,n,root\n", `line 1: unknown role "root"`},
		{"admin-token-0123456789,n,admin\nadmin-token-0123456789,m,admin\n", "line 2: duplicate token"},
		{"admin-tok\x01en-0123456789,n,admin\n", "line 1: token has a character"},
	} {
		if _, err := Parse(strings.NewReader(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestMiddleware(t *testing.T) {
	toks, err := Parse(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	reached := 0
	h := toks.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached++ }),
		func(r *http.Request) bool { return r.URL.Path == "/healthz" })
	for _, tc := range []struct {
		name, method, path string
		hdr                map[string]string
		code               int
	}{
		{"exempt", "GET", "/healthz", nil, 200},
		{"no token", "GET", "/api/v1/networks/", nil, 401},
		{"admin get", "GET", "/api/v1/networks/", map[string]string{"Authorization": "Bearer admin-token-0123456789"}, 200},
		{"admin post", "POST", "/api/v1/networks/x/", map[string]string{"Authorization": "bearer admin-token-0123456789"}, 200},
		{"reader get", "GET", "/api/v1/networks/", map[string]string{"Authorization": "Bearer reader-token-0123456789"}, 200},
		{"reader via x-auth-token", "GET", "/api/v1/networks/", map[string]string{"X-Auth-Token": "reader-token-0123456789"}, 200},
		{"reader post", "POST", "/api/v1/networks/x/", map[string]string{"Authorization": "Bearer reader-token-0123456789"}, 403},
		{"reader delete", "DELETE", "/api/v1/networks/x/", map[string]string{"Authorization": "Bearer reader-token-0123456789"}, 403},
		{"wrong token", "GET", "/api/v1/networks/", map[string]string{"Authorization": "Bearer wrong-token-0123456789"}, 401},
		{"basic scheme", "GET", "/", map[string]string{"Authorization": "Basic YWxpY2U6cHc="}, 401},
		{"bearer only", "GET", "/", map[string]string{"Authorization": "Bearer"}, 401},
		{"bearer space", "GET", "/", map[string]string{"Authorization": "Bearer "}, 401},
		{"oversize", "GET", "/", map[string]string{"Authorization": "Bearer " + strings.Repeat("a", 600)}, 401},
		{"two headers", "GET", "/", map[string]string{"Authorization": "Bearer admin-token-0123456789", "X-Auth-Token": "admin-token-0123456789"}, 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := reached
			req := httptest.NewRequest(tc.method, tc.path, nil)
			for k, v := range tc.hdr {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.code {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.code, rec.Body)
			}
			if passed := reached > before; passed != (tc.code == 200) {
				t.Fatalf("handler reached = %v with status %d", passed, rec.Code)
			}
			if tc.code == 401 && !strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), "Bearer ") {
				t.Fatalf("401 without a Bearer challenge")
			}
		})
	}
}

func FuzzAuthenticate(f *testing.F) {
	toks, err := Parse(strings.NewReader(file))
	if err != nil {
		f.Fatal(err)
	}
	f.Add("Bearer admin-token-0123456789")
	f.Add("Basic x")
	f.Add("")
	f.Fuzz(func(t *testing.T, hdr string) {
		req := httptest.NewRequest("GET", "/", nil)
		req.Header["Authorization"] = []string{hdr}
		id, err := toks.Authenticate(req)
		if err == nil && id.Name != "alice" && id.Name != "bob" {
			t.Fatalf("authenticated %q as %+v", hdr, id)
		}
	})
}

func FuzzParse(f *testing.F) {
	f.Add(file)
	f.Add("a,b,c\n")
	f.Fuzz(func(t *testing.T, in string) {
		_, _ = Parse(strings.NewReader(in))
	})
}
