// Package nodescale benchmarks the dataplane of one host filling up: it
// attaches N endpoints (default 300) to one host one at a time through
// netplugin's attach API, then 100 more with 8 clients, and in the same run
// does the same port-and-flow work with plain Open vSwitch on a second,
// private OVS instance (veth pair with the container side in its own
// namespace, up with an address; ovs-vsctl add-port; one ovs-ofctl
// add-flow), interleaved with the attaches so both see the same load. It
// reports p50/p99 per 50-endpoint bucket for both, the ratio of the p50s,
// failures, the memory of netplugin, netmaster and ovs-vswitchd, the CPU
// time ovs-vswitchd spent, its long poll interval warnings, and the
// embedded store's disk use against its database size. Then it detaches
// every endpoint again, one at a time and last first, each followed by the
// plain-OVS undo (del-flows, del-port, veth deleted), and reports those
// per bucket of the port count too (-nodescale.detach=false skips that).
//
// Every run starts its own simulated cluster, so hold the shared lock:
//
//	flock /tmp/contiv-nettest.lock go test ./test/bench/nodescale -run '^$' -bench . -benchtime 1x -timeout 60m \
//	    -args -nodescale.n 300 -nodescale.extra 100 -nodescale.clients 8
package nodescale

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/contiv/netplugin/api/attach"
	"github.com/contiv/netplugin/test/bench/benchstat"
	"github.com/contiv/netplugin/test/ovstest"
	"github.com/contiv/netplugin/test/testbed"
)

var (
	serialN = flag.Int("nodescale.n", 300, "endpoints attached one at a time")
	extraN  = flag.Int("nodescale.extra", 100, "endpoints attached afterwards by concurrent clients")
	clients = flag.Int("nodescale.clients", 8, "concurrent clients of the second phase")
	bucket  = flag.Int("nodescale.bucket", 50, "endpoints per reported bucket")
	detach  = flag.Bool("nodescale.detach", true, "detach every endpoint again, one at a time, last first")
	hosts   = flag.Int("nodescale.hosts", 2, "hosts of the cluster: endpoints go to the first, the others are VXLAN peers")
)

const (
	subnet  = "198.19.0.0/16"
	gateway = "198.19.255.254"
	// plainSubnet addresses the plain-OVS containers (198.18.128.0/17).
	plainPrefix = "198.18."
)

func BenchmarkNodeScale(b *testing.B) {
	if *serialN < 1 || *extraN < 0 || *clients < 1 || *bucket < 1 || *hosts < 1 {
		b.Fatalf("bad flags: n=%d extra=%d clients=%d bucket=%d", *serialN, *extraN, *clients, *bucket)
	}
	if *serialN+*extraN > 32000 {
		b.Fatalf("n+extra %d is more than the plain subnet holds", *serialN+*extraN)
	}
	for i := 0; i < b.N; i++ {
		runOnce(b)
	}
}

// logf prints a line of the report: go test keeps only the first lines of
// a benchmark's log.
func logf(format string, args ...any) {
	fmt.Printf("nodescale: "+format+"\n", args...)
}

// sample is one attach, ours or plain.
type sample struct {
	n   int // 1-based attach number
	d   time.Duration
	err error
}

