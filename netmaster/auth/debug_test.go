package auth

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The state-changing debug endpoints are DELETEs, so with tokens on only
// an admin token reaches them, dry runs included (docs/security.md,
// "Debug endpoints").
func TestDebugEndpointsNeedAdmin(t *testing.T) {
	toks, err := Parse(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	reached := 0
	h := toks.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached++ }), nil)
	for _, tc := range []struct {
		token, path string
		code        int
	}{
		{"", "/debug/epcleanup/tenant/default/ep/e1", 401},
		{"reader-token-0123456789", "/debug/epcleanup/tenant/default/ep/e1", 403},
		{"reader-token-0123456789", "/debug/epcleanup/tenant/default/ep/e1?dryRun=true", 403},
		{"admin-token-0123456789", "/debug/epcleanup/tenant/default/ep/e1?dryRun=true", 200},
	} {
		before := reached
		req := httptest.NewRequest(http.MethodDelete, tc.path, nil)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.code || (reached > before) != (tc.code == 200) {
			t.Fatalf("DELETE %s with %q: %d (handler reached %v), want %d", tc.path, tc.token, rec.Code, reached > before, tc.code)
		}
	}
}
