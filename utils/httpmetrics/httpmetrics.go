// Package httpmetrics counts and times the daemons' HTTP requests by
// method, route template and status code (docs/operations.md, "Metrics").
//
// Wrap puts a route holder into the request's context and observes the
// request when the inner handler returns; the inner router names the
// matched route with SetRoute (MuxRoute does it for a gorilla/mux router).
// Label values stay bounded: a path no route matched is "unmatched", never
// the raw path.
package httpmetrics

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
)

// Route labels for requests no router named.
const (
	RouteUnmatched = "unmatched"
)

// Metrics are the request counter and latency histogram of one daemon.
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inflight prometheus.Gauge
}

// New registers the HTTP metrics with reg. A nil reg returns nil, whose
// Wrap is the identity (metrics off).
func New(reg prometheus.Registerer) *Metrics {
	if reg == nil {
		return nil
	}
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "contiv", Subsystem: "http", Name: "requests_total",
			Help: "HTTP requests answered, by method, route template and status code.",
		}, []string{"method", "route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "contiv", Subsystem: "http", Name: "request_duration_seconds",
			Help:    "Time to answer an HTTP request, by method, route template and status code.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"method", "route", "code"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "contiv", Subsystem: "http", Name: "requests_in_flight",
			Help: "HTTP requests being answered.",
		}),
	}
	reg.MustRegister(m.requests, m.duration, m.inflight)
	return m
}

type routeKey struct{}

type routeHolder struct{ route string }

// SetRoute names the route of r (a template such as
// "/api/v1/networks/{key}/", or a fixed name). It does nothing when r did
// not come through Wrap.
func SetRoute(r *http.Request, route string) {
	if h, ok := r.Context().Value(routeKey{}).(*routeHolder); ok {
		h.route = route
	}
}

// MuxRoute is a gorilla/mux middleware naming the matched route's path
// template.
func MuxRoute(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if cur := mux.CurrentRoute(r); cur != nil {
			if tpl, err := cur.GetPathTemplate(); err == nil {
				SetRoute(r, tpl)
			}
		}
		next.ServeHTTP(w, r)
	})
}

// Wrap observes every request h answers.
func (m *Metrics) Wrap(h http.Handler) http.Handler {
	if m == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		holder := &routeHolder{route: RouteUnmatched}
		sw := &statusWriter{ResponseWriter: w}
		m.inflight.Inc()
		defer func() {
			m.inflight.Dec()
			code := sw.code
			if code == 0 {
				code = http.StatusOK
			}
			method := methodLabel(r.Method)
			c := strconv.Itoa(code)
			m.requests.WithLabelValues(method, holder.route, c).Inc()
			m.duration.WithLabelValues(method, holder.route, c).Observe(time.Since(start).Seconds())
		}()
		h.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), routeKey{}, holder)))
	})
}

// methodLabel keeps the method label bounded: unknown methods are "other".
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "other"
}

// statusWriter records the status code written.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer
// (flushing by the followers' reverse proxy).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