func runOnce(b *testing.B) {
	tb := testbed.New(b, testbed.Config{Hosts: *hosts, NetMode: "vlan", FwdMode: "bridge"})
	if out, err := tb.Netctl("net", "create", "--encap", "vxlan", "--subnet", subnet, "--gateway", gateway, "scale"); err != nil {
		b.Fatalf("net create: %v\n%s", err, out)
	}
	h := tb.Hosts[0]
	// One endpoint on every peer, as on a cluster in use: the host then
	// has a tunnel to each peer.
	for _, peer := range tb.Hosts[1:] {
		c := peer.NewContainerNS(b, "peer"+strconv.Itoa(peer.Index))
		if err := attachOne(peer, c); err != nil {
			b.Fatalf("attach on peer %s: %v", peer.Name, err)
		}
	}
	plain := newPlain(b)
	vswitchdStart := cpuSeconds(vswitchdPid(h.OVS))
	plainStart := cpuSeconds(vswitchdPid(plain.ovs))

	total := *serialN + *extraN
	ours := make([]sample, 0, total)
	plains := make([]sample, 0, total)
	var mu sync.Mutex
	conts := map[int]*testbed.Container{} // attached ones, by number
	start := time.Now()
	one := func(n int) {
		c := h.NewContainerNS(b, "s"+strconv.Itoa(n))
		t0 := time.Now()
		err := attachOne(h, c)
		d := time.Since(t0)
		pc := h.NewContainerNS(b, "p"+strconv.Itoa(n))
		t1 := time.Now()
		perr := plain.attach(n, pc.NS)
		pd := time.Since(t1)
		mu.Lock()
		ours = append(ours, sample{n: n, d: d, err: err})
		plains = append(plains, sample{n: n, d: pd, err: perr})
		if err == nil {
			conts[n] = c
		}
		mu.Unlock()
	}
	for n := 1; n <= *serialN; n++ {
		one(n)
		if n%*bucket == 0 {
			logf("%d attached in %v", n, time.Since(start).Round(time.Second))
		}
	}
	next := make(chan int, *extraN)
	for n := *serialN + 1; n <= total; n++ {
		next <- n
	}
	close(next)
	var wg sync.WaitGroup
	for w := 0; w < *clients; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range next {
				one(n)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)

	report(b, ours, plains)
	var failed int
	for _, s := range ours {
		if s.err != nil {
			failed++
			if failed <= 5 {
				logf("attach %d failed after %v: %v", s.n, s.d.Round(time.Millisecond), s.err)
			}
		}
	}
	var plainFailed int
	for _, s := range plains {
		if s.err != nil {
			plainFailed++
			if plainFailed <= 3 {
				logf("plain attach %d failed: %v", s.n, s.err)
			}
		}
	}
	b.ReportMetric(float64(failed), "failures")
	b.ReportMetric(float64(plainFailed), "plain-failures")

	netpluginRSS := rssMB(h.NetpluginPid())
	netmasterRSS := rssMB(tb.Masters[0].Pid())
	vsRSS, plainRSS := rssMB(vswitchdPid(h.OVS)), rssMB(vswitchdPid(plain.ovs))
	vsCPU := cpuSeconds(vswitchdPid(h.OVS)) - vswitchdStart
	plainCPU := cpuSeconds(vswitchdPid(plain.ovs)) - plainStart
	dirMB, dbMB := dirSizeMB(tb.Masters[0].EtcdDir()), etcdDBMB(tb.Masters[0].EtcdDir())
	longPolls := countLines(filepath.Join(h.OVS.Dir, "ovs-vswitchd.log"), "Unreasonably long")
	plainLongPolls := countLines(filepath.Join(plain.ovs.Dir, "ovs-vswitchd.log"), "Unreasonably long")
	inBand := countLines(filepath.Join(h.OVS.Dir, "ovs-vswitchd.log"), "in_band")
	flows, _ := h.DumpFlows("contivVxlanBridge")
	logf("%d endpoints in %v; netplugin %.1f MB, netmaster %.1f MB, ovs-vswitchd %.1f MB (plain %.1f MB)",
		total, elapsed.Round(time.Second), netpluginRSS, netmasterRSS, vsRSS, plainRSS)
	logf("ovs-vswitchd CPU %.1f s (plain %.1f s), long poll warnings %d (plain %d), in_band lines %d, %d flows on contivVxlanBridge",
		vsCPU, plainCPU, longPolls, plainLongPolls, inBand, len(flows))
	logf("store: data dir %.1f MB for a %.1f MB database", dirMB, dbMB)
	b.ReportMetric(netpluginRSS, "netplugin-MB")
	b.ReportMetric(netmasterRSS, "netmaster-MB")
	b.ReportMetric(vsCPU, "vswitchd-cpu-s")
	b.ReportMetric(plainCPU, "plain-vswitchd-cpu-s")
	b.ReportMetric(dirMB, "store-dir-MB")
	b.ReportMetric(dbMB, "store-db-MB")
	if *detach {
		detachAll(b, h, plain, conts, total)
	}
}

