package benchstat

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- { // unsorted input
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    int
		want time.Duration
	}{{0, time.Millisecond}, {1, time.Millisecond}, {50, 50 * time.Millisecond}, {99, 99 * time.Millisecond}, {100, 100 * time.Millisecond}} {
		if got := Percentile(ds, c.p); got != c.want {
			t.Errorf("p%d = %v, want %v", c.p, got, c.want)
		}
	}
	if ds[0] != 100*time.Millisecond {
		t.Fatal("Percentile must not reorder its input")
	}
	if got := PercentileMs([]time.Duration{1500 * time.Microsecond}, 99); got != 1.5 {
		t.Fatalf("PercentileMs = %v, want 1.5", got)
	}
	if Percentile(nil, 50) != 0 {
		t.Fatal("no samples must give 0")
	}
}

type metrics map[string]float64

func (m metrics) ReportMetric(n float64, unit string) { m[unit] = n }

func TestReportPair(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var out []time.Duration
		for _, x := range v {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	m := metrics{}
	p := ReportPair(m, "ours", ms(10, 20, 30), "base", ms(5, 10, 20))
	want := metrics{"ours-ms-p50": 20, "ours-ms-p99": 30, "base-ms-p50": 10, "base-ms-p99": 20, "ratio-p50": 2, "ratio-p99": 1.5}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	if p.Ratio50() != 2 || p.Ratio99() != 1.5 || len(m) != len(want) {
		t.Errorf("pair %+v, metrics %v", p, m)
	}
}
