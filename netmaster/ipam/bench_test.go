package ipam_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/contiv/netplugin/netmaster/ipam"
	"github.com/contiv/netplugin/objdb/objdbtest"
)

// benchPool creates a pool for a benchmark. The /8 has its first 1M
// addresses (256 chunks) taken already, so the lowest free address sits
// deep in the pool; the allocator used for timing is a fresh one that
// finds it through the stored hint.
func benchPool(b testing.TB, s *store, root, bits string) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	setup := ipam.NewV4(s.client(b, root))
	defer setup.Close()
	switch bits {
	case "24":
		if _, err := setup.CreatePool(ctx, "p", "10.1.1.0/24", ipam.WithGateway("10.1.1.254")); err != nil {
			b.Fatal(err)
		}
	case "8":
		if _, err := setup.CreatePool(ctx, "p", "10.0.0.0/8", ipam.WithGateway("10.255.255.254")); err != nil {
			b.Fatal(err)
		}
		if _, err := setup.CreateSubPool(ctx, "p", "fill", "10.0.0.1-10.15.255.255"); err != nil {
			b.Fatal(err)
		}
	}
}

// runParallel runs op b.N times over c goroutines and reports ops/s.
func runParallel(b *testing.B, c int, unit string, op func(ctx context.Context) error) {
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, c)
	b.ResetTimer()
	start := time.Now()
	for g := range c {
		n := b.N / c
		if g < b.N%c {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				if err := op(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/el.Seconds(), unit)
}

// BenchmarkAllocRelease: one op = allocate the lowest free address and
// release it, on embedded etcd.
//
//	go test -run '^$' -bench AllocRelease -benchtime 3000x ./netmaster/ipam
func BenchmarkAllocRelease(b *testing.B) {
	s := newStore(b)
	for _, bits := range []string{"24", "8"} {
		for _, c := range []int{1, 16} {
			b.Run(fmt.Sprintf("slash%s/c%d", bits, c), func(b *testing.B) {
				root := objdbtest.UniqueRoot(b)
				benchPool(b, s, root, bits)
				a := ipam.NewV4(s.client(b, root))
				defer a.Close()
				runParallel(b, c, "pairs/s", func(ctx context.Context) error {
					addr, err := a.Allocate(ctx, "p")
					if err != nil {
						return err
					}
					_, err = a.Release(ctx, "p", addr)
					return err
				})
			})
		}
	}
}

// BenchmarkAllocate: one op = allocate the lowest free address (the pool
// fills up), on embedded etcd.
//
//	go test -run '^$' -bench 'Allocate$' -benchtime 4000x ./netmaster/ipam
func BenchmarkAllocate(b *testing.B) {
	s := newStore(b)
	for _, bits := range []string{"8"} {
		for _, c := range []int{1, 16} {
			b.Run(fmt.Sprintf("slash%s/c%d", bits, c), func(b *testing.B) {
				root := objdbtest.UniqueRoot(b)
				benchPool(b, s, root, bits)
				a := ipam.NewV4(s.client(b, root))
				defer a.Close()
				runParallel(b, c, "allocs/s", func(ctx context.Context) error {
					_, err := a.Allocate(ctx, "p")
					return err
				})
			})
		}
	}
}

// BenchmarkStorePut is the reference: plain 600-byte Puts of one key per
// goroutine on the same embedded etcd (what one chunk write costs).
//
//	go test -run '^$' -bench StorePut -benchtime 3000x ./netmaster/ipam
func BenchmarkStorePut(b *testing.B) {
	s := newStore(b)
	for _, c := range []int{1, 16} {
		b.Run(fmt.Sprintf("c%d", c), func(b *testing.B) {
			kv := s.client(b, objdbtest.UniqueRoot(b))
			val := make([]byte, 600)
			var mu sync.Mutex
			next := 0
			runParallel(b, c, "puts/s", func(ctx context.Context) error {
				mu.Lock()
				next++
				k := fmt.Sprintf("k%d", next%c)
				mu.Unlock()
				_, err := kv.Put(ctx, k, val)
				return err
			})
		})
	}
}

// BenchmarkSlash8VsSlash24 alternates allocate+release pairs on a /24 and
// on a /8 (1M addresses taken) from the same goroutines, so both see the
// same store load, and reports the mean latency of each and their ratio.
//
//	go test -run '^$' -bench Slash8VsSlash24 -benchtime 2000x ./netmaster/ipam
func BenchmarkSlash8VsSlash24(b *testing.B) {
	s := newStore(b)
	for _, c := range []int{1, 16} {
		b.Run(fmt.Sprintf("c%d", c), func(b *testing.B) {
			root24, root8 := objdbtest.UniqueRoot(b), objdbtest.UniqueRoot(b)+"8"
			benchPool(b, s, root24, "24")
			benchPool(b, s, root8, "8")
			a24 := ipam.NewV4(s.client(b, root24))
			defer a24.Close()
			a8 := ipam.NewV4(s.client(b, root8))
			defer a8.Close()
			pair := func(ctx context.Context, a *ipam.V4) (time.Duration, error) {
				start := time.Now()
				addr, err := a.Allocate(ctx, "p")
				if err != nil {
					return 0, err
				}
				_, err = a.Release(ctx, "p", addr)
				return time.Since(start), err
			}
			var mu sync.Mutex
			var t24, t8 time.Duration
			i := 0
			runParallel(b, c, "pairs/s", func(ctx context.Context) error {
				mu.Lock()
				i++
				first8 := i%2 == 0
				mu.Unlock()
				order := []*ipam.V4{a24, a8}
				if first8 {
					order = []*ipam.V4{a8, a24}
				}
				var d [2]time.Duration
				for k, a := range order {
					var err error
					if d[k], err = pair(ctx, a); err != nil {
						return err
					}
				}
				if first8 {
					d[0], d[1] = d[1], d[0]
				}
				mu.Lock()
				t24 += d[0]
				t8 += d[1]
				mu.Unlock()
				return nil
			})
			b.ReportMetric(float64(t24.Microseconds())/float64(b.N), "µs/pair-24")
			b.ReportMetric(float64(t8.Microseconds())/float64(b.N), "µs/pair-8")
			b.ReportMetric(float64(t8)/float64(t24), "ratio-8/24")
		})
	}
}

// BenchmarkCPUOnly is the allocator's own cost per allocate+release pair
// on an in-memory KV (no store latency): /24 against a /8 with 1M
// addresses taken.
//
//	go test -run '^$' -bench CPUOnly ./netmaster/ipam
func BenchmarkCPUOnly(b *testing.B) {
	for _, bits := range []string{"24", "8"} {
		b.Run("slash"+bits, func(b *testing.B) {
			ctx := context.Background()
			kv := newMemKV()
			a := ipam.NewV4(kv)
			defer a.Close()
			subnet := map[string]string{"24": "10.1.1.0/24", "8": "10.0.0.0/8"}[bits]
			if _, err := a.CreatePool(ctx, "p", subnet); err != nil {
				b.Fatal(err)
			}
			if bits == "8" {
				if _, err := a.CreateSubPool(ctx, "p", "fill", "10.0.0.1-10.15.255.255"); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for range b.N {
				addr, err := a.Allocate(ctx, "p")
				if err != nil {
					b.Fatal(err)
				}
				if _, err := a.Release(ctx, "p", addr); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
