package testbed

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// stopGrace is how long a SIGTERMed daemon may take before it is killed.
const stopGrace = 15 * time.Second

// daemon is one long-running process (netplugin, netmaster, etcd) inside a
// namespace, with stdout and stderr appended to a log file. It can be
// stopped and started again any number of times.
type daemon struct {
	name    string // for messages
	ns      string
	bin     string
	args    []string
	logPath string
	// direct, when set, is the whole command line (it enters the
	// namespace itself) instead of "ip netns exec ns bin args".
	direct []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed once the current process has exited
}

// start launches the process; starting a running daemon is an error.
func (d *daemon) start() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd != nil && !isClosed(d.done) {
		return fmt.Errorf("start %s: already running (pid %d)", d.name, d.cmd.Process.Pid)
	}
	logf, err := os.OpenFile(d.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("start %s: log file: %w", d.name, err)
	}
	defer logf.Close() // the child keeps its own descriptor
	argv := append([]string{"ip", "netns", "exec", d.ns, d.bin}, d.args...)
	if d.direct != nil {
		argv = d.direct
	}
	fmt.Fprintf(logf, "=== testbed: %s start %s: %s\n", time.Now().Format(time.RFC3339Nano), d.name, strings.Join(argv, " "))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// "ip netns exec" execs the daemon in place, so the pid is the
	// daemon's. It dies with the test binary even without a cleanup, and
	// its own process group keeps a terminal's ^C away from it (the
	// signal handler destroys the testbed instead).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", d.name, err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	d.cmd, d.done = cmd, done
	return nil
}

// signal sends sig to the running process.
func (d *daemon) signal(sig syscall.Signal) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd == nil || isClosed(d.done) {
		return fmt.Errorf("signal %s: not running", d.name)
	}
	if err := d.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("signal %s: %w", d.name, err)
	}
	return nil
}

// running reports whether the process is up.
func (d *daemon) running() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cmd != nil && !isClosed(d.done)
}

// exited returns a channel closed when the current process exits (a
// closed channel when none runs).
func (d *daemon) exited() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return d.done
}

// exitStatus describes how the last process ended ("" while running).
func (d *daemon) exitStatus() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd == nil || !isClosed(d.done) {
		return ""
	}
	return d.cmd.ProcessState.String()
}

// stop sends sig and waits for the exit; after grace it sends SIGKILL and
// reports that the process did not stop in time. Stopping a stopped
// daemon is a no-op.
func (d *daemon) stop(sig syscall.Signal, grace time.Duration) error {
	d.mu.Lock()
	cmd, done := d.cmd, d.done
	d.mu.Unlock()
	if cmd == nil || isClosed(done) {
		return nil
	}
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal %s: %w", d.name, err)
	}
	select {
	case <-done:
		return nil
	case <-time.After(grace):
	}
	cmd.Process.Kill()
	<-done
	return fmt.Errorf("%s did not exit within %v of %v: killed", d.name, grace, sig)
}

// logs returns the last n lines of the log file.
func (d *daemon) logs(n int) string {
	return tailFile(d.logPath, n)
}

func tailFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if n > 0 && len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
