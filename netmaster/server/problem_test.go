package server

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/objdbtest"
	"github.com/contiv/netplugin/utils/problem"
)

// A refusal reaches each kind of client in its convention, from the
// leader and through a follower alike (docs/rest-errors.md "Two kinds of
// client"); an unknown route stays 404 for both.
func TestRefusalsForBothKindsOfClient(t *testing.T) {
	srv := objdbtest.StartEmbeddedEtcd(t)
	leader := LeaderFunc(func(ctx context.Context, st objdb.Store) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/api/v1/tenants/t1/":
				http.Error(w, "cannot delete t1 has 2 endpoint groups", http.StatusConflict)
			default:
				problem.NoRouteHandler().ServeHTTP(w, r)
			}
		}), nil
	})
	first := launch(t, testConfig(srv.Endpoint, freeAddr(t, "127.0.0.1")), leader, "first")
	waitFor(t, 10*time.Second, "first leads", func() bool { return first.d.State() == RoleLeader })
	second := launch(t, testConfig(srv.Endpoint, freeAddr(t, "127.0.0.1")), leader, "second")
	waitFor(t, 10*time.Second, "second follows", func() bool { return second.d.State() == RoleFollower && second.d.lockSet.Load() })
	for _, r := range []*running{first, second} {
		for _, c := range []struct {
			path, accept string
			status       int
			ct, body     string
		}{
			{"/api/v1/tenants/t1/", "", 500, "text/plain; charset=utf-8", "cannot delete t1 has 2 endpoint groups\n"},
			{"/api/v1/tenants/t1/", problem.Accept, 409, problem.ContentType,
				`{"type":"about:blank","title":"Conflict","status":409,"detail":"cannot delete t1 has 2 endpoint groups"}` + "\n"},
			{"/api/v1/nosuch/", "", 404, "text/plain; charset=utf-8", "404 page not found\n"},
			{"/api/v1/nosuch/", problem.Accept, 404, "text/plain; charset=utf-8", "404 page not found\n"},
		} {
			req, _ := http.NewRequest(http.MethodDelete, "http://"+r.addr+c.path, nil)
			if c.accept != "" {
				req.Header.Set("Accept", c.accept)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status || resp.Header.Get("Content-Type") != c.ct || string(b) != c.body {
				t.Errorf("%s %s (Accept %q): %d %q %q, want %d %q %q", r.d.State(), c.path, c.accept,
					resp.StatusCode, resp.Header.Get("Content-Type"), b, c.status, c.ct, strings.TrimSpace(c.body))
			}
		}
	}
}
