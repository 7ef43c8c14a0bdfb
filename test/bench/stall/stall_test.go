// Package stall measures the store-fault scenario of
// docs/allocation-integrity.md (test/stall) over many runs: ten of each
// variant by default ($STALL_RUNS), each against a fresh etcd process and
// fresh netmaster processes, and prints one line per run and a summary per
// variant. It fails when any run finds an address with two owners, an
// owned address free in its pool or counters that differ from the records.
//
//	go test ./test/bench/stall -run '^$' -bench . -benchtime 1x -timeout 60m
package stall

import (
	"fmt"
	"testing"

	"github.com/contiv/netplugin/test/stall"
)

func TestMain(m *testing.M) { stall.Main(m) }

func BenchmarkStall(b *testing.B) {
	n := stall.RunsFor(b, 10)
	var summary []string
	for _, v := range stall.Variants() {
		b.Run(v.String(), func(b *testing.B) {
			clean, created, retried, leaked := 0, 0, 0, 0
			var doubles int
			for i := 0; i < n; i++ {
				res := stall.Run(b, v)
				fmt.Printf("run %2d  %s\n", i+1, res)
				if f := res.Failures(); f == "" {
					clean++
				} else {
					b.Errorf("run %d of %s:\n%s", i+1, v, f)
				}
				created += res.Created
				retried += res.Retried
				leaked += res.Leaked
				doubles += len(res.DoubleOwned)
			}
			line := fmt.Sprintf("%-22s runs %2d clean %2d  addresses with two owners %d  creates/run %4d  retried writes/run %3d  leaked/run %.1f",
				v, n, clean, doubles, created/n, retried/n, float64(leaked)/float64(n))
			summary = append(summary, line)
			b.ReportMetric(float64(clean), "clean-runs")
			b.ReportMetric(float64(doubles), "double-owned")
		})
	}
	fmt.Println("summary:")
	for _, l := range summary {
		fmt.Println("  " + l)
	}
}
