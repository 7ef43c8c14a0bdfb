package problem

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestWants(t *testing.T) {
	for accept, want := range map[string]bool{
		"":                         false,
		"*/*":                      false,
		"application/*":            false,
		"application/json":         false,
		"application/problem+json": true,
		"application/json, application/problem+json;q=0.5": true,
		"application/problem+json;q=0":                     false,
		"application/problem+json;q=x":                     false,
		"text/html, APPLICATION/PROBLEM+JSON":              true,
		";;;":                                              false,
	} {
		r := httptest.NewRequest("GET", "/", nil)
		if accept != "" {
			r.Header.Set("Accept", accept)
		}
		if got := Wants(r); got != want {
			t.Errorf("Accept %q: Wants %v, want %v", accept, got, want)
		}
	}
}

// The middleware answers each kind of client in its convention.
func TestMiddleware(t *testing.T) {
	h := Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/refuse":
			http.Error(w, "network web.default not found", http.StatusNotFound)
		case "/conflict":
			http.Error(w, "cannot delete default has 2 endpoint groups", http.StatusConflict)
		case "/noroute":
			NoRouteHandler().ServeHTTP(w, r)
		case "/auth":
			http.Error(w, "token required", http.StatusUnauthorized)
		case "/json400":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"x":1}`)
		case "/fault":
			http.Error(w, "store unavailable", http.StatusInternalServerError)
		default:
			io.WriteString(w, `"ok"`)
		}
	}))
	for _, c := range []struct {
		path    string
		problem bool
		status  int
		ct      string
		body    string
	}{
		{"/refuse", false, 500, "text/plain; charset=utf-8", "network web.default not found\n"},
		{"/refuse", true, 404, ContentType, `{"type":"about:blank","title":"Not Found","status":404,"detail":"network web.default not found"}` + "\n"},
		{"/conflict", false, 500, "text/plain; charset=utf-8", "cannot delete default has 2 endpoint groups\n"},
		{"/conflict", true, 409, ContentType, `{"type":"about:blank","title":"Conflict","status":409,"detail":"cannot delete default has 2 endpoint groups"}` + "\n"},
		{"/noroute", false, 404, "text/plain; charset=utf-8", "404 page not found\n"},
		{"/noroute", true, 404, "text/plain; charset=utf-8", "404 page not found\n"},
		{"/auth", false, 401, "text/plain; charset=utf-8", "token required\n"},
		{"/json400", false, 400, "application/json", `{"x":1}`},
		{"/fault", true, 500, "text/plain; charset=utf-8", "store unavailable\n"},
		{"/ok", true, 200, "", `"ok"`},
	} {
		r := httptest.NewRequest("GET", c.path, nil)
		if c.problem {
			r.Header.Set("Accept", Accept)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != c.status || rec.Header().Get("Content-Type") != c.ct || rec.Body.String() != c.body {
			t.Errorf("%s (problem %v): %d %q %q, want %d %q %q", c.path, c.problem,
				rec.Code, rec.Header().Get("Content-Type"), rec.Body.String(), c.status, c.ct, c.body)
		}
		if c.problem && c.ct == ContentType {
			d, ok := Parse(rec.Header(), rec.Code, rec.Body.Bytes())
			if !ok || d.Status != c.status || !strings.HasPrefix(c.body, `{"type"`) {
				t.Errorf("%s: Parse = %+v %v", c.path, d, ok)
			}
		}
	}
}

func TestParse(t *testing.T) {
	h := http.Header{"Content-Type": {ContentType}}
	d, ok := Parse(h, 409, []byte(`{"detail":"in use"}`))
	if !ok || d.Status != 409 || d.Title != "Conflict" || d.Error() != "in use" {
		t.Fatalf("Parse = %+v %v", d, ok)
	}
	if _, ok := Parse(http.Header{"Content-Type": {"text/plain"}}, 409, []byte(`{}`)); ok {
		t.Fatal("text/plain parsed as problem details")
	}
	if _, ok := Parse(h, 409, []byte(`[1]`)); ok {
		t.Fatal("an array parsed as problem details")
	}
	b, _ := json.Marshal(New(400, "x"))
	if string(b) != `{"type":"about:blank","title":"Bad Request","status":400,"detail":"x"}` {
		t.Fatalf("New encodes as %s", b)
	}
}

// Parse never panics and never reports success without a status.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"type":"about:blank","title":"Conflict","status":409,"detail":"in use"}`), 409)
	f.Add([]byte(`{"status":"x"}`), 400)
	f.Fuzz(func(t *testing.T, body []byte, status int) {
		d, ok := Parse(http.Header{"Content-Type": {ContentType}}, status, body)
		if ok && d.Status == 0 && status != 0 {
			t.Fatalf("status lost: %+v", d)
		}
	})
}
