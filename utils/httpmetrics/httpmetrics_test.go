package httpmetrics

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestWrapLabelsByRouteTemplate(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	r := mux.NewRouter()
	r.Use(MuxRoute)
	r.HandleFunc("/api/v1/networks/{key}/", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("{}")) }).Methods("GET")
	r.HandleFunc("/plugin/createEndpoint", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "bad", 500) }).Methods("POST")
	h := m.Wrap(r)
	for _, req := range []struct{ method, path string }{
		{"GET", "/api/v1/networks/default:n1/"},
		{"GET", "/api/v1/networks/default:n2/"},
		{"POST", "/plugin/createEndpoint"},
		{"GET", "/no/such/path/123"},
		{"BREW", "/api/v1/networks/x/"},
	} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(req.method, req.path, nil))
	}
	want := `
# HELP contiv_http_requests_total HTTP requests answered, by method, route template and status code.
# TYPE contiv_http_requests_total counter
contiv_http_requests_total{code="200",method="GET",route="/api/v1/networks/{key}/"} 2
contiv_http_requests_total{code="404",method="GET",route="unmatched"} 1
contiv_http_requests_total{code="405",method="other",route="unmatched"} 1
contiv_http_requests_total{code="500",method="POST",route="/plugin/createEndpoint"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "contiv_http_requests_total"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(m.duration); n != 4 {
		t.Fatalf("%d histogram series, want 4", n)
	}
	if probs, err := testutil.GatherAndLint(reg); err != nil || len(probs) > 0 {
		t.Fatalf("lint: %v %v", probs, err)
	}
}

func TestNilMetricsIsIdentity(t *testing.T) {
	var m *Metrics
	h := http.NotFoundHandler()
	rec := httptest.NewRecorder()
	m.Wrap(h).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != 404 {
		t.Fatal(rec.Code)
	}
	if New(nil) != nil {
		t.Fatal("New(nil) should be nil")
	}
}
