// Package nmproc runs netmaster as a real process for tests: the calling
// test binary re-executed, its TestMain calling RunDaemonIfAsked first.
// netmaster/master's restart and failover tests and test/stall's store
// faults use it.
package nmproc

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contiv/netplugin/netmaster/cmdline"
	"github.com/contiv/netplugin/netmaster/master"
	"github.com/contiv/netplugin/objdb/objdbtest"
	"github.com/contiv/netplugin/utils/certgen"
)

// envDaemon makes the test binary run as a netmaster; its arguments follow
// "--".
const envDaemon = "NMPROC_NETMASTER_DAEMON"

// RunDaemonIfAsked runs the netmaster and exits when the binary was
// started by Start as a netmaster process; otherwise it returns at once.
func RunDaemonIfAsked() {
	if os.Getenv(envDaemon) != "1" {
		return
	}
	args := []string{"netmaster"}
	for i, a := range os.Args {
		if a == "--" {
			args = append(args, os.Args[i+1:]...)
			break
		}
	}
	if err := cmdline.App(master.NewLeader).Run(args); err != nil {
		fmt.Fprintln(os.Stderr, "netmaster:", err)
		os.Exit(22)
	}
	os.Exit(0)
}

// FreeAddr returns a free 127.0.0.1 port.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Proc is a netmaster process.
type Proc struct {
	// Addr is the ip:port of its API (external and internal address).
	Addr string

	t    testing.TB
	args []string
	cmd  *exec.Cmd
	out  *objdbtest.SyncBuffer
	done chan struct{}
}

// Start runs a netmaster in test mode (vlan, bridge, log level warn)
// serving on addr ("": a free port) with extra flags. It is killed when
// the test ends; a failed test logs the end of its output.
func Start(t testing.TB, addr string, flags ...string) *Proc {
	t.Helper()
	if addr == "" {
		addr = FreeAddr(t)
	}
	base := []string{"--mode", "test", "--netmode", "vlan", "--fwdmode", "bridge", "--log-level", "warn",
		"--external-address", addr, "--internal-address", addr}
	if !slices.ContainsFunc(flags, func(f string) bool { return strings.HasPrefix(f, "--rpc-tls") || f == "--insecure-rpc" }) {
		// The ofnet RPC's mutual TLS, the secure default.
		c, err := certgen.WriteCluster(t.TempDir(), nil, nil)
		if err != nil {
			t.Fatalf("netmaster certificates: %v", err)
		}
		base = append(base, c.MasterArgs()...)
	}
	p := &Proc{t: t, Addr: addr, args: append(base, flags...)}
	p.Restart()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("netmaster %s output:\n%s", p.Addr, Tail(p.Output(), 8000))
		}
	})
	return p
}

// Restart starts the process again with the same flags (after it ended).
func (p *Proc) Restart() {
	p.t.Helper()
	p.cmd = exec.Command(os.Args[0], append([]string{"--"}, p.args...)...)
	p.cmd.Env = append(os.Environ(), envDaemon+"=1")
	p.out = &objdbtest.SyncBuffer{}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		p.t.Fatalf("start netmaster: %v", err)
	}
	p.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		_ = cmd.Wait()
		close(done)
	}(p.cmd, p.done)
}

// Signal sends sig and waits (up to 20 s, then SIGKILL) for the process to
// end; nothing when it has ended already.
func (p *Proc) Signal(sig syscall.Signal) {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// Kill ends the process with SIGKILL.
func (p *Proc) Kill() { p.Signal(syscall.SIGKILL) }

// Stop ends the process with SIGTERM (it resigns and deregisters).
func (p *Proc) Stop() { p.Signal(syscall.SIGTERM) }

// URL is the base URL of its API.
func (p *Proc) URL() string { return "http://" + p.Addr }

// Output is the process's log so far (of its current run).
func (p *Proc) Output() string { return p.out.String() }

// PID is the process id of the current run (0 before it started).
func (p *Proc) PID() int {
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Done is closed when the current run of the process has ended.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Role asks /info whether this netmaster leads: "leader", "follower", or
// "" when it is unreachable or knows no leader.
func (p *Proc) Role() string {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(p.URL() + "/info")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var info map[string]any
	if json.NewDecoder(resp.Body).Decode(&info) != nil {
		return ""
	}
	// A follower proxies /info to the leader: tell the roles apart by the
	// lock holder.
	if holder, _ := info["leader-ip"].(string); holder == p.Addr {
		return "leader"
	} else if holder != "" {
		return "follower"
	}
	return ""
}

// WaitRole waits until Role is role and returns how long that took; the
// test fails if the process ends or within passes first.
func (p *Proc) WaitRole(role string, within time.Duration) time.Duration {
	p.t.Helper()
	start := time.Now()
	for time.Since(start) < within {
		if p.Role() == role {
			return time.Since(start)
		}
		select {
		case <-p.done:
			p.t.Fatalf("netmaster %s exited; output:\n%s", p.Addr, Tail(p.Output(), 8000))
		default:
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.t.Fatalf("netmaster %s not %s within %v; output:\n%s", p.Addr, role, within, Tail(p.Output(), 8000))
	return 0
}

// Tail is the last n bytes of s.
func Tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
