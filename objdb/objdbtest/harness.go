// Package objdbtest is the backend-agnostic objdb test suite and the
// harnesses that start real stores (embedded etcd, an etcd process, a consul
// agent) for it.
//
// A backend's test package wires itself in with a Backend value:
//
//	func TestMain(m *testing.M) { objdbtest.Main(m, backend) }
//	func TestSuite(t *testing.T) { objdbtest.RunSuite(t, backend, server) }
//
// Main lets the suite re-execute the test binary as a helper process that
// registers a service or holds a lock and is then killed with SIGKILL, which
// is how "the holder's process dies" is tested for real.
package objdbtest

import (
	"context"
	"os"
	"testing"

	"github.com/contiv/netplugin/objdb"
)

// Backend opens clients of one backend.
type Backend struct {
	Name string
	// Connect opens a new, independent client (own connection, own
	// sessions) to endpoint, working under root.
	Connect func(ctx context.Context, endpoint, root string) (objdb.Store, error)
}

// Server is a running store the suite can talk to.
type Server struct {
	// Endpoint is what Backend.Connect takes (etcd "http://127.0.0.1:port",
	// consul "127.0.0.1:port").
	Endpoint string
	// Restart stops and starts the store process keeping its data, or is
	// nil when the store cannot be restarted that way (embedded etcd,
	// consul -dev which keeps data in memory).
	Restart func(t testing.TB)
	// NewProxyEndpoint maps a TCP proxy's address ("127.0.0.1:port") to an
	// endpoint string Backend.Connect accepts.
	NewProxyEndpoint func(addr string) string
	// Addr is the store's TCP address "127.0.0.1:port" (what a proxy
	// forwards to).
	Addr string
	// Signal sends sig to the store process (SIGSTOP and SIGCONT pause and
	// resume it), or is nil when the store is not a process of its own.
	Signal func(sig os.Signal) error
}

// RequireComponent fails the test when a real component is missing and
// CI=true, and skips it otherwise.
func RequireComponent(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is required in CI: %v", what, err)
	}
	t.Skipf("%s not available: %v", what, err)
}
