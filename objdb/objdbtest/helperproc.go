package objdbtest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/contiv/netplugin/objdb"
)

// Environment of a helper process (the test binary re-executed by the suite).
const (
	envHelper   = "OBJDBTEST_HELPER" // "lock" or "service"
	envEndpoint = "OBJDBTEST_ENDPOINT"
	envRoot     = "OBJDBTEST_ROOT"
	envName     = "OBJDBTEST_NAME"
	envHolder   = "OBJDBTEST_HOLDER"
	envTTL      = "OBJDBTEST_TTL" // seconds
	envPort     = "OBJDBTEST_PORT"
)

// readyLine is what a helper prints once it holds the lock or has
// registered its service.
const readyLine = "OBJDBTEST READY"

// Main is the TestMain of a backend's test package: it runs a helper process
// when asked to, and otherwise runs the tests and fails on leaked goroutines.
func Main(m *testing.M, b Backend) {
	if mode := os.Getenv(envHelper); mode != "" {
		os.Exit(runHelper(b, mode))
	}
	goleak.VerifyTestMain(m, LeakOptions()...)
}

// LeakOptions are the goroutines that outlive a test by design: library
// pools that are not ours to stop.
func LeakOptions() []goleak.Option {
	return []goleak.Option{
		// glog/klog style flush daemons and the HTTP transport's idle
		// connections close on their own timers.
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("go.opencensus.io/stats/view.(*worker).start"),
	}
}

func runHelper(b Backend, mode string) int {
	ctx := context.Background()
	st, err := b.Connect(ctx, os.Getenv(envEndpoint), os.Getenv(envRoot))
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper connect:", err)
		return 3
	}
	ttl, _ := strconv.Atoi(os.Getenv(envTTL))
	switch mode {
	case "lock":
		l, err := st.NewLock(os.Getenv(envName), os.Getenv(envHolder), time.Duration(ttl)*time.Second)
		if err != nil {
			fmt.Fprintln(os.Stderr, "helper lock:", err)
			return 3
		}
		if err := l.Acquire(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "helper acquire:", err)
			return 3
		}
		for ev := range l.Events() {
			if ev.Type == objdb.LockAcquired {
				fmt.Println(readyLine)
			}
		}
	case "service":
		port, _ := strconv.Atoi(os.Getenv(envPort))
		info := objdb.ServiceInfo{ServiceName: os.Getenv(envName), TTL: ttl, HostAddr: "127.0.0.1", Port: port, Hostname: "helper"}
		if err := st.RegisterService(ctx, info); err != nil {
			fmt.Fprintln(os.Stderr, "helper register:", err)
			return 3
		}
		fmt.Println(readyLine)
	default:
		fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
		return 2
	}
	select {} // wait to be killed
}

// helperProc is a running helper process.
type helperProc struct {
	cmd *exec.Cmd
}

// startHelper re-executes the test binary in helper mode and waits (bounded)
// until it says it is ready. The process is killed on cleanup.
func startHelper(t *testing.T, mode string, env map[string]string, wait time.Duration) *helperProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envHelper+"="+mode)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start helper process: %v", err)
	}
	h := &helperProc{cmd: cmd}
	t.Cleanup(h.kill)
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		ok := false
		for sc.Scan() {
			if strings.TrimSpace(sc.Text()) == readyLine && !ok {
				ok = true
				ready <- true
			}
		}
		if !ok {
			ready <- false
		}
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatalf("helper process (%s) exited before it was ready", mode)
		}
	case <-time.After(wait):
		t.Fatalf("helper process (%s) not ready after %v", mode, wait)
	}
	return h
}

// kill sends SIGKILL: the process dies without releasing anything.
func (h *helperProc) kill() {
	if h.cmd.Process == nil || h.cmd.ProcessState != nil {
		return
	}
	h.cmd.Process.Signal(syscall.SIGKILL)
	h.cmd.Wait()
}
