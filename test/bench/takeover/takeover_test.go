// Package takeover measures issue 14: netmaster's memory and its
// leadership take-over time with many endpoints in the store.
//
// BenchmarkTakeover starts an etcd process, creates networks through a
// netmaster, stops it and writes N endpoint records (default 100000,
// $TAKEOVER_ENDPOINTS) directly into the store in the format
// createEndpoint leaves them (address taken in the network's pool, record,
// counters). It then starts two netmaster processes with --leader-ttl 2s
// ($TAKEOVER_TTL), waits until the first leads and has swept, and reports
// its resident memory (/proc/<pid>/status VmHWM and VmRSS). It kills the
// leader with SIGKILL and times until the other answers a write (a network
// create through REST), split into the lock wait (until the survivor logs
// "acquired leader lock") and the term start (from then until the write is
// answered; the latency of one such write on the settled first leader is
// reported too), and reports the new leader's memory peak at that moment and
// after its leaked-address sweep. It needs no OVS and no namespaces, so it
// runs without the shared lock; with the default N it takes about two to
// three minutes ($BENCH_PROFILE_DIR: the new leader's heap and goroutine
// profiles after its sweep are saved there):
//
//	go test ./test/bench/takeover -run '^$' -bench Takeover -benchtime 1x -timeout 20m
//
// docs/scale.md has the figures.
package takeover

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/objdb/objdbtest"
	"github.com/contiv/netplugin/test/nmproc"
)

func TestMain(m *testing.M) {
	nmproc.RunDaemonIfAsked()
	os.Exit(m.Run())
}

// envInt is the integer in $name, or def.
func envInt(b testing.TB, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("$%s=%q: want a positive integer", name, v)
	}
	return n
}

// mem is a process's resident memory in MiB.
type mem struct{ hwm, rss float64 }

func (m mem) String() string { return fmt.Sprintf("VmHWM %.1f MiB VmRSS %.1f MiB", m.hwm, m.rss) }

// readMem reads VmHWM and VmRSS of pid.
func readMem(b testing.TB, pid int) mem {
	b.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatalf("read memory of %d: %v", pid, err)
	}
	defer f.Close()
	var m mem
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[0], 64)
		switch k {
		case "VmHWM":
			m.hwm = kb / 1024
		case "VmRSS":
			m.rss = kb / 1024
		}
	}
	return m
}

var hc = &http.Client{Timeout: 5 * time.Second}

// do sends one request and returns its status and body (status 0 when it
// did not get an answer).
func do(method, url, body string) (int, string) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func mustOK(b testing.TB, method, url, body string) {
	b.Helper()
	if code, msg := do(method, url, body); code != http.StatusOK {
		b.Fatalf("%s %s: %d %s", method, url, code, msg)
	}
}

func netBody(name, subnet, gw string) string {
	return fmt.Sprintf(`{"tenantName":"default","networkName":%q,"encap":"vlan","subnet":%q,"gateway":%q}`, name, subnet, gw)
}

// createNet creates network name through p; the write is answered when
// this returns true.
func createNet(p *nmproc.Proc, name, subnet, gw string) (bool, string) {
	code, msg := do("POST", p.URL()+"/api/v1/networks/default:"+name+"/", netBody(name, subnet, gw))
	return code == http.StatusOK, fmt.Sprintf("%d %s", code, msg)
}

// waitWrite creates network name through p until that succeeds and
// returns when it did.
func waitWrite(b testing.TB, p *nmproc.Proc, name, subnet string, within time.Duration) time.Time {
	b.Helper()
	deadline := time.Now().Add(within)
	last := ""
	for time.Now().Before(deadline) {
		ok, msg := createNet(p, name, subnet, "")
		if ok {
			return time.Now()
		}
		last = msg
		select {
		case <-p.Done():
			b.Fatalf("netmaster %s exited:\n%s", p.Addr, nmproc.Tail(p.Output(), 4000))
		case <-time.After(20 * time.Millisecond):
		}
	}
	b.Fatalf("netmaster %s did not answer a write within %v; last answer %s", p.Addr, within, last)
	return time.Time{}
}

