// Package health serves the daemons' /healthz (the process answers) and
// /readyz (every dependency check passes) endpoints in the Kubernetes
// style: one "[+]name ok" or "[-]name failed: reason" line per check, then
// a summary line; 200 when all pass, 503 otherwise (docs/operations.md).
package health

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// DefaultTimeout bounds each check when Handler is given none.
const DefaultTimeout = 2 * time.Second

// Check is one named readiness condition. Fn returns nil when it holds.
type Check struct {
	Name string
	Fn   func(ctx context.Context) error
}

// Result is the outcome of one check.
type Result struct {
	Name string
	Err  error
}

// Run runs every check with its own timeout (in order) and reports each.
func Run(ctx context.Context, timeout time.Duration, checks []Check) (results []Result, ok bool) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ok = true
	for _, c := range checks {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		err := c.Fn(cctx)
		cancel()
		if err != nil {
			ok = false
		}
		results = append(results, Result{Name: c.Name, Err: err})
	}
	return results, ok
}

// Handler answers GET and HEAD with the outcome of checks; other methods
// get 405. name is the endpoint's name in the summary ("readyz").
func Handler(name string, timeout time.Duration, checks ...Check) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, name+": method "+r.Method+" not allowed", http.StatusMethodNotAllowed)
			return
		}
		results, ok := Run(r.Context(), timeout, checks)
		var b strings.Builder
		for _, res := range results {
			if res.Err == nil {
				fmt.Fprintf(&b, "[+]%s ok\n", res.Name)
			} else {
				fmt.Fprintf(&b, "[-]%s failed: %s\n", res.Name, oneLine(res.Err.Error()))
			}
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(&b, "%s check failed\n", name)
		} else {
			fmt.Fprintf(&b, "%s check passed\n", name)
		}
		_, _ = w.Write([]byte(b.String()))
	})
}

// Alive is the /healthz handler: the process is serving HTTP.
func Alive() http.Handler { return Handler("healthz", 0) }

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }
