// Package ovstest starts a private Open vSwitch (ovsdb-server and
// ovs-vswitchd with the userspace datapath) inside a fresh network namespace
// for one test, and tears it down when the test ends, even when it fails.
//
// Every instance keeps its state in its own folder (OVS_RUNDIR, OVS_DBDIR,
// OVS_LOGDIR and OVS_SYSCONFDIR all point there), so instances never share
// anything with each other or with the system's own OVS service. Bridges
// must be created with datapath_type=netdev: the kernel datapath is not
// available in the test machines.
//
//	ovs := ovstest.Start(t)
//	out, err := ovs.Vsctl("add-br", "br0", "--", "set", "bridge", "br0", "datapath_type=netdev")
//
// ovs-vswitchd runs inside the namespace, so an OpenFlow controller it must
// reach has to listen on the namespace's loopback: use ListenTCP.
package ovstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contiv/netplugin/test/orphans"
)

// SchemaPath is the Open_vSwitch database schema installed with OVS.
const SchemaPath = "/usr/share/openvswitch/vswitch.ovsschema"

// NamePrefix starts the name of every namespace this package creates.
const NamePrefix = "ovst-"

// markers records, for each namespace this package created, the test
// process that owns it and the instance folder, so that a later run can
// remove what a killed test binary (e.g. a -timeout panic) left behind.
const markers = orphans.Markers("/run/ovstest")

// cmdTimeout bounds every command the harness runs.
const cmdTimeout = 60 * time.Second

// binaries the harness needs.
var binaries = []string{"ovsdb-tool", "ovsdb-server", "ovs-vswitchd", "ovs-vsctl", "ovs-ofctl", "ovs-appctl", "ip"}

// OVS is one private Open vSwitch instance in its own network namespace.
type OVS struct {
	// Dir holds the database, sockets, pidfiles and logs.
	Dir string
	// DBSock is the path of ovsdb-server's unix socket (connect with
	// "unix:"+DBSock).
	DBSock string
	// DBFile is the database file.
	DBFile string
	// NetNS is the network namespace name (as "ip netns" knows it).
	NetNS string

	env []string
}

// Available reports whether the OVS binaries and "ip" are installed and the
// process may create network namespaces.
func Available() error {
	for _, b := range binaries {
		if _, err := exec.LookPath(b); err != nil {
			return fmt.Errorf("ovstest: %s not found: %w", b, err)
		}
	}
	if _, err := os.Stat(SchemaPath); err != nil {
		return fmt.Errorf("ovstest: schema: %w", err)
	}
	if os.Geteuid() != 0 {
		return errors.New("ovstest: must run as root to create network namespaces")
	}
	return nil
}

// Require fails the test when OVS is missing and CI=true, and skips it
// otherwise.
func Require(t testing.TB) {
	t.Helper()
	err := Available()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("Open vSwitch is required in CI: %v", err)
	}
	t.Skipf("Open vSwitch not available: %v", err)
}

// Start creates a namespace, a database and starts ovsdb-server and
// ovs-vswitchd in it. Everything is removed in t.Cleanup.
func Start(t testing.TB) *OVS {
	t.Helper()
	Require(t)
	reapOrphans(t)

	dir := shortTempDir(t)
	o := &OVS{
		Dir:    dir,
		DBSock: filepath.Join(dir, "db.sock"),
		DBFile: filepath.Join(dir, "conf.db"),
		NetNS:  NamePrefix + randomHex(4),
	}
	o.env = append(os.Environ(),
		"OVS_RUNDIR="+dir, "OVS_DBDIR="+dir, "OVS_LOGDIR="+dir, "OVS_SYSCONFDIR="+dir)

	if out, err := run(nil, "ip", "netns", "add", o.NetNS); err != nil {
		t.Fatalf("ovstest: create namespace %s: %v: %s", o.NetNS, err, out)
	}
	writeMarker(t, o)
	t.Cleanup(func() { o.teardown(t) })

	if out, err := o.Exec("ip", "link", "set", "lo", "up"); err != nil {
		t.Fatalf("ovstest: bring up lo in %s: %v: %s", o.NetNS, err, out)
	}
	o.startDaemons(t)
	return o
}

// StartInNetNS starts ovsdb-server and ovs-vswitchd inside the existing
// namespace netns (its owner creates and deletes it) with their state in
// dir, created if missing; dir should be short, since unix socket paths in
// it are limited to 108 bytes. The daemons are stopped in t.Cleanup; the
// namespace and dir are left to the caller. It is how a harness that
// builds its own topology gives each simulated host its own switch.
func StartInNetNS(t testing.TB, netns, dir string) *OVS {
	t.Helper()
	Require(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("ovstest: state dir: %v", err)
	}
	o := &OVS{
		Dir:    dir,
		DBSock: filepath.Join(dir, "db.sock"),
		DBFile: filepath.Join(dir, "conf.db"),
		NetNS:  netns,
	}
	o.env = append(os.Environ(),
		"OVS_RUNDIR="+dir, "OVS_DBDIR="+dir, "OVS_LOGDIR="+dir, "OVS_SYSCONFDIR="+dir)
	t.Cleanup(func() { o.stopDaemons(t) })
	o.startDaemons(t)
	return o
}

// startDaemons creates the database and starts both daemons.
func (o *OVS) startDaemons(t testing.TB) {
	t.Helper()
	if out, err := run(o.env, "ovsdb-tool", "create", o.DBFile, SchemaPath); err != nil {
		t.Fatalf("ovstest: create database: %v: %s", err, out)
	}
	o.StartOVSDB(t)
	if out, err := o.Vsctl("--no-wait", "init"); err != nil {
		t.Fatalf("ovstest: ovs-vsctl init: %v: %s", err, out)
	}
	o.StartVswitchd(t)
}