// waitSweep waits until the leader p reports its leaked-address sweep
// (GET /debug/sweep) and fails when it found anything to repair: the
// store written by fill is consistent.
func waitSweep(b testing.TB, p *nmproc.Proc, within time.Duration) {
	b.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		code, msg := do("GET", p.URL()+"/debug/sweep", "")
		if code == http.StatusOK {
			if !strings.Contains(msg, `"released":[]`) || !strings.Contains(msg, `"retaken":[]`) ||
				!strings.Contains(msg, `"doubleOwned":[]`) || strings.Contains(msg, `"error"`) {
				b.Fatalf("sweep repaired the filled store: %s", nmproc.Tail(msg, 2000))
			}
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.Fatalf("netmaster %s: no sweep within %v", p.Addr, within)
}

// waitLog returns when p's output first contains s (polled every 5 ms).
func waitLog(ctx context.Context, p *nmproc.Proc, s string) (time.Time, bool) {
	for {
		if strings.Contains(p.Output(), s) {
			return time.Now(), true
		}
		select {
		case <-ctx.Done():
			return time.Time{}, false
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func BenchmarkTakeover(b *testing.B) {
	n := envInt(b, "TAKEOVER_ENDPOINTS", 100000)
	ttl := time.Duration(envInt(b, "TAKEOVER_TTL", 2)) * time.Second
	parts := split(n)
	if len(parts) > maxNets {
		b.Fatalf("%d endpoints: at most %d fit in 198.18.0.0/15", n, maxNets*hostsPerNet)
	}
	etcdSrv := objdbtest.StartEtcdProcess(b)
	flags := []string{"--etcd-endpoints", etcdSrv.Endpoint, "--leader-ttl", ttl.String(), "--log-level", "info"}

	// Networks through a netmaster, then endpoints straight into the store.
	a := nmproc.Start(b, "", flags...)
	a.WaitRole("leader", 30*time.Second)
	for i := range parts {
		subnet, gw := netSubnet(i)
		if ok, msg := createNet(a, fmt.Sprintf("big%d", i), subnet, gw); !ok {
			b.Fatalf("create network big%d: %s", i, msg)
		}
	}
	a.Stop()
	kv := openStore(b, etcdSrv.Endpoint)
	defer kv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	start := time.Now()
	first := 0
	for i, c := range parts {
		if err := fill(ctx, kv, fmt.Sprintf("big%d.default", i), first, c, 64); err != nil {
			b.Fatalf("fill: %v", err)
		}
		first += c
	}
	fillDur := time.Since(start)
	fmt.Printf("filled %d endpoints in %d networks in %.1f s (%.0f/s)\n", n, len(parts), fillDur.Seconds(), float64(n)/fillDur.Seconds())

	// The first leader's term starts on the full store.
	a.Restart()
	t0 := time.Now()
	probe := 0
	probeNet := func() (string, string) {
		probe++
		return fmt.Sprintf("probe%d", probe), fmt.Sprintf("198.19.%d.0/24", 192+probe)
	}
	name, subnet := probeNet()
	coldStart := waitWrite(b, a, name, subnet, 5*time.Minute).Sub(t0)
	if a.Role() != "leader" {
		b.Fatalf("netmaster %s answered but does not lead", a.Addr)
	}
	bp := nmproc.Start(b, "", flags...)
	bp.WaitRole("follower", 30*time.Second)
	waitSweep(b, a, 5*time.Minute)
	name, subnet = probeNet()
	wstart := time.Now()
	if ok, msg := createNet(a, name, subnet, ""); !ok {
		b.Fatalf("create network %s on the leader: %s", name, msg)
	}
	writeLat := time.Since(wstart)
	leaderMem := readMem(b, a.PID())
	followerMem := readMem(b, bp.PID())
	fmt.Printf("leader after start and sweep: %v (first write answered %.2f s after start)\n", leaderMem, coldStart.Seconds())
	fmt.Printf("follower: %v\n", followerMem)
	fmt.Printf("one network create on the settled leader: %.3f s\n", writeLat.Seconds())

	// Kill the leader; the follower takes over.
	lctx, lcancel := context.WithTimeout(ctx, 5*time.Minute)
	defer lcancel()
	lockSeen := make(chan time.Time, 1)
	go func() {
		at, _ := waitLog(lctx, bp, "acquired leader lock")
		lockSeen <- at
	}()
	a.Kill()
	killed := time.Now()
	name, subnet = probeNet()
	answered := waitWrite(b, bp, name, subnet, 5*time.Minute)
	termMem := readMem(b, bp.PID())
	lcancel()
	lockAt := <-lockSeen
	if lockAt.IsZero() {
		b.Fatalf("netmaster %s never logged acquiring the lock:\n%s", bp.Addr, nmproc.Tail(bp.Output(), 4000))
	}
	waitSweep(b, bp, 5*time.Minute)
	newMem := readMem(b, bp.PID())
	saveProfiles(ctx, b, bp, "takeover-new-leader")
	total, lockWait, termStart := answered.Sub(killed), lockAt.Sub(killed), answered.Sub(lockAt)
	fmt.Printf("kill -9 of the leader -> write answered by the new leader: %.2f s (lock wait %.2f s, term start %.2f s)\n",
		total.Seconds(), lockWait.Seconds(), termStart.Seconds())
	fmt.Printf("new leader at the first answered write: %v; after its sweep: %v\n", termMem, newMem)

	// benchstat-style lines (one sample each).
	line := func(name string, v float64, unit string) {
		fmt.Printf("BenchmarkTakeover/%s/endpoints=%d\t1\t%.3f %s\n", name, n, v, unit)
	}
	line("fill", fillDur.Seconds(), "s")
	line("cold-start", coldStart.Seconds(), "s")
	line("leader-write", writeLat.Seconds(), "s")
	line("leader-hwm", leaderMem.hwm, "MiB")
	line("leader-rss", leaderMem.rss, "MiB")
	line("follower-rss", followerMem.rss, "MiB")
	line("takeover", total.Seconds(), "s")
	line("lock-wait", lockWait.Seconds(), "s")
	line("term-start", termStart.Seconds(), "s")
	line("new-leader-hwm-at-write", termMem.hwm, "MiB")
	line("new-leader-hwm", newMem.hwm, "MiB")
	line("new-leader-rss", newMem.rss, "MiB")
	b.ReportMetric(total.Seconds(), "takeover-s")
	b.ReportMetric(termStart.Seconds(), "term-start-s")
	b.ReportMetric(leaderMem.hwm, "leader-hwm-MiB")
	b.ReportMetric(newMem.hwm, "new-leader-hwm-MiB")
}
