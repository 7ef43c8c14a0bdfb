package objdbtest

import (
	"context"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/contiv/netplugin/objdb"
)

// BenchCAS measures contended compare-and-swap increments per second:
// 32 goroutines over two clients incrementing one key.
func BenchCAS(b *testing.B, be Backend, s Server) {
	ctx := context.Background()
	root := UniqueRoot(b)
	clients := []objdb.Store{Open(b, be, s.Endpoint, root), Open(b, be, s.Endpoint, root)}
	const workers = 32
	n := b.N/workers + 1
	b.ResetTimer()
	start := time.Now()
	got, err := casIncrements(ctx, clients, "bench/counter", workers, n)
	if err != nil {
		b.Fatal(err)
	}
	el := time.Since(start)
	if got != workers*n {
		b.Fatalf("counter %d, want %d", got, workers*n)
	}
	b.ReportMetric(float64(got)/el.Seconds(), "incr/s")
}

// BenchWatchLatency measures the time from a Put returning to the watcher
// receiving its event, one write at a time.
func BenchWatchLatency(b *testing.B, be Backend, s Server) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root := UniqueRoot(b)
	w := Open(b, be, s.Endpoint, root)
	st := Open(b, be, s.Endpoint, root)
	ch, err := w.Watch(ctx, "lat/")
	if err != nil {
		b.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		key := "lat/" + strconv.Itoa(i)
		start := time.Now()
		if _, err := st.Put(ctx, key, []byte("v")); err != nil {
			b.Fatal(err)
		}
		for {
			select {
			case ev := <-ch:
				if ev.Err != nil {
					b.Fatal(ev.Err)
				}
				if ev.Key != key {
					continue
				}
			case <-time.After(10 * time.Second):
				b.Fatalf("no event for %s", key)
			}
			break
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
