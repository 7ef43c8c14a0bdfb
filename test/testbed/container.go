package testbed

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Container is a namespace standing in for a container on a host. The
// harness only creates the namespace (loopback up); netplugin attaches it.
type Container struct {
	Name string // the test's name for it
	NS   string // namespace name, <prefix>c<n>
	Host *Host
	// IP is free for the test to record the attached address.
	IP string
}

// NewContainerNS creates a container namespace on h. It lives until the
// testbed's cleanup, or until Delete.
func (h *Host) NewContainerNS(t testing.TB, name string) *Container {
	t.Helper()
	n := h.tb.containers.Add(1)
	c := &Container{Name: name, NS: fmt.Sprintf("%sc%d", h.tb.Prefix, n), Host: h}
	if err := addNetNS(c.NS); err != nil {
		t.Fatalf("testbed: container %s: %v", name, err)
	}
	return c
}

// NSPath is the namespace's bind mount, what the attach API takes.
func (c *Container) NSPath() string { return "/var/run/netns/" + c.NS }

// Delete kills what runs in the namespace and removes it (its links go
// with it).
func (c *Container) Delete(t testing.TB) {
	t.Helper()
	if err := killNetNS(c.NS); err != nil {
		t.Errorf("testbed: delete container %s: %v", c.Name, err)
	}
}

// Exec runs a program inside the container's namespace and returns its
// combined output.
func (c *Container) Exec(args ...string) (string, error) {
	return nsExec(c.NS, args[0], args[1:]...)
}

// Ping pings ip (one request per second) until count requests are
// answered, and fails when that does not happen within timeout (rounded up
// to whole seconds); the error includes ping's output.
func (c *Container) Ping(ip string, count int, timeout time.Duration) error {
	return ping(c.NS, ip, count, timeout)
}

func ping(ns, ip string, count int, timeout time.Duration) error {
	secs := int(math.Ceil(timeout.Seconds()))
	if secs < 1 {
		secs = 1
	}
	if _, err := nsExec(ns, "ping", "-n", "-c", strconv.Itoa(count), "-W", "1", "-w", strconv.Itoa(secs), ip); err != nil {
		return fmt.Errorf("ping %s from %s: %w", ip, ns, err)
	}
	return nil
}

// PingInterval is the Pinger's interval between echo requests.
const PingInterval = 200 * time.Millisecond

// maxPingerRun bounds a Pinger whose context has no deadline.
const maxPingerRun = 10 * time.Minute

// Pinger is a background ping (every 200 ms) from a container.
type Pinger struct {
	cmd    *exec.Cmd
	out    *bytes.Buffer
	done   chan struct{} // closed when ping has exited
	cancel context.CancelFunc
	wg     sync.WaitGroup
	err    error // start or wait error
}

// PingStats summarises a Pinger run.
type PingStats struct {
	Sent, Received int
	// MaxLost is the longest run of consecutive unanswered requests
	// (those at the end included, except the very last one, which may
	// have been in flight when ping stopped).
	MaxLost int
	// LongestGap is the longest stretch without replies, from the
	// sequence numbers: (MaxLost+1) * PingInterval.
	LongestGap time.Duration
	Output     string
	Err        error
}

// StartPinger pings ip from the container every 200 ms until Stop or the
// end of ctx (at most 10 minutes).
func (c *Container) StartPinger(ctx context.Context, ip string) *Pinger {
	deadline := maxPingerRun
	if d, ok := ctx.Deadline(); ok && time.Until(d) < deadline {
		deadline = time.Until(d) + time.Second
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &Pinger{out: &bytes.Buffer{}, done: make(chan struct{}), cancel: cancel}
	secs := strconv.Itoa(int(math.Ceil(deadline.Seconds())))
	p.cmd = exec.Command("ip", "netns", "exec", c.NS, "ping", "-n", "-i", "0.2", "-W", "1", "-w", secs, ip)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		p.err = fmt.Errorf("start ping %s from %s: %w", ip, c.NS, err)
		close(p.done)
		return p
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.cmd.Wait()
		close(p.done)
	}()
	// SIGINT makes ping print its summary and exit.
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		select {
		case <-ctx.Done():
			p.cmd.Process.Signal(syscall.SIGINT)
		case <-p.done:
		}
	}()
	return p
}

// Stop interrupts ping, waits for it and returns the statistics.
func (p *Pinger) Stop() PingStats {
	p.cancel()
	p.wg.Wait()
	if p.err != nil {
		return PingStats{Err: p.err}
	}
	return parsePing(p.out.String())
}

var (
	pingReplyRE = regexp.MustCompile(`bytes from .*icmp_seq=(\d+)`)
	pingSentRE  = regexp.MustCompile(`(\d+) packets transmitted`)
)

// parsePing reads ping's output: the replies' sequence numbers and the
// summary's transmitted count.
func parsePing(out string) PingStats {
	st := PingStats{Output: out}
	seen := map[int]bool{}
	for _, m := range pingReplyRE.FindAllStringSubmatch(out, -1) {
		if n, err := strconv.Atoi(m[1]); err == nil {
			seen[n] = true
		}
	}
	if m := pingSentRE.FindStringSubmatch(out); m != nil {
		st.Sent, _ = strconv.Atoi(m[1])
	} else {
		st.Err = fmt.Errorf("no ping summary in output: %q", out)
	}
	seqs := make([]int, 0, len(seen))
	for s := range seen {
		seqs = append(seqs, s)
	}
	sort.Ints(seqs)
	st.Received = len(seqs)
	prev := 0 // sequence numbers start at 1
	for _, s := range seqs {
		st.MaxLost = max(st.MaxLost, s-prev-1)
		prev = s
	}
	// The last request may still have been in flight when ping was
	// interrupted: it does not count as lost.
	st.MaxLost = max(st.MaxLost, st.Sent-prev-1)
	st.LongestGap = time.Duration(st.MaxLost+1) * PingInterval
	return st
}
