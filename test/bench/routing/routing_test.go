// Package routing benchmarks VLAN routing with BGP against bird2: the time
// from a container's attach to its /32 at the router (p50/p99, on the
// simulated cluster), and how long the router takes to hold 1000 endpoint
// routes announced by netplugin's speaker (netplugin/bgp).
//
//	flock /tmp/contiv-nettest.lock go test ./test/bench/routing -run '^$' -bench . -benchtime 1x
package routing

import (
	"bufio"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/api/attach"
	"github.com/contiv/netplugin/netplugin/bgp"
	"github.com/contiv/netplugin/test/bench/benchstat"
	"github.com/contiv/netplugin/test/testbed"
)

const attachRuns = 30

// BenchmarkAttachToRoute: attach → the container's /32 in bird's table.
func BenchmarkAttachToRoute(b *testing.B) {
	tb := testbed.New(b, testbed.Config{Hosts: 1, NetMode: "vlan", FwdMode: "routing"})
	r := tb.StartRouter(b)
	h := tb.Hosts[0]
	for _, args := range [][]string{
		{"net", "create", "--encap", "vlan", "--subnet", "198.19.16.0/20", "--gateway", "198.19.31.254", "bench"},
		{"bgp", "create", h.Name, "--router-ip", testbed.RouterPeerIP(0) + "/24", "--as", strconv.Itoa(testbed.HostAS(0)),
			"--neighbor-as", strconv.Itoa(testbed.RouterAS), "--neighbor", testbed.RouterIP},
	} {
		if out, err := tb.Netctl(args...); err != nil {
			b.Fatalf("netctl %v: %v\n%s", args, err, out)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for !r.SessionUp(h) {
		if time.Now().After(deadline) {
			b.Fatalf("BGP session not up:\n%s", r.Logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
	for i := 0; i < b.N; i++ {
		var took []time.Duration
		for j := 0; j < attachRuns; j++ {
			c := h.NewContainerNS(b, fmt.Sprintf("a%d-%d", i, j))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			start := time.Now()
			res, err := attach.NewClient(h.AttachSocket()).Attach(ctx, attach.Request{Tenant: "default", Network: "bench",
				ContainerID: c.Name, NetNS: c.NSPath()})
			cancel()
			if err != nil {
				b.Fatalf("attach: %v", err)
			}
			prefix := strings.Split(res.IPAddress, "/")[0] + "/32"
			for {
				if ok, _, _ := r.HasRoute(prefix); ok {
					break
				}
				if time.Since(start) > 10*time.Second {
					b.Fatalf("%s not at the router after 10 s", prefix)
				}
				time.Sleep(5 * time.Millisecond)
			}
			took = append(took, time.Since(start))
		}
		b.ReportMetric(benchstat.PercentileMs(took, 50), "ms-attach-to-route-p50")
		b.ReportMetric(benchstat.PercentileMs(took, 99), "ms-attach-to-route-p99")
	}
}

const (
	helperEnv   = "CONTIV_ROUTING_BENCH_SPEAKER"
	routeCount  = 1000
	benchRouter = "198.18.60.1"
	benchHost   = "198.18.60.2"
)

// TestSpeakerHelper is the speaker side of BenchmarkAnnounce1000, run in its
// own namespace by the benchmark; it does nothing otherwise.
func TestSpeakerHelper(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(helperEnv))
	if n == 0 {
		return // not called by the benchmark
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	log := logrus.New()
	log.SetLevel(logrus.ErrorLevel)
	sp, err := bgp.Start(ctx, bgp.Config{RouterIP: netip.MustParsePrefix(benchHost + "/24"), AS: 65001,
		Neighbor: netip.MustParseAddr(benchRouter), NeighborAS: 65000}, bgp.Options{}, bgp.Events{}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Stop()
	for ctx.Err() == nil {
		if st := sp.State(ctx); len(st.Neighbors) == 1 && st.Neighbors[0].State == "ESTABLISHED" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Println("start")
	base := netip.MustParseAddr("198.19.64.0").As4()
	for i := 0; i < n; i++ {
		a := base
		a[2] += byte(i >> 8)
		a[3] = byte(i)
		if err := sp.Announce(ctx, netip.AddrFrom4(a)); err != nil {
			t.Fatal(err)
		}
	}
	fmt.Println("announced")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until the benchmark is done
}

var routeCountRE = regexp.MustCompile(`(\d+) of \d+ routes`)

func run(b *testing.B, name string, args ...string) string {
	b.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		b.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}

// BenchmarkAnnounce1000: time from the first of 1000 announcements by
// netplugin's speaker to all 1000 routes in bird's table. Two namespaces of
// its own (router and speaker) joined by a veth in 198.18.60.0/24.
func BenchmarkAnnounce1000(b *testing.B) {
	bird, err := exec.LookPath("bird")
	if err != nil {
		b.Fatalf("bird (Debian bird2): %v", err)
	}
	prefix := fmt.Sprintf("rtb%d", os.Getpid()%100000)
	rns, sns := prefix+"r", prefix+"s"
	dir := b.TempDir()
	b.Cleanup(func() {
		for _, ns := range []string{rns, sns} {
			if out, err := exec.Command("ip", "netns", "pids", ns).Output(); err == nil {
				for _, p := range strings.Fields(string(out)) {
					if pid, err := strconv.Atoi(p); err == nil {
						syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			}
			exec.Command("ip", "netns", "del", ns).Run()
		}
	})
	for _, ns := range []string{rns, sns} {
		run(b, "ip", "netns", "add", ns)
		run(b, "ip", "-n", ns, "link", "set", "lo", "up")
	}
	run(b, "ip", "-n", rns, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns", sns)
	for ns, ip := range map[string]string{rns: benchRouter, sns: benchHost} {
		run(b, "ip", "-n", ns, "addr", "add", ip+"/24", "dev", "eth0")
		run(b, "ip", "-n", ns, "link", "set", "eth0", "up")
	}
	conf := filepath.Join(dir, "bird.conf")
	sock := filepath.Join(dir, "bird.ctl")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("router id %s;\nprotocol device {}\n"+
		"protocol bgp host { local %s as 65000; neighbor %s as 65001; ipv4 { import all; export none; }; }\n",
		benchRouter, benchRouter, benchHost)), 0o644); err != nil {
		b.Fatal(err)
	}
	birdCmd := exec.Command("ip", "netns", "exec", rns, bird, "-f", "-c", conf, "-s", sock)
	birdCmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := birdCmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { birdCmd.Process.Kill(); birdCmd.Wait() }()

	for i := 0; i < b.N; i++ {
		helper := exec.Command("ip", "netns", "exec", sns, os.Args[0], "-test.run", "^TestSpeakerHelper$", "-test.v")
		helper.Env = append(os.Environ(), helperEnv+"="+strconv.Itoa(routeCount))
		helper.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		stdin, _ := helper.StdinPipe()
		stdout, _ := helper.StdoutPipe()
		helper.Stderr = os.Stderr
		if err := helper.Start(); err != nil {
			b.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		var start time.Time
		for sc.Scan() {
			if sc.Text() == "start" {
				start = time.Now()
				break
			}
		}
		if start.IsZero() {
			b.Fatal("the speaker never reached Established")
		}
		got := 0
		for time.Since(start) < 60*time.Second {
			out, _ := exec.Command("birdc", "-s", sock, "show", "route", "count").CombinedOutput()
			if m := routeCountRE.FindStringSubmatch(string(out)); m != nil {
				got, _ = strconv.Atoi(m[1])
			}
			if got >= routeCount {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		took := time.Since(start)
		stdin.Close()
		helper.Wait()
		if got < routeCount {
			b.Fatalf("router holds %d of %d routes after 60 s", got, routeCount)
		}
		b.ReportMetric(float64(took.Milliseconds()), "ms-1000-routes-at-router")
	}
}
