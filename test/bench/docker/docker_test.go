// Package docker benchmarks the Docker front end on the simulated cluster
// with real engines: time from "docker run" to the container's first
// successful ping of a container on another host (contiv network), against
// the same engine's bridge network (a container on the same host) in the
// same run, and 30 containers started concurrently on one host.
//
//	flock /tmp/contiv-nettest.lock go test ./test/bench/docker -run '^$' -bench . -benchtime 1x
package docker

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contiv/netplugin/test/bench/benchstat"
	"github.com/contiv/netplugin/test/testbed"
)

const (
	latencyRuns    = 30 // containers measured to first ping, per network
	concurrentRuns = 30 // containers started at once
)

func BenchmarkDockerRun(b *testing.B) {
	tb := testbed.New(b, testbed.Config{Hosts: 2, Docker: true})
	h0, h1 := tb.Hosts[0], tb.Hosts[1]
	if out, err := tb.Netctl("net", "create", "--subnet", "198.19.64.0/20", "--gateway", "198.19.79.254", "bench"); err != nil {
		b.Fatalf("net create: %v\n%s", err, out)
	}
	for _, h := range tb.Hosts {
		waitNetwork(b, h, "bench")
	}
	// The engine's own bridge driver (no iptables), for comparison.
	if _, err := h0.Docker("network", "create", "-d", "bridge", "--subnet", "198.19.96.0/20", "benchbr"); err != nil {
		b.Fatal(err)
	}
	contivTarget := start(b, h1, "target", "bench")
	bridgeTarget := start(b, h0, "brtarget", "benchbr")

	for i := 0; i < b.N; i++ {
		b.Run("first-ping", func(b *testing.B) {
			var contiv, bridge []time.Duration
			for j := 0; j < latencyRuns; j++ {
				contiv = append(contiv, runToPing(b, h0, fmt.Sprintf("c%d-%d", i, j), "bench", contivTarget))
				bridge = append(bridge, runToPing(b, h0, fmt.Sprintf("b%d-%d", i, j), "benchbr", bridgeTarget))
			}
			b.ReportMetric(benchstat.PercentileMs(contiv, 50), "ms-contiv-p50")
			b.ReportMetric(benchstat.PercentileMs(contiv, 99), "ms-contiv-p99")
			b.ReportMetric(benchstat.PercentileMs(bridge, 50), "ms-bridge-p50")
			b.ReportMetric(benchstat.PercentileMs(bridge, 99), "ms-bridge-p99")
			b.ReportMetric(benchstat.PercentileMs(contiv, 50)/benchstat.PercentileMs(bridge, 50), "ratio-p50")
		})
		b.Run("concurrent", func(b *testing.B) {
			var wg sync.WaitGroup
			var mu sync.Mutex
			var failures []string
			t0 := time.Now()
			for j := 0; j < concurrentRuns; j++ {
				wg.Go(func() {
					name := fmt.Sprintf("k%d-%d", i, j)
					if _, err := h1.Docker("run", "-d", "--name", name, "--network", "bench", testbed.BusyboxImage, "sleep", "3600"); err != nil {
						mu.Lock()
						failures = append(failures, err.Error())
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			total := time.Since(t0)
			for _, f := range failures {
				b.Log(f)
			}
			b.ReportMetric(total.Seconds(), "s-total")
			b.ReportMetric(float64(len(failures)), "failures")
		})
	}
}

// waitNetwork waits until the engine of h has the docker network.
func waitNetwork(b *testing.B, h *testbed.Host, name string) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		if out, err := h.Docker("network", "ls", "--format", "{{.Name}}"); err == nil && slices.Contains(strings.Fields(out), name) {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("docker network %s not on %s", name, h.Name)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// start runs a container and returns its address on network.
func start(b *testing.B, h *testbed.Host, name, network string) string {
	if _, err := h.Docker("run", "-d", "--name", name, "--network", network, testbed.BusyboxImage, "sleep", "3600"); err != nil {
		b.Fatal(err)
	}
	ip, err := h.DockerIP(name, network)
	if err != nil {
		b.Fatal(err)
	}
	return ip
}

// runToPing starts a container on network and pings target from its
// namespace (every 10 ms until the first reply); it returns the time from
// docker run to that reply.
func runToPing(b *testing.B, h *testbed.Host, name, network, target string) time.Duration {
	t0 := time.Now()
	if _, err := h.Docker("run", "-d", "--name", name, "--network", network, testbed.BusyboxImage, "sleep", "3600"); err != nil {
		b.Fatal(err)
	}
	pid, err := h.Docker("inspect", "-f", "{{.State.Pid}}", name)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "nsenter", "--net=/proc/"+pid+"/ns/net", "ping", "-n", "-c", "1", "-i", "0.01", "-w", "20", target).CombinedOutput()
	if err != nil {
		b.Fatalf("%s never reached %s: %v\n%s", name, target, err, out)
	}
	return time.Since(t0)
}
