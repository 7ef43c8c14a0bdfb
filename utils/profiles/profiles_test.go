package profiles

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	h := Handler()
	for _, c := range []struct {
		method, path string
		code         int
		want         string
	}{
		{"GET", "/debug/pprof/goroutine?debug=1", 200, "goroutine profile: total"},
		{"GET", "/debug/pprof/heap?debug=1", 200, "heap profile"},
		{"GET", "/debug/pprof/goroutine", 200, ""},
		{"GET", "/debug/pprof/profile", 404, "no such profile"},
		{"GET", "/debug/pprof/heap?debug=7", 400, "debug"},
		{"POST", "/debug/pprof/heap", 405, "use GET"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
		if rec.Code != c.code || !strings.Contains(rec.Body.String(), c.want) {
			t.Errorf("%s %s: %d %.80q, want %d containing %q", c.method, c.path, rec.Code, rec.Body.String(), c.code, c.want)
		}
		if c.code == 200 && c.want == "" && rec.Header().Get("Content-Type") != "application/octet-stream" {
			t.Errorf("%s: content type %q", c.path, rec.Header().Get("Content-Type"))
		}
	}
	_ = http.MethodGet
}
