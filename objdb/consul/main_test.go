package consul

import (
	"context"
	"testing"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/objdbtest"
)

// backend opens consul clients for the shared suite and its helper
// processes.
var backend = objdbtest.Backend{
	Name: "consul",
	Connect: func(ctx context.Context, endpoint, root string) (objdb.Store, error) {
		return New(ctx, Config{Endpoints: []string{endpoint}, Root: root})
	},
}

func TestMain(m *testing.M) { objdbtest.Main(m, backend) }

func TestSuite(t *testing.T) {
	s := objdbtest.StartConsulAgent(t)
	objdbtest.RunSuite(t, backend, s)
}

func BenchmarkCAS(b *testing.B) {
	objdbtest.BenchCAS(b, backend, objdbtest.StartConsulAgent(b))
}

func BenchmarkWatchLatency(b *testing.B) {
	objdbtest.BenchWatchLatency(b, backend, objdbtest.StartConsulAgent(b))
}
