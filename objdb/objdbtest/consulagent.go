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

// StartConsulAgent runs a dev-mode consul agent on free loopback ports
// (DNS and gRPC off, session_ttl_min = "1s" so 2 s TTLs work) with its
// data under t.TempDir, waits until it has a leader, and stops it on
// t.Cleanup (also when the start fails). A missing binary skips the test,
// or fails it under CI=true (RequireComponent). Restart is nil: a dev agent
// keeps its data in memory.
func StartConsulAgent(t testing.TB) Server {
	t.Helper()
	bin, err := FindConsul()
	RequireComponent(t, "consul agent", err)

	var ports []int
	var cmd *exec.Cmd
	out := &lockedBuffer{}
	dir := t.TempDir()
	// A port taken between freePorts and the agent's bind makes the agent
	// exit at once; try a few times with new ports.
	for attempt := 0; ; attempt++ {
		ports, err = freePorts(4)
		if err != nil {
			t.Fatalf("consul agent: reserve ports: %v", err)
		}
		cmd = exec.Command(bin, "agent", "-dev",
			"-client", "127.0.0.1", "-bind", "127.0.0.1",
			"-http-port", strconv.Itoa(ports[0]),
			"-serf-lan-port", strconv.Itoa(ports[1]),
			"-serf-wan-port", strconv.Itoa(ports[2]),
			"-server-port", strconv.Itoa(ports[3]),
			"-dns-port", "-1", "-grpc-port", "-1",
			"-hcl", `session_ttl_min = "1s"`,
			"-node", fmt.Sprintf("objdbtest-%d-%d", os.Getpid(), ports[0]),
			"-data-dir", dir,
			"-log-level", "warn",
		)
		cmd.Stdout, cmd.Stderr = out, out
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatalf("start consul agent %s: %v", bin, err)
		}
		exited := make(chan struct{})
		var waitErr error
		go func() { waitErr = cmd.Wait(); close(exited) }()
		stop := func() {
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
		t.Cleanup(stop)

		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
		err = waitConsulLeader(addr, exited, &waitErr, consulStartTimeout)
		if err == nil {
			t.Logf("consul agent %s up on %s (pid %d)", bin, addr, cmd.Process.Pid)
			return Server{
				Endpoint:         addr,
				Addr:             addr,
				NewProxyEndpoint: func(a string) string { return a },
				Restart:          nil,
			}
		}
		stop()
		if attempt >= 2 {
			t.Fatalf("consul agent did not start: %v\nagent output:\n%s", err, out.String())
		}
		t.Logf("consul agent start attempt %d failed (%v); retrying with new ports", attempt+1, err)
	}
}

// waitConsulLeader polls GET /v1/status/leader until it names a leader,
// the agent exits, or the timeout passes.
func waitConsulLeader(addr string, exited <-chan struct{}, waitErr *error, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	url := "http://" + addr + "/v1/status/leader"
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			leader := string(bytes.Trim(bytes.TrimSpace(body), `"`))
			if resp.StatusCode == http.StatusOK && leader != "" {
				return nil
			}
			last = fmt.Errorf("leader %q (HTTP %d)", leader, resp.StatusCode)
		} else {
			last = err
		}
		select {
		case <-exited:
			return fmt.Errorf("agent exited: %v", *waitErr)
		case <-ctx.Done():
			return fmt.Errorf("no leader within %v: %v", timeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