// detachAll detaches endpoint total, total-1, ... 1 one at a time, each
// followed by the plain-OVS undo of the same number, and reports per
// bucket of the port count.
func detachAll(b *testing.B, h *testbed.Host, plain *plainOVS, conts map[int]*testbed.Container, total int) {
	var ours, plains []time.Duration
	var lines []string
	fails := 0
	flush := func(hi, lo int) {
		if len(ours) == 0 {
			return
		}
		lines = append(lines, fmt.Sprintf("%-22s %8.0fms %8.0fms %8.0fms %8.0fms %6.2fx",
			fmt.Sprintf("%d-%d ports", hi, lo), benchstat.PercentileMs(ours, 50), benchstat.PercentileMs(ours, 99), benchstat.PercentileMs(plains, 50), benchstat.PercentileMs(plains, 99), benchstat.PercentileMs(ours, 50)/benchstat.PercentileMs(plains, 50)))
		ours, plains = nil, nil
	}
	hi := total
	for n := total; n >= 1; n-- {
		if c, ok := conts[n]; ok {
			t0 := time.Now()
			if err := detachOne(h, c); err != nil {
				fails++
				if fails <= 3 {
					logf("detach %d failed: %v", n, err)
				}
			}
			ours = append(ours, time.Since(t0))
		}
		t1 := time.Now()
		if err := plain.detach(n); err != nil && fails < 3 {
			logf("plain detach %d failed: %v", n, err)
		}
		plains = append(plains, time.Since(t1))
		if (total-n+1)%*bucket == 0 {
			flush(hi, n)
			hi = n - 1
		}
	}
	flush(hi, 1)
	logf("detach time per bucket of the port count before the detach:\n%-22s %10s %10s %10s %10s %7s\n%s",
		"ports", "ours p50", "ours p99", "plain p50", "plain p99", "ratio", strings.Join(lines, "\n"))
	b.ReportMetric(float64(fails), "detach-failures")
}

func detachOne(h *testbed.Host, c *testbed.Container) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return attach.NewClient(h.AttachSocket()).Detach(ctx, attach.DetachRequest{Tenant: "default", Network: "scale",
		ContainerID: c.NS, NetNS: c.NSPath()})
}

// report logs the per-bucket table and reports the worst p50 ratio.
func report(b *testing.B, ours, plains []sample) {
	byN := func(s []sample) []sample {
		s = slices.Clone(s)
		slices.SortFunc(s, func(x, y sample) int { return x.n - y.n })
		return s
	}
	ours, plains = byN(ours), byN(plains)
	var lines []string
	lines = append(lines, fmt.Sprintf("%-22s %10s %10s %10s %10s %7s %6s", "attach", "ours p50", "ours p99", "plain p50", "plain p99", "ratio", "fail"))
	worst := 0.0
	type span struct{ lo, hi int }
	var spans []span
	for lo := 0; lo < *serialN; lo += *bucket {
		spans = append(spans, span{lo, min(lo+*bucket, *serialN)})
	}
	for lo := *serialN; lo < len(ours); lo += *bucket {
		spans = append(spans, span{lo, min(lo+*bucket, len(ours))})
	}
	for _, sp := range spans {
		lo, hi := sp.lo, sp.hi
		label := fmt.Sprintf("%d-%d", lo+1, hi)
		if lo >= *serialN {
			label += fmt.Sprintf(" (%d clients)", *clients)
		}
		o, p := durations(ours[lo:hi]), durations(plains[lo:hi])
		fails := 0
		for _, s := range ours[lo:hi] {
			if s.err != nil {
				fails++
			}
		}
		ratio := benchstat.PercentileMs(o, 50) / benchstat.PercentileMs(p, 50)
		worst = max(worst, ratio)
		lines = append(lines, fmt.Sprintf("%-22s %8.0fms %8.0fms %8.0fms %8.0fms %6.2fx %6d",
			label, benchstat.PercentileMs(o, 50), benchstat.PercentileMs(o, 99), benchstat.PercentileMs(p, 50), benchstat.PercentileMs(p, 99), ratio, fails))
	}
	logf("attach time per bucket (plain = plain OVS in the same run):\n%s", strings.Join(lines, "\n"))
	b.ReportMetric(worst, "worst-p50-ratio")
	o, p := durations(ours[:*serialN]), durations(plains[:*serialN])
	b.ReportMetric(benchstat.PercentileMs(o, 50), "ms-p50")
	b.ReportMetric(benchstat.PercentileMs(o, 99), "ms-p99")
	b.ReportMetric(benchstat.PercentileMs(p, 50), "plain-ms-p50")
}

func durations(s []sample) []time.Duration {
	out := make([]time.Duration, len(s))
	for i, x := range s {
		out[i] = x.d
	}
	return out
}

func attachOne(h *testbed.Host, c *testbed.Container) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := attach.NewClient(h.AttachSocket()).Attach(ctx, attach.Request{Tenant: "default", Network: "scale",
		ContainerID: c.NS, Name: c.Name, NetNS: c.NSPath()})
	return err
}

// plainOVS is the reference: a private OVS with one netdev bridge in
// secure fail mode (no controller), where each "attach" is a veth pair,
// the container end moved into its namespace, addressed and up, the OVS
// end added as a port, and one flow delivering the container's MAC to it.
type plainOVS struct {
	ovs *ovstest.OVS
	seq atomic.Int32
}

const plainBridge = "plain"

