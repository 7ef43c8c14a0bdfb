// Package benchstat holds the statistics the benchmarks under test/bench
// report: one nearest-rank percentile for every latency figure.
package benchstat

import (
	"slices"
	"time"
)

// Percentile is the p-th percentile (0..100) of ds by nearest rank: the
// smallest sample with at least p% of the samples at or below it. It is 0
// for no samples; ds is not changed.
func Percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p+99)/100 - 1
	return s[max(0, min(i, len(s)-1))]
}

// PercentileMs is Percentile in milliseconds, with microsecond resolution.
func PercentileMs(ds []time.Duration, p int) float64 {
	return float64(Percentile(ds, p).Microseconds()) / 1000
}
