package health

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestHandler(t *testing.T) {
	pass := Check{Name: "store", Fn: func(context.Context) error { return nil }}
	failing := Check{Name: "leader", Fn: func(context.Context) error { return errors.New("no leader\nholds the lock") }}
	slow := Check{Name: "ovs", Fn: func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }}
	for _, tc := range []struct {
		name   string
		method string
		checks []Check
		code   int
		body   []string
	}{
		{"all pass", "GET", []Check{pass}, 200, []string{"[+]store ok\n", "readyz check passed\n"}},
		{"no checks", "GET", nil, 200, []string{"readyz check passed\n"}},
		{"one fails", "GET", []Check{pass, failing}, 503, []string{"[+]store ok\n", "[-]leader failed: no leader holds the lock\n", "readyz check failed\n"}},
		{"timeout", "GET", []Check{slow}, 503, []string{"[-]ovs failed: context deadline exceeded\n"}},
		{"post refused", "POST", []Check{pass}, 405, []string{"method POST not allowed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			Handler("readyz", 50*time.Millisecond, tc.checks...).ServeHTTP(rec, httptest.NewRequest(tc.method, "/readyz", nil))
			if rec.Code != tc.code {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.code, rec.Body)
			}
			for _, want := range tc.body {
				if !strings.Contains(rec.Body.String(), want) {
					t.Errorf("body %q lacks %q", rec.Body, want)
				}
			}
		})
	}
	rec := httptest.NewRecorder()
	Alive().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != 200 || rec.Body.String() != "healthz check passed\n" {
		t.Fatalf("healthz: %d %q", rec.Code, rec.Body)
	}
}
