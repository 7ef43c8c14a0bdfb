package modeltest

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/objdb"
)

// Server is an httptest server over the model router.
type Server struct {
	*httptest.Server
	Registry *contivmodel.Registry
	KV       objdb.KV
}

// QuietLogger discards log output.
func QuietLogger() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return logrus.NewEntry(l)
}

// NewRegistry builds a registry over kv with every kind registered with c,
// loaded from the store.
func NewRegistry(t testing.TB, kv objdb.KV, c contivmodel.Controllers) *contivmodel.Registry {
	t.Helper()
	reg := contivmodel.NewRegistry(kv, contivmodel.WithLogger(QuietLogger()))
	if err := contivmodel.RegisterAll(reg, c); err != nil {
		t.Fatalf("register kinds: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := reg.Load(ctx); err != nil {
		t.Fatalf("load registry: %v", err)
	}
	return reg
}

// Start serves a fresh registry over kv with controllers c; the server is
// closed when the test ends.
func Start(t testing.TB, kv objdb.KV, c contivmodel.Controllers) *Server {
	t.Helper()
	return StartWith(t, kv, c, nil)
}

// StartWith is Start with extra routes added by setup before serving.
func StartWith(t testing.TB, kv objdb.KV, c contivmodel.Controllers, setup func(*mux.Router)) *Server {
	t.Helper()
	reg := NewRegistry(t, kv, c)
	router := contivmodel.NewRouter(reg)
	if setup != nil {
		setup(router)
	}
	srv := httptest.NewServer(router)
	t.Cleanup(srv.Close)
	return &Server{Server: srv, Registry: reg, KV: kv}
}

// Response is a finished HTTP exchange.
type Response struct {
	Status      int
	ContentType string
	Location    string
	Body        string
}

// Do sends one request with a raw path (not cleaned by the client) and an
// optional body and header pairs ("Content-Type", "application/json", …).
func (s *Server) Do(t testing.TB, method, path, body string, header ...string) Response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	// url.Parse keeps the path as written ("//", "/./", escapes), and the
	// HTTP client sends it without cleaning.
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		t.Fatalf("new request: %v", err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return Response{Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Location: resp.Header.Get("Location"), Body: string(b)}
}
