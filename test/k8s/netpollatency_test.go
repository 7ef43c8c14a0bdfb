package k8s

import (
	"testing"
	"time"
)

func TestNetpolApplyLatencies(t *testing.T) {
	logs := `time="2026-11-29T21:00:00.000000Z" level=info msg="networkpolicy applied" api=networkpolicy latency=5ms pods=1
time="2026-11-29T21:00:01.500000Z" level=info msg="networkpolicy applied" api=networkpolicy latency=12.5ms pods=2
time="2026-11-29T21:00:02.000000Z" level=info msg="attach done" latency=900ms
time="2026-11-29T21:00:03.000000Z" level=info msg="networkpolicy applied" api=networkpolicy latency=1.2s pods=3
time="2026-11-29T21:00:04.000000Z" level=info msg="networkpolicy applied" api=networkpolicy latency="850µs" pods=3`
	since := time.Date(2026, 11, 29, 21, 0, 1, 0, time.UTC)
	got := netpolApplyLatencies(logs, since)
	want := []time.Duration{12500 * time.Microsecond, 1200 * time.Millisecond, 850 * time.Microsecond}
	if len(got) != len(want) {
		t.Fatalf("latencies %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("latencies %v, want %v", got, want)
		}
	}
	if s := latencySummary(got); s != "p50 12.5ms p99 1.2s max 1.2s" {
		t.Fatalf("summary %q", s)
	}
	if s := latencySummary(nil); s != "none" {
		t.Fatalf("summary of none %q", s)
	}
}
