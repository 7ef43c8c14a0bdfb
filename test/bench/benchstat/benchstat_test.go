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
