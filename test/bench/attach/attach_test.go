// Package attach benchmarks the endpoint attach path on the simulated
// cluster: time from the attach API call to the container's first
// successful ping of a container on another host, and endpoints attached
// per second on one host.
//
//	go test ./test/bench/attach -run '^$' -bench . -benchtime 1x
package attach

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contiv/netplugin/api/attach"
	"github.com/contiv/netplugin/test/bench/benchstat"
	"github.com/contiv/netplugin/test/testbed"
)

const (
	latencyRuns = 50 // attaches measured to first ping
	rateRuns    = 48 // attaches measured for the rate
	rateWorkers = 8
)

func BenchmarkAttach(b *testing.B) {
	tb := testbed.New(b, testbed.Config{Hosts: 2, NetMode: "vlan", FwdMode: "bridge"})
	if out, err := tb.Netctl("net", "create", "--encap", "vxlan", "--subnet", "198.19.16.0/20", "--gateway", "198.19.31.254", "bench"); err != nil {
		b.Fatalf("net create: %v\n%s", err, out)
	}
	h0, h1 := tb.Hosts[0], tb.Hosts[1]
	target := h1.NewContainerNS(b, "target")
	res := attachOne(b, h1, target, "target")
	targetIP := strings.Split(res.IPAddress, "/")[0]

	for i := 0; i < b.N; i++ {
		b.Run("first-ping", func(b *testing.B) {
			var toPing, toAttach []time.Duration
			for j := 0; j < latencyRuns; j++ {
				c := h0.NewContainerNS(b, fmt.Sprintf("l%d-%d", i, j))
				start := time.Now()
				attachOne(b, h0, c, c.Name)
				toAttach = append(toAttach, time.Since(start))
				// One reply ends ping; requests every 10 ms until then.
				out, err := exec.Command("ip", "netns", "exec", c.NS, "ping", "-n", "-c", "1", "-i", "0.01", "-w", "20", targetIP).CombinedOutput()
				if err != nil {
					b.Fatalf("%s never reached %s: %v\n%s", c.Name, targetIP, err, out)
				}
				toPing = append(toPing, time.Since(start))
			}
			b.ReportMetric(benchstat.PercentileMs(toPing, 50), "ms-to-ping-p50")
			b.ReportMetric(benchstat.PercentileMs(toPing, 99), "ms-to-ping-p99")
			b.ReportMetric(benchstat.PercentileMs(toAttach, 50), "ms-attach-p50")
			b.ReportMetric(benchstat.PercentileMs(toAttach, 99), "ms-attach-p99")
		})
		b.Run("rate", func(b *testing.B) {
			cs := make([]*testbed.Container, rateRuns)
			for j := range cs {
				cs[j] = h0.NewContainerNS(b, fmt.Sprintf("r%d-%d", i, j))
			}
			next := make(chan *testbed.Container, len(cs))
			for _, c := range cs {
				next <- c
			}
			close(next)
			var wg sync.WaitGroup
			start := time.Now()
			for w := 0; w < rateWorkers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for c := range next {
						attachOne(b, h0, c, c.Name)
					}
				}()
			}
			wg.Wait()
			el := time.Since(start)
			b.ReportMetric(float64(len(cs))/el.Seconds(), "attaches/s")
		})
	}
}

func attachOne(b testing.TB, h *testbed.Host, c *testbed.Container, name string) attach.Result {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := attach.NewClient(h.AttachSocket()).Attach(ctx, attach.Request{Tenant: "default", Network: "bench",
		ContainerID: "bench-" + name, Name: name, NetNS: c.NSPath()})
	if err != nil {
		b.Errorf("attach %s: %v", name, err)
	}
	return res
}
