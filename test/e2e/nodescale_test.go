package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contiv/netplugin/test/testbed"
)

// nodeScaleN is the number of endpoints TestNetpluginRestartFullHost puts
// on one host: E2E_NODESCALE_N, default 300 (the full host; about
// a minute), 40 with -short.
func nodeScaleN(t *testing.T) int {
	t.Helper()
	s := os.Getenv("E2E_NODESCALE_N")
	if s == "" {
		if testing.Short() {
			return 40
		}
		return 300
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 3 || n > 1000 {
		t.Fatalf("E2E_NODESCALE_N=%q: want 3..1000", s)
	}
	return n
}

// fastPing pings every 50 ms from a container until ctx ends (bounded by
// limit) and reports requests sent and replies received.
type fastPing struct {
	cmd  *exec.Cmd
	out  []byte
	err  error
	done chan struct{}
}

const fastPingInterval = 50 * time.Millisecond

func startFastPing(t *testing.T, from *ctr, to string, limit time.Duration) *fastPing {
	t.Helper()
	p := &fastPing{done: make(chan struct{})}
	p.cmd = exec.Command("ip", "netns", "exec", from.NS, "ping", "-n", "-i", "0.05", "-W", "1",
		"-w", strconv.Itoa(int(limit.Seconds())), to)
	var mu sync.Mutex
	buf := &lockedBuffer{mu: &mu}
	p.cmd.Stdout, p.cmd.Stderr = buf, buf
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start ping from %s: %v", from.Name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		p.out = buf.bytes()
		close(p.done)
	}()
	t.Cleanup(func() { p.cmd.Process.Kill(); <-p.done })
	return p
}

var (
	fastSentRE = regexp.MustCompile(`(\d+) packets transmitted, (\d+) received`)
	fastSeqRE  = regexp.MustCompile(`icmp_seq=(\d+)`)
)

// stop interrupts ping and returns sent, received and the longest run of
// unanswered requests.
func (p *fastPing) stop() (sent, received, maxLost int, out string) {
	p.cmd.Process.Signal(os.Interrupt)
	<-p.done
	out = string(p.out)
	if m := fastSentRE.FindStringSubmatch(out); m != nil {
		sent, _ = strconv.Atoi(m[1])
		received, _ = strconv.Atoi(m[2])
	}
	prev := 0
	for _, m := range fastSeqRE.FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[1])
		if n > prev {
			maxLost = max(maxLost, n-prev-1)
			prev = n
		}
	}
	// The last request may still have been in flight.
	maxLost = max(maxLost, sent-prev-2)
	return sent, received, maxLost, out
}

type lockedBuffer struct {
	mu *sync.Mutex
	b  []byte
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

func (l *lockedBuffer) bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]byte(nil), l.b...)
}

// A netplugin restart on a host full of endpoints loses no ping (every
// 50 ms) to a peer host or between two of its containers, and leaves the
// same ports and flows.
func TestNetpluginRestartFullHost(t *testing.T) {
	n := nodeScaleN(t)
	tb := testbed.New(t, testbed.Config{Hosts: 2, NetMode: "vlan", FwdMode: "bridge"})
	netctl(t, tb, "net", "create", "--encap", "vxlan", "--subnet", "198.19.64.0/20", "--gateway", "198.19.79.254", "full")
	h0, h1 := tb.Hosts[0], tb.Hosts[1]
	peer := attachNew(t, h1, "peer", "default", "full", "")
	var local []*ctr
	start := time.Now()
	for i := 0; i < n; i++ {
		local = append(local, attachNew(t, h0, fmt.Sprintf("c%d", i), "default", "full", ""))
	}
	t.Logf("%d endpoints attached on %s in %v", n, h0.Name, time.Since(start).Round(time.Millisecond))
	a, b := local[0], local[n-1]
	for _, pair := range [][2]*ctr{{a, peer}, {a, b}} {
		if err := pingOK(pair[0], pair[1], 20*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	// The stale-flow sweep of the previous start is over before the
	// snapshot (it runs a few seconds after the masters are known).
	time.Sleep(8 * time.Second)
	before := snapshot(t, h0)

	toPeer := startFastPing(t, a, peer.ip(), 3*time.Minute)
	local2 := startFastPing(t, b, a.ip(), 3*time.Minute)
	time.Sleep(time.Second)
	h0.RestartNetplugin(t)
	tb.WaitNetplugins(t, len(tb.Hosts), 60*time.Second)
	// Past the new process's stale-flow sweep.
	time.Sleep(10 * time.Second)
	for _, p := range []struct {
		name string
		p    *fastPing
	}{{"to the peer host", toPeer}, {"between two containers of the host", local2}} {
		sent, received, maxLost, out := p.p.stop()
		if sent == 0 || maxLost > 0 {
			t.Errorf("pings %s through the restart: %d sent, %d received, longest gap %d requests\n%s", p.name, sent, received, maxLost, tail(out, 20))
		} else {
			t.Logf("pings %s through the restart: %d sent, %d received", p.name, sent, received)
		}
	}
	if err := waitSnapshot(h0, before, 30*time.Second); err != nil {
		t.Error(err)
	}
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