// shortTempDir returns t.TempDir(), or a shorter folder (removed in
// cleanup) when t.TempDir() is too long for unix socket paths (108 bytes
// including the bridge management sockets ovs-vswitchd creates there).
func shortTempDir(t testing.TB) string {
	dir := t.TempDir()
	if len(dir) <= 60 {
		return dir
	}
	short, err := os.MkdirTemp("", NamePrefix)
	if err != nil {
		t.Fatalf("ovstest: temp dir: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(short) })
	return short
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return hex.EncodeToString(b)
}

func (o *OVS) pidfile(daemon string) string { return filepath.Join(o.Dir, daemon+".pid") }
func (o *OVS) ctlfile(daemon string) string { return filepath.Join(o.Dir, daemon+".ctl") }
func (o *OVS) logfile(daemon string) string { return filepath.Join(o.Dir, daemon+".log") }

// PID is the process id of one of the instance's daemons ("ovsdb-server"
// or "ovs-vswitchd"), read from its pidfile.
func (o *OVS) PID(daemon string) (int, error) {
	b, err := os.ReadFile(o.pidfile(daemon))
	if err != nil {
		return 0, fmt.Errorf("ovstest: %s pid: %w", daemon, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("ovstest: %s pidfile %s: %w", daemon, o.pidfile(daemon), err)
	}
	return pid, nil
}

// StartOVSDB starts ovsdb-server on the instance's database file and socket.
func (o *OVS) StartOVSDB(t testing.TB) {
	t.Helper()
	const d = "ovsdb-server"
	out, err := o.Exec(d, o.DBFile,
		"--remote=punix:"+o.DBSock,
		"--pidfile="+o.pidfile(d), "--unixctl="+o.ctlfile(d),
		"--log-file="+o.logfile(d), "--detach")
	if err != nil {
		t.Fatalf("ovstest: start %s: %v: %s", d, err, out)
	}
	o.waitSocket(t, o.DBSock)
}

// KillOVSDB stops ovsdb-server (SIGTERM, then SIGKILL after 5 s) and waits
// until it is gone. The database file and socket path are kept.
func (o *OVS) KillOVSDB(t testing.TB) {
	t.Helper()
	if err := killByPidfile(o.pidfile("ovsdb-server")); err != nil {
		t.Fatalf("ovstest: kill ovsdb-server: %v", err)
	}
}

// RestartOVSDB stops ovsdb-server and starts it again on the same database
// file and socket.
func (o *OVS) RestartOVSDB(t testing.TB) {
	t.Helper()
	o.KillOVSDB(t)
	o.StartOVSDB(t)
}

// StartVswitchd starts ovs-vswitchd against the instance's database.
func (o *OVS) StartVswitchd(t testing.TB) {
	t.Helper()
	const d = "ovs-vswitchd"
	out, err := o.Exec(d, "unix:"+o.DBSock,
		"--pidfile="+o.pidfile(d), "--unixctl="+o.ctlfile(d),
		"--log-file="+o.logfile(d), "--detach")
	if err != nil {
		t.Fatalf("ovstest: start %s: %v: %s", d, err, out)
	}
}

// KillVswitchd stops ovs-vswitchd and waits until it is gone.
func (o *OVS) KillVswitchd(t testing.TB) {
	t.Helper()
	if err := killByPidfile(o.pidfile("ovs-vswitchd")); err != nil {
		t.Fatalf("ovstest: kill ovs-vswitchd: %v", err)
	}
}

// RestartVswitchd stops ovs-vswitchd and starts it again; the database is
// kept, so the switch comes back with the same bridges and ports.
func (o *OVS) RestartVswitchd(t testing.TB) {
	t.Helper()
	o.KillVswitchd(t)
	o.StartVswitchd(t)
}

func (o *OVS) waitSocket(t testing.TB, path string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("ovstest: %s not accepting connections: %v", path, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Exec runs a program inside the namespace with the instance's OVS
// environment and returns its combined output.
func (o *OVS) Exec(name string, args ...string) (string, error) {
	return run(o.env, "ip", append([]string{"netns", "exec", o.NetNS, name}, args...)...)
}

// Vsctl runs ovs-vsctl against the instance's database. Without
// "--no-wait" ovs-vsctl waits for ovs-vswitchd to apply the change, so it
// fails after its timeout (30 s) while ovs-vswitchd is down.
func (o *OVS) Vsctl(args ...string) (string, error) {
	return o.Exec("ovs-vsctl", append([]string{"--db=unix:" + o.DBSock, "--timeout=30"}, args...)...)
}

// Ofctl runs ovs-ofctl in the instance (bridge names resolve to the
// bridges' management sockets in Dir).
func (o *OVS) Ofctl(args ...string) (string, error) {
	return o.Exec("ovs-ofctl", args...)
}

// Groups returns the OpenFlow 1.3 groups of bridge as `ovs-ofctl
// dump-groups` prints them, one "group_id=…" line each, sorted.
func (o *OVS) Groups(bridge string) ([]string, error) {
	out, err := o.Ofctl("-O", "OpenFlow13", "dump-groups", bridge)
	if err != nil {
		return nil, fmt.Errorf("dump-groups %s: %w: %s", bridge, err, out)
	}
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "group_id=") {
			lines = append(lines, l)
		}
	}
	sort.Strings(lines)
	return lines, nil
}

// Appctl runs ovs-appctl against a daemon of the instance ("ovsdb-server"
// or "ovs-vswitchd").
func (o *OVS) Appctl(daemon string, args ...string) (string, error) {
	return o.Exec("ovs-appctl", append([]string{"-t", o.ctlfile(daemon)}, args...)...)
}

// Do runs fn on an OS thread switched into the instance's namespace.
// Sockets created by fn (listeners and connections) stay in that namespace
// after Do returns. fn must not start goroutines that expect to inherit the
// namespace.
func (o *OVS) Do(fn func() error) error {
	return doInNetNS(o.NetNS, fn)
}

// ListenTCP opens a TCP listener on 127.0.0.1 (random port) inside the
// namespace, where ovs-vswitchd can reach it, e.g. as an OpenFlow
// controller target "tcp:"+l.Addr().String(). It is closed in t.Cleanup.
func (o *OVS) ListenTCP(t testing.TB) net.Listener {
	t.Helper()
	var l net.Listener
	err := o.Do(func() error {
		var err error
		l, err = net.Listen("tcp", "127.0.0.1:0")
		return err
	})
	if err != nil {
		t.Fatalf("ovstest: listen in %s: %v", o.NetNS, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// DialContext opens a connection from inside the namespace (e.g. to an
// ovsdb-server TCP remote on the namespace's loopback). It has the shape
// of net.Dialer.DialContext.
func (o *OVS) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := o.Do(func() error {
		var d net.Dialer
		var err error
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// AddOVSDBRemote makes ovsdb-server also listen on TCP on the namespace's
// loopback and returns "tcp:127.0.0.1:PORT" (reachable with DialContext).
func (o *OVS) AddOVSDBRemote(t testing.TB) string {
	t.Helper()
	var port int
	err := o.Do(func() error {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		port = l.Addr().(*net.TCPAddr).Port
		return l.Close()
	})
	if err != nil {
		t.Fatalf("ovstest: pick port in %s: %v", o.NetNS, err)
	}
	remote := fmt.Sprintf("ptcp:%d:127.0.0.1", port)
	if out, err := o.Appctl("ovsdb-server", "ovsdb-server/add-remote", remote); err != nil {
		t.Fatalf("ovstest: add remote %s: %v: %s", remote, err, out)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := o.DialContext(context.Background(), "tcp", addr)
		if err == nil {
			c.Close()
			return "tcp:" + addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("ovstest: ovsdb-server not listening on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// DoInNetNS runs fn on an OS thread switched into the named namespace (as
// "ip netns" knows it); see OVS.Do for what fn may do.
func DoInNetNS(name string, fn func() error) error {
	return doInNetNS(name, fn)
}

func doInNetNS(name string, fn func() error) error {
	target, err := os.Open(netnsPath(name))
	if err != nil {
		return fmt.Errorf("ovstest: open namespace %s: %w", name, err)
	}
	defer target.Close()
	errc := make(chan error, 1)
	go func() {
		// A thread whose namespace could not be restored is never
		// unlocked, so the runtime terminates it with the goroutine.
		runtime.LockOSThread()
		orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("ovstest: open own namespace: %w", err)
			return
		}
		defer orig.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("ovstest: enter namespace %s: %w", name, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- errors.Join(ferr, fmt.Errorf("ovstest: leave namespace %s: %w", name, err))
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

func netnsPath(name string) string {
	p := filepath.Join("/run/netns", name)
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return filepath.Join("/var/run/netns", name)
}

// Logs returns the last lines of both daemons' logs.
func (o *OVS) Logs() string {
	var b strings.Builder
	for _, d := range []string{"ovsdb-server", "ovs-vswitchd"} {
		data, err := os.ReadFile(o.logfile(d))
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > 40 {
			lines = lines[len(lines)-40:]
		}
		fmt.Fprintf(&b, "--- %s ---\n%s\n", d, strings.Join(lines, "\n"))
	}
	return b.String()
}

// stopDaemons stops both daemons (logging their logs first if the test
// failed).
func (o *OVS) stopDaemons(t testing.TB) {
	if t.Failed() {
		t.Logf("ovstest: logs of %s:\n%s", o.NetNS, o.Logs())
	}
	for _, d := range []string{"ovs-vswitchd", "ovsdb-server"} {
		if err := killByPidfile(o.pidfile(d)); err != nil {
			t.Errorf("ovstest: teardown %s: %v", d, err)
		}
	}
}

func (o *OVS) teardown(t testing.TB) {
	o.stopDaemons(t)
	if out, err := run(nil, "ip", "netns", "delete", o.NetNS); err != nil {
		t.Errorf("ovstest: delete namespace %s: %v: %s", o.NetNS, err, out)
	}
	markers.Remove(o.NetNS)
}

// killByPidfile stops the process named in pidfile (SIGTERM, SIGKILL after
// 5 s) and waits until it has exited. A missing pidfile or a dead process
// is not an error.
func killByPidfile(pidfile string) error {
	data, err := os.ReadFile(pidfile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 1 {
		return fmt.Errorf("bad pidfile %s: %q", pidfile, data)
	}
	if !isOVSDaemon(pid) {
		os.Remove(pidfile)
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill %d: %w", pid, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for orphans.Alive(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			deadline = time.Now().Add(5 * time.Second)
			for orphans.Alive(pid) {
				if time.Now().After(deadline) {
					return fmt.Errorf("process %d does not exit", pid)
				}
				time.Sleep(10 * time.Millisecond)
			}
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	os.Remove(pidfile)
	return nil
}

// isOVSDaemon guards against killing an unrelated process that reused a
// stale pid.
func isOVSDaemon(pid int) bool {
	if !orphans.Alive(pid) {
		return false
	}
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return false
	}
	c := strings.TrimSpace(string(comm))
	return strings.HasPrefix(c, "ovsdb-server") || strings.HasPrefix(c, "ovs-vswitchd")
}

func run(env []string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("%s timed out after %v: %w", name, cmdTimeout, ctx.Err())
	}
	return string(out), err
}

// writeMarker records the owner of a namespace, see reapOrphans.
func writeMarker(t testing.TB, o *OVS) {
	if err := markers.Write(o.NetNS, o.Dir); err != nil {
		t.Logf("ovstest: %v", err)
	}
}

// reapOrphans removes instances whose owning test process is gone (a test
// binary killed by -timeout runs no cleanups). Only namespaces with our
// prefix and a marker are touched.
func reapOrphans(t testing.TB) {
	for _, o := range markers.Orphans(NamePrefix) {
		for _, d := range []string{"ovs-vswitchd", "ovsdb-server"} {
			killByPidfile(filepath.Join(o.Dir, d+".pid"))
		}
		if _, err := os.Stat(netnsPath(o.Name)); err == nil {
			run(nil, "ip", "netns", "delete", o.Name)
		}
		if filepath.Dir(o.Dir) == filepath.Clean(os.TempDir()) && strings.HasPrefix(filepath.Base(o.Dir), NamePrefix) {
			os.RemoveAll(o.Dir) // a shortTempDir that was never cleaned up
		}
		markers.Remove(o.Name)
		t.Logf("ovstest: removed orphaned instance %s (owner %d gone)", o.Name, o.Owner)
	}
}
