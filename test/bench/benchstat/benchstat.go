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

// Pair is the p50 and p99 (ms) of two sets of latencies measured side by
// side, ours (A) against a baseline (B).
type Pair struct{ A50, A99, B50, B99 float64 }

// Ratio50 and Ratio99 are A / B.
func (p Pair) Ratio50() float64 { return p.A50 / p.B50 }
func (p Pair) Ratio99() float64 { return p.A99 / p.B99 }

// Metrics is what a benchmark reports (testing.B.ReportMetric).
type Metrics interface{ ReportMetric(n float64, unit string) }

// ReportPair reports the p50 and p99 of a (as "<nameA>-ms-p50" …) and b,
// and the ratios "ratio-p50" and "ratio-p99", and returns them.
func ReportPair(m Metrics, nameA string, a []time.Duration, nameB string, b []time.Duration) Pair {
	p := Pair{A50: PercentileMs(a, 50), A99: PercentileMs(a, 99), B50: PercentileMs(b, 50), B99: PercentileMs(b, 99)}
	m.ReportMetric(p.A50, nameA+"-ms-p50")
	m.ReportMetric(p.A99, nameA+"-ms-p99")
	m.ReportMetric(p.B50, nameB+"-ms-p50")
	m.ReportMetric(p.B99, nameB+"-ms-p99")
	m.ReportMetric(p.Ratio50(), "ratio-p50")
	m.ReportMetric(p.Ratio99(), "ratio-p99")
	return p
}
