package objdbtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// consulBuildPath is where the project's tool module builds the agent
// (test/tools/consul).
const consulBuildPath = "/tmp/consul-build/consul"

// consulStartTimeout bounds the wait for a test agent's leader.
const consulStartTimeout = 60 * time.Second

// FindConsul returns the consul binary: $CONSUL_BIN, then `consul` on
// PATH, then the tool module's build output.
func FindConsul() (string, error) {
	if p := os.Getenv("CONSUL_BIN"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("CONSUL_BIN=%s: %w", p, err)
		}
		return p, nil
	}
	if p, err := exec.LookPath("consul"); err == nil {
		return p, nil
	}
	if _, err := os.Stat(consulBuildPath); err == nil {
		return consulBuildPath, nil
	}
	return "", errors.New("no consul binary: set CONSUL_BIN, put consul on PATH, or build test/tools/consul into " + consulBuildPath)
}

// freePorts reserves n distinct free loopback ports (TCP and UDP, as
// serf needs both) and releases them just before the agent binds them.
func freePorts(n int) ([]int, error) {
	var ports []int
	var closers []io.Closer
	defer func() {
		for _, c := range closers {
			c.Close()
		}
	}()
	for len(ports) < n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		port := ln.Addr().(*net.TCPAddr).Port
		pc, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil { // the UDP side is taken: try another port
			ln.Close()
			continue
		}
		closers = append(closers, ln, pc)
		ports = append(ports, port)
	}
	return ports, nil
}

// lockedBuffer collects the agent's output for failure reports.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 1<<20 { // keep the tail bounded
		l.b.Reset()
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// StartConsulAgent runs a single-server consul agent (its own raft with
// bootstrap-expect 1, data under t.TempDir) on free loopback ports, DNS
// and gRPC off, session_ttl_min = "1s" so 2 s TTLs work, waits until it has
// a leader, and stops it on t.Cleanup (also when the start fails). Unlike
// a -dev agent it keeps its data on disk, so Restart stops and starts it
// again with the same data and ports. A missing binary skips the test, or
// fails it under CI=true (RequireComponent).
func StartConsulAgent(t testing.TB) Server {
	t.Helper()
	bin, err := FindConsul()
	RequireComponent(t, "consul agent", err)
	dir := t.TempDir()
	// A port taken between freePorts and the agent's bind makes the agent
	// exit at once; try a few times with new ports.
	for attempt := 0; ; attempt++ {
		ports, err := freePorts(4)
		if err != nil {
			t.Fatalf("consul agent: reserve ports: %v", err)
		}
		a := &consulAgent{bin: bin, dir: dir, ports: ports, out: &lockedBuffer{}}
		err = a.start()
		if err == nil {
			t.Cleanup(a.stop)
			t.Logf("consul agent %s up on %s", bin, a.addr())
			return Server{
				Endpoint:         a.addr(),
				Addr:             a.addr(),
				NewProxyEndpoint: func(addr string) string { return addr },
				Restart: func(t testing.TB) {
					t.Helper()
					a.stop()
					if err := a.start(); err != nil {
						t.Fatalf("restart consul agent: %v\nagent output:\n%s", err, a.out.String())
					}
				},
			}
		}
		if attempt >= 2 {
			t.Fatalf("consul agent did not start: %v\nagent output:\n%s", err, a.out.String())
		}
		t.Logf("consul agent start attempt %d failed (%v); retrying with new ports", attempt+1, err)
	}
}

// consulAgent is one agent process, restartable on the same ports and data.
type consulAgent struct {
	bin, dir string
	ports    []int // http, serf-lan, serf-wan, server
	out      *lockedBuffer
	extra    []string // further agent flags

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
}

func (a *consulAgent) addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(a.ports[0]))
}

// start runs the agent and waits for its leader; on failure the process is
// stopped.
func (a *consulAgent) start() error {
	cmd := exec.Command(a.bin, "agent", "-server", "-bootstrap-expect", "1",
		"-client", "127.0.0.1", "-bind", "127.0.0.1",
		"-http-port", strconv.Itoa(a.ports[0]),
		"-serf-lan-port", strconv.Itoa(a.ports[1]),
		"-serf-wan-port", strconv.Itoa(a.ports[2]),
		"-server-port", strconv.Itoa(a.ports[3]),
		"-dns-port", "-1", "-grpc-port", "-1",
		"-hcl", `session_ttl_min = "1s"`,
		"-hcl", `performance { raft_multiplier = 1 }`,
		"-node", fmt.Sprintf("objdbtest-%d-%d", os.Getpid(), a.ports[0]),
		"-data-dir", a.dir,
		"-log-level", "warn",
	)
	cmd.Args = append(cmd.Args, a.extra...)
	cmd.Stdout, cmd.Stderr = a.out, a.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", a.bin, err)
	}
	exited := make(chan struct{})
	a.mu.Lock()
	a.cmd, a.exited = cmd, exited
	a.mu.Unlock()
	go func() {
		err := cmd.Wait()
		a.mu.Lock()
		a.waitErr = err
		a.mu.Unlock()
		close(exited)
	}()
	if err := waitConsulLeader(a.addr(), exited, a.exitErr, consulStartTimeout); err != nil {
		a.stop()
		return err
	}
	return nil
}

func (a *consulAgent) exitErr() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.waitErr
}

// stop ends the process (SIGTERM, then SIGKILL after 10 s) and waits.
func (a *consulAgent) stop() {
	a.mu.Lock()
	cmd, exited := a.cmd, a.exited
	a.mu.Unlock()
	if cmd == nil {
		return
	}
	select {
	case <-exited:
		return
	default:
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-exited
	}
}

// CheckConsulLeader is one probe of a consul agent's /v1/status/leader
// URL: it names a leader once the servers' raft has elected one.
func CheckConsulLeader(hc *http.Client, url string) error {
	resp, err := hc.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	leader := string(bytes.Trim(bytes.TrimSpace(body), `"`))
	if resp.StatusCode != http.StatusOK || leader == "" {
		return fmt.Errorf("leader %q (HTTP %d)", leader, resp.StatusCode)
	}
	return nil
}

// waitConsulLeader polls GET /v1/status/leader until it names a leader,
// the agent exits, or the timeout passes.
func waitConsulLeader(addr string, exited <-chan struct{}, exitErr func() error, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	url := "http://" + addr + "/v1/status/leader"
	var last error
	for {
		if last = CheckConsulLeader(client, url); last == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("agent exited: %v", exitErr())
		case <-ctx.Done():
			return fmt.Errorf("no leader within %v: %v", timeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