func newPlain(b *testing.B) *plainOVS {
	o := ovstest.Start(b)
	if out, err := o.Vsctl("add-br", plainBridge, "--", "set", "bridge", plainBridge,
		"datapath_type=netdev", "fail_mode=secure", "protocols=OpenFlow13"); err != nil {
		b.Fatalf("plain bridge: %v\n%s", err, out)
	}
	return &plainOVS{ovs: o}
}

func (p *plainOVS) attach(n int, ns string) error {
	host, cont := fmt.Sprintf("pv%d", n), fmt.Sprintf("pc%d", n)
	mac := fmt.Sprintf("02:00:00:00:%02x:%02x", n>>8&0xff, n&0xff)
	ip := fmt.Sprintf("%s%d.%d/17", plainPrefix, 128+n/256, n%256)
	steps := [][]string{
		{"ip", "link", "add", host, "up", "type", "veth", "peer", "name", cont, "address", mac, "netns", ns},
	}
	for _, s := range steps {
		if out, err := p.ovs.Exec(s[0], s[1:]...); err != nil {
			return fmt.Errorf("%s: %w: %s", strings.Join(s, " "), err, out)
		}
	}
	for _, s := range [][]string{
		{"ip", "link", "set", cont, "name", "eth0"},
		{"ip", "addr", "add", ip, "dev", "eth0"},
		{"ip", "link", "set", "eth0", "up"},
	} {
		if out, err := run("ip", append([]string{"netns", "exec", ns}, s...)...); err != nil {
			return fmt.Errorf("%s: %w: %s", strings.Join(s, " "), err, out)
		}
	}
	if out, err := p.ovs.Vsctl("add-port", plainBridge, host); err != nil {
		return fmt.Errorf("add-port %s: %w: %s", host, err, out)
	}
	if out, err := p.ovs.Vsctl("get", "interface", host, "ofport"); err != nil {
		return fmt.Errorf("ofport of %s: %w: %s", host, err, out)
	} else if port := strings.TrimSpace(out); port == "" || port == "-1" {
		return fmt.Errorf("add-port %s: ofport %q", host, port)
	} else if out, err := p.ovs.Ofctl("-O", "OpenFlow13", "add-flow", plainBridge,
		fmt.Sprintf("priority=100,dl_dst=%s,actions=output:%s", mac, port)); err != nil {
		return fmt.Errorf("add-flow for %s: %w: %s", host, err, out)
	}
	return nil
}

// detach undoes attach n: its flow, its port and the veth pair.
func (p *plainOVS) detach(n int) error {
	host := fmt.Sprintf("pv%d", n)
	mac := fmt.Sprintf("02:00:00:00:%02x:%02x", n>>8&0xff, n&0xff)
	if out, err := p.ovs.Ofctl("-O", "OpenFlow13", "del-flows", plainBridge, "dl_dst="+mac); err != nil {
		return fmt.Errorf("del-flows for %s: %w: %s", host, err, out)
	}
	if out, err := p.ovs.Vsctl("del-port", plainBridge, host); err != nil {
		return fmt.Errorf("del-port %s: %w: %s", host, err, out)
	}
	if out, err := p.ovs.Exec("ip", "link", "del", host); err != nil {
		return fmt.Errorf("delete veth %s: %w: %s", host, err, out)
	}
	return nil
}

func run(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out), err
}

func vswitchdPid(o *ovstest.OVS) int {
	data, err := os.ReadFile(filepath.Join(o.Dir, "ovs-vswitchd.pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	return pid
}

// rssMB reads VmRSS of a process from /proc (0 when unknown).
func rssMB(pid int) float64 {
	if pid == 0 {
		return 0
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseFloat(f[0], 64)
				return kb / 1024
			}
		}
	}
	return 0
}

// cpuSeconds is the user+system CPU time of a process (0 when unknown).
func cpuSeconds(pid int) float64 {
	if pid == 0 {
		return 0
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ is 100 on Linux
}

func dirSizeMB(dir string) float64 {
	var total int64
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := d.Info(); err == nil && !d.IsDir() {
			total += info.Size()
		}
		return nil
	})
	return float64(total) / (1 << 20)
}

// etcdDBMB is the size of the embedded etcd's bolt database file.
func etcdDBMB(dir string) float64 {
	var size int64
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "db" {
			if info, err := d.Info(); err == nil {
				size = info.Size()
			}
		}
		return nil
	})
	return float64(size) / (1 << 20)
}

func countLines(path, substr string) int {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) || err != nil {
		return 0
	}
	return strings.Count(string(data), substr)
}
