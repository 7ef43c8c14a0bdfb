package ofctrl

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// BenchmarkInstall compares the install rate of our controller (InstallFlows: batched
// flow mods with windowed barriers, returning after the last barrier reply) with
// `ovs-ofctl -O OpenFlow13 --bundle add-flows BRIDGE FILE` of the same flows written in
// ovs-ofctl syntax, on the same netdev bridge. Every iteration runs both, alternately,
// each on an empty flow table, so that both see the same machine load and the same
// ovs-vswitchd history; the figures are the medians over the iterations. Run:
//
//	go test -run '^$' -bench Install -benchtime 5x ./ofnet/ofctrl/
//
// Metrics: ofctrl-flows/s, ofctl-flows/s and ratio (ofctrl / ovs-ofctl, target ≥ 0.8).
func BenchmarkInstall(b *testing.B) {
	// Generous keep-alive: deleting or dumping 100 000 flows keeps ovs-vswitchd's main
	// thread busy for seconds on a loaded machine, and a reconnect would spoil a figure.
	e := startEnv(b, func(c *Config) { c.EchoInterval, c.DeadTimeout = 5*time.Second, 30*time.Second })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	groups := testGroups(25)
	if err := e.sw.InstallGroups(ctx, groups...); err != nil {
		b.Fatal(err)
	}
	clear := func(b *testing.B) {
		b.Helper()
		if err := e.sw.DeleteFlowsByCookie(ctx, 0, 0); err != nil {
			b.Fatal(err)
		}
		e.checkNoDisconnect(b)
		if got := e.ofctlFlows(b); len(got) != 0 {
			b.Fatalf("%d flows left after clearing", len(got))
		}
	}
	for _, n := range []int{10000, 100000} {
		flows := testFlows(n, 0x5000000, groups)
		var file strings.Builder
		for _, f := range flows {
			file.WriteString(f.String())
			file.WriteByte('\n')
		}
		path := filepath.Join(e.ovs.Dir, fmt.Sprintf("flows-%d.txt", n))
		if err := os.WriteFile(path, []byte(file.String()), 0o644); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("flows=%d", n), func(b *testing.B) {
			b.StopTimer()
			var ours, theirs []float64
			for i := 0; i < b.N; i++ {
				clear(b)
				start := time.Now()
				if err := e.sw.InstallFlows(ctx, flows...); err != nil {
					b.Fatal(err)
				}
				ours = append(ours, float64(n)/time.Since(start).Seconds())
				e.checkNoDisconnect(b)
				if got := e.ofctlFlows(b); len(got) != n {
					b.Fatalf("after InstallFlows ovs-ofctl dump-flows shows %d flows, want %d", len(got), n)
				}

				clear(b)
				start = time.Now()
				if out, err := e.ovs.Ofctl("-O", "OpenFlow13", "--bundle", "add-flows", e.bridge, path); err != nil {
					b.Fatalf("ovs-ofctl --bundle add-flows: %v: %s", err, out)
				}
				theirs = append(theirs, float64(n)/time.Since(start).Seconds())
				e.checkNoDisconnect(b) // a reconnect's Resync would remove these flows
				if got := e.ofctlFlows(b); len(got) != n {
					b.Fatalf("after ovs-ofctl add-flows dump-flows shows %d flows, want %d", len(got), n)
				}
			}
			mo, mt := median(ours), median(theirs)
			b.ReportMetric(mo, "ofctrl-flows/s")
			b.ReportMetric(mt, "ofctl-flows/s")
			b.ReportMetric(mo/mt, "ratio")
			b.Logf("%d flows: ofctrl %s, ovs-ofctl --bundle %s (flows/s per iteration)", n, rates(ours), rates(theirs))
		})
	}
	clear(b) // leave the record consistent with the bridge for the teardown
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func rates(v []float64) string {
	parts := make([]string, len(v))
	for i, r := range v {
		parts[i] = fmt.Sprintf("%.0f", r)
	}
	return strings.Join(parts, " ")
}
