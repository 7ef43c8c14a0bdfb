package testbed

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ProbeResult is one probe of a Watcher.
type ProbeResult struct {
	At    time.Time // when the probe started
	Proto string    // tcp or udp
	OK    bool
	Err   string
}

// Watcher probes a traffic echo (ServeTraffic) continuously from a
// container: a TCP exchange on a new connection and a UDP exchange every
// interval, each bounded by a second (netprobe watch).
type Watcher struct {
	From, To string // container name, echo address
	cmd      *exec.Cmd
	mu       sync.Mutex
	results  []ProbeResult
	stderr   strings.Builder
	done     chan struct{}
	once     sync.Once
}

// StartWatch starts probing ip:TrafficPort from c every interval for at
// most dur (and not past ctx).
func (c *Container) StartWatch(ctx context.Context, ip string, interval, dur time.Duration) (*Watcher, error) {
	bin, err := buildNetprobe()
	if err != nil {
		return nil, err
	}
	if d, ok := ctx.Deadline(); ok && time.Until(d) < dur {
		dur = time.Until(d)
	}
	addr := ip + ":" + strconv.Itoa(TrafficPort)
	w := &Watcher{From: c.Name, To: addr, done: make(chan struct{})}
	w.cmd = exec.Command("ip", "netns", "exec", c.NS, bin, "watch", "-addr", addr,
		"-interval", interval.String(), "-timeout", "1s", "-duration", dur.String())
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	w.cmd.Stderr = &w.stderr
	out, err := w.cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("watch %s → %s: %w", c.Name, addr, err)
	}
	if err := w.cmd.Start(); err != nil {
		return nil, fmt.Errorf("watch %s → %s: %w", c.Name, addr, err)
	}
	go func() {
		defer close(w.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if r, ok := parseProbeLine(sc.Text()); ok {
				w.mu.Lock()
				w.results = append(w.results, r)
				w.mu.Unlock()
			}
		}
		w.cmd.Wait()
	}()
	go func() {
		select {
		case <-ctx.Done():
			w.Stop()
		case <-w.done:
		}
	}()
	return w, nil
}

// parseProbeLine reads "<unix ms> tcp|udp ok|fail [error]".
func parseProbeLine(line string) (ProbeResult, bool) {
	f := strings.SplitN(line, " ", 4)
	if len(f) < 3 {
		return ProbeResult{}, false
	}
	ms, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || (f[1] != "tcp" && f[1] != "udp") || (f[2] != "ok" && f[2] != "fail") {
		return ProbeResult{}, false
	}
	r := ProbeResult{At: time.UnixMilli(ms), Proto: f[1], OK: f[2] == "ok"}
	if len(f) == 4 {
		r.Err = f[3]
	}
	return r, true
}

// Stop ends the probing (SIGTERM, so the last probe is not reported as a
// failure) and waits for it. Idempotent.
func (w *Watcher) Stop() {
	w.once.Do(func() {
		if w.cmd.Process != nil {
			syscall.Kill(-w.cmd.Process.Pid, syscall.SIGTERM)
		}
		select {
		case <-w.done:
		case <-time.After(5 * time.Second):
			w.cmd.Process.Kill()
			<-w.done
		}
	})
}

// Results returns the probes so far.
func (w *Watcher) Results() []ProbeResult {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]ProbeResult(nil), w.results...)
}

// ProbeStats sums a Watcher's probes of one protocol.
type ProbeStats struct {
	Proto      string
	Sent, OK   int
	LongestGap time.Duration // longest span from a failed probe to the next success
	Failures   []ProbeResult
}

func (s ProbeStats) String() string {
	return fmt.Sprintf("%s %d/%d ok, longest gap %v", s.Proto, s.OK, s.Sent, s.LongestGap)
}

// Stats sums the probes of proto that started in [from, to) (zero: no
// bound).
func (w *Watcher) Stats(proto string, from, to time.Time) ProbeStats {
	st := ProbeStats{Proto: proto}
	var failStart time.Time
	for _, r := range w.Results() {
		if r.Proto != proto || (!from.IsZero() && r.At.Before(from)) || (!to.IsZero() && !r.At.Before(to)) {
			continue
		}
		st.Sent++
		if r.OK {
			st.OK++
			if !failStart.IsZero() {
				st.LongestGap = max(st.LongestGap, r.At.Sub(failStart))
				failStart = time.Time{}
			}
			continue
		}
		st.Failures = append(st.Failures, r)
		if failStart.IsZero() {
			failStart = r.At
		}
	}
	if !failStart.IsZero() {
		end := to
		if end.IsZero() {
			end = time.Now()
		}
		st.LongestGap = max(st.LongestGap, end.Sub(failStart))
	}
	return st
}

// Stderr is what netprobe watch wrote to its standard error ("" until it
// has ended).
func (w *Watcher) Stderr() string {
	select {
	case <-w.done:
		return w.stderr.String()
	default:
		return ""
	}
}
