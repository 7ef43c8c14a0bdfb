// Package profiles serves the daemons' goroutine and heap profiles
// (docs/operations.md, "Profiles"): GET /debug/pprof/goroutine and
// /debug/pprof/heap, in pprof's binary format or, with ?debug=1 or 2, as
// text. Only these two read-only profiles: no CPU profile or trace, which
// would cost the daemon CPU on request.
package profiles

import (
	"net/http"
	"runtime/pprof"
	"strconv"
	"strings"
)

// Prefix is the path the handler serves under.
const Prefix = "/debug/pprof/"

// Handler serves GET Prefix+{goroutine,heap}[?debug=0|1|2].
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			http.Error(w, "method not allowed; use GET", http.StatusMethodNotAllowed)
			return
		}
		name := strings.TrimPrefix(r.URL.Path, Prefix)
		if name != "goroutine" && name != "heap" {
			http.Error(w, "no such profile: "+name+" (goroutine, heap)", http.StatusNotFound)
			return
		}
		debug := 0
		if v := r.URL.Query().Get("debug"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > 2 {
				http.Error(w, "debug: want 0, 1 or 2", http.StatusBadRequest)
				return
			}
			debug = n
		}
		p := pprof.Lookup(name)
		if debug == 0 {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
		} else {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		}
		_ = p.WriteTo(w, debug)
	})
}
