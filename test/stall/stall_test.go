package stall_test

import (
	"testing"

	"github.com/contiv/netplugin/test/stall"
)

func TestMain(m *testing.M) { stall.Main(m) }

// TestStoreFaults runs every variant against an etcd process and netmaster
// processes: after each, no address has two owners, every owned address is
// taken in the pool and the counters equal the records.
func TestStoreFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and netmaster processes and pauses the store")
	}
	// $STALL_RUNS, 1 by default (the acceptance figure of ten runs each
	// comes from test/bench/stall).
	n := stall.RunsFor(t, 1)
	for _, v := range stall.Variants() {
		t.Run(v.String(), func(t *testing.T) {
			for i := 0; i < n; i++ {
				res := stall.Run(t, v)
				t.Log(res)
				if f := res.Failures(); f != "" {
					t.Errorf("run %d of %s:\n%s", i+1, v, f)
				}
			}
		})
	}
}
