package testbed

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/contiv/netplugin/test/orphans"
)

// Docker Engines in the testbed (Config.Docker): every host runs its own
// dockerd inside its network namespace, beside its netplugin (the engine
// moves the link netplugin hands over at Join into the container, so both
// must share the namespace). The engine has its own data root, exec root,
// API socket, cgroup parent and, through a private mount namespace, its
// own /run/docker/plugins: the host's PluginDir, where its netplugin
// serves the driver socket. No iptables, no default bridge, storage driver
// fuse-overlayfs (overlay2 does not work inside this machine's container).
// A busybox image (BusyboxImage) is imported from Debian's busybox-static;
// there is no registry.

// BusyboxImage is the image every engine has.
const BusyboxImage = "tbbusybox"

// PluginName is the docker driver name of the testbed's netplugins.
const PluginName = "netplugin"

// Bounded waits of the engines.
const (
	engineReadyTimeout = 60 * time.Second
	engineStopGrace    = 20 * time.Second
	dockerCmdTimeout   = 90 * time.Second
)

// Engine is one host's dockerd.
type Engine struct {
	Dir    string // data root, exec root, socket, log
	Socket string // API socket
	// CgroupParent holds every container of this engine.
	CgroupParent string

	host *Host
	proc *daemon
	// holder keeps the engine's mount namespace (private, with the
	// plugin folder mounted over /run/docker/plugins) across engine
	// restarts: the sandboxes' network namespace mounts live there, so a
	// restarted live-restore engine finds its running containers'
	// namespaces.
	holder      *daemon
	dockerdArgs []string
}

// holderLifetime bounds the mount namespace holder (it is killed with the
// engine long before).
const holderLifetime = 6 * time.Hour

// PluginDir is where the host's netplugin serves the docker plugin socket
// (the engine sees it as /run/docker/plugins).
func (h *Host) PluginDir() string { return filepath.Join(h.Dir, "plugins") }

// DockerSocket is the API socket of the host's engine.
func (h *Host) DockerSocket() string { return filepath.Join(h.Dir, "docker", "docker.sock") }

// Engine returns the host's engine (nil without Config.Docker).
func (h *Host) Engine() *Engine { return h.engine }

// requireDocker fails (CI=true) or skips when a program the engines need
// is missing.
func requireDocker(t testing.TB) {
	t.Helper()
	for _, tool := range []string{"dockerd", "docker", "nsenter", "unshare", "fuse-overlayfs", "busybox"} {
		if _, err := exec.LookPath(tool); err != nil {
			RequireComponent(t, tool+" (Debian packages docker.io, util-linux, fuse-overlayfs, busybox-static)", err)
		}
	}
}

// StartEngine starts the host's dockerd (again) and waits until it
// answers; the first start imports BusyboxImage.
func (h *Host) StartEngine(t testing.TB) {
	t.Helper()
	if h.engine == nil {
		dir := filepath.Join(h.Dir, "docker")
		h.engine = &Engine{Dir: dir, Socket: h.DockerSocket(), CgroupParent: "/" + h.NS, host: h}
		if err := h.engine.prepare(); err != nil {
			t.Fatalf("testbed: engine of %s: %v", h.Name, err)
		}
		t.Cleanup(func() {
			if err := h.engine.destroy(); err != nil {
				t.Errorf("testbed: %v", err)
			}
		})
	}
	e := h.engine
	if err := e.startHolder(); err != nil {
		t.Fatalf("testbed: %v", err)
	}
	if err := e.proc.start(); err != nil {
		t.Fatalf("testbed: %v", err)
	}
	if err := e.waitReady(engineReadyTimeout); err != nil {
		t.Fatalf("testbed: engine of %s: %v\n%s", h.Name, err, e.proc.logs(30))
	}
	if _, err := e.Docker("image", "inspect", BusyboxImage); err != nil {
		if err := e.importBusybox(); err != nil {
			t.Fatalf("testbed: engine of %s: %v", h.Name, err)
		}
	}
}

func (e *Engine) prepare() error {
	for _, d := range []string{e.Dir, e.host.PluginDir(), "/run/docker/plugins"} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	cfg := filepath.Join(e.Dir, "daemon.json")
	// Its own configuration: the machine's /etc/docker/daemon.json sets
	// data-root and storage-driver, which clash with the flags.
	conf := "{}\n"
	if e.host.tb.Config.LiveRestore {
		conf = `{"live-restore": true}` + "\n"
	}
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		return err
	}
	e.dockerdArgs = []string{"dockerd", "--config-file", cfg,
		"--data-root", filepath.Join(e.Dir, "data"), "--exec-root", filepath.Join(e.Dir, "exec"),
		"-H", "unix://" + e.Socket, "--pidfile", filepath.Join(e.Dir, "docker.pid"),
		"--iptables=false", "--ip6tables=false", "--bridge=none", "--storage-driver=fuse-overlayfs",
		"--cgroup-parent", e.CgroupParent, "--log-level", "info"}
	// The holder makes the private mount namespace once; every start of
	// the engine enters it. nsenter, unshare and sh exec in place: each
	// daemon's pid is sleep's and dockerd's.
	script := fmt.Sprintf("set -e; mount --bind %s /run/docker/plugins; exec sleep %d", e.host.PluginDir(), int(holderLifetime.Seconds()))
	e.holder = &daemon{name: "mount namespace of dockerd " + e.host.NS, ns: e.host.NS, logPath: filepath.Join(e.Dir, "holder.log"),
		direct: []string{"nsenter", "--net=" + filepath.Join(netnsDir(), e.host.NS), "unshare", "-m", "--propagation", "private",
			"sh", "-c", script}}
	e.proc = &daemon{name: "dockerd " + e.host.NS, ns: e.host.NS, logPath: filepath.Join(e.Dir, "dockerd.log")}
	return nil
}

// startHolder starts the mount namespace holder (once) and points the
// engine's command line at its namespaces.
func (e *Engine) startHolder() error {
	if e.holder.running() {
		return nil
	}
	if err := e.holder.start(); err != nil {
		return err
	}
	e.holder.mu.Lock()
	pid := e.holder.cmd.Process.Pid
	e.holder.mu.Unlock()
	// Ready once its mount namespace differs from ours (the bind mount
	// comes before the exec of sleep; wait for sleep).
	deadline := time.Now().Add(10 * time.Second)
	for {
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if strings.TrimSpace(string(comm)) == "sleep" {
			break
		}
		if !e.holder.running() || time.Now().After(deadline) {
			return fmt.Errorf("mount namespace of dockerd %s: not ready (%s)\n%s", e.host.NS, e.holder.exitStatus(), e.holder.logs(10))
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.proc.direct = append([]string{"nsenter", "--net=" + filepath.Join(netnsDir(), e.host.NS),
		fmt.Sprintf("--mount=/proc/%d/ns/mnt", pid)}, e.dockerdArgs...)
	return nil
}

func (e *Engine) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		_, err := e.Docker("version", "--format", "{{.Server.Version}}")
		if err == nil {
			return nil
		}
		if !e.proc.running() {
			return fmt.Errorf("dockerd exited (%s)", e.proc.exitStatus())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready within %v: %w", timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Docker runs the docker CLI against the engine and returns its combined
// output (trimmed).
func (e *Engine) Docker(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), dockerCmdTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", append([]string{"-H", "unix://" + e.Socket}, args...)...).CombinedOutput()
	s := strings.TrimSpace(string(out))
	if ctx.Err() != nil {
		err = fmt.Errorf("timed out after %v", dockerCmdTimeout)
	}
	if err != nil {
		return s, fmt.Errorf("docker %s on %s: %w: %s", strings.Join(args, " "), e.host.Name, err, s)
	}
	return s, nil
}

// Docker runs the docker CLI against the host's engine.
func (h *Host) Docker(args ...string) (string, error) {
	if h.engine == nil {
		return "", fmt.Errorf("host %s runs no engine (Config.Docker)", h.Name)
	}
	return h.engine.Docker(args...)
}

// busyboxRootfs is built once per test process.
var busyboxRootfs struct {
	once sync.Once
	dir  string
	err  error
}

func (e *Engine) importBusybox() error {
	busyboxRootfs.once.Do(func() {
		dir, err := buildDir()
		if err != nil {
			busyboxRootfs.err = err
			return
		}
		root := filepath.Join(dir, "busybox-rootfs")
		os.RemoveAll(root)
		if err := os.MkdirAll(filepath.Join(root, "bin"), 0o755); err != nil {
			busyboxRootfs.err = err
			return
		}
		bb, err := exec.LookPath("busybox")
		if err == nil {
			_, err = run("cp", bb, filepath.Join(root, "bin", "busybox"))
		}
		if err == nil {
			_, err = run("chroot", root, "/bin/busybox", "--install", "-s", "/bin")
		}
		busyboxRootfs.dir, busyboxRootfs.err = root, err
	})
	if busyboxRootfs.err != nil {
		return fmt.Errorf("busybox rootfs: %w", busyboxRootfs.err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), dockerCmdTimeout)
	defer cancel()
	tar := exec.CommandContext(ctx, "tar", "-C", busyboxRootfs.dir, "-c", ".")
	imp := exec.CommandContext(ctx, "docker", "-H", "unix://"+e.Socket, "import", "-", BusyboxImage)
	pipe, err := tar.StdoutPipe()
	if err != nil {
		return err
	}
	imp.Stdin = pipe
	if err := tar.Start(); err != nil {
		return err
	}
	out, err := imp.CombinedOutput()
	if werr := tar.Wait(); err == nil && werr != nil {
		err = werr
	}
	if err != nil {
		return fmt.Errorf("import %s: %w: %s", BusyboxImage, err, out)
	}
	return nil
}

// StopEngine stops the host's dockerd with SIGTERM (which stops its
// containers), killing it after a grace period.
func (h *Host) StopEngine(t testing.TB) {
	t.Helper()
	if err := h.engine.proc.stop(syscall.SIGTERM, engineStopGrace); err != nil {
		t.Errorf("testbed: %v", err)
	}
}

// destroy removes every container, stops the engine, and kills whatever
// of it is left (container processes by their cgroup, shims and
// containerd with the namespace). Its mounts live in its private mount
// namespace and go with its last process.
func (e *Engine) destroy() error {
	var errs []error
	if e.proc.running() {
		if ids, err := e.Docker("ps", "-aq"); err == nil && ids != "" {
			if _, err := e.Docker(append([]string{"rm", "-f"}, strings.Fields(ids)...)...); err != nil {
				errs = append(errs, err)
			}
		}
		if err := e.proc.stop(syscall.SIGTERM, engineStopGrace); err != nil {
			errs = append(errs, err)
		}
	}
	if err := killCgroup(e.CgroupParent); err != nil {
		errs = append(errs, err)
	}
	// With live-restore the engine leaves containerd and the shims
	// running; they are in its mount namespace's holder's namespace too.
	if err := e.holder.stop(syscall.SIGKILL, engineStopGrace); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("engine of %s: %w", e.host.Name, errors.Join(errs...))
	}
	return nil
}

// cgroupRoot is where the cgroup v1 hierarchies (or the v2 one) are.
const cgroupRoot = "/sys/fs/cgroup"

// killCgroup kills every process in cgroup parent (in any hierarchy, at
// any depth) and removes its cgroups, deepest first.
func killCgroup(parent string) error {
	parent = strings.TrimPrefix(parent, "/")
	if parent == "" || strings.Contains(parent, "..") {
		return fmt.Errorf("refusing to clean cgroup %q", parent)
	}
	for round := 0; round < 3; round++ {
		pids := cgroupPids(parent)
		if len(pids) == 0 {
			break
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		deadline := time.Now().Add(5 * time.Second)
		for _, pid := range pids {
			for orphans.Alive(pid) && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	var dirs []string
	hiers, _ := os.ReadDir(cgroupRoot)
	for _, h := range hiers {
		top := filepath.Join(cgroupRoot, h.Name(), parent)
		filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
	}
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	var errs []error
	for _, d := range dirs {
		if err := os.Remove(d); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if pids := cgroupPids(parent); len(pids) > 0 {
		errs = append(errs, fmt.Errorf("processes %v in cgroup %s survive SIGKILL", pids, parent))
	}
	return errors.Join(errs...)
}

// cgroupPids lists the processes whose cgroup (in any hierarchy) is
// parent or below it.
func cgroupPids(parent string) []int {
	var pids []int
	procs, _ := filepath.Glob("/proc/[0-9]*/cgroup")
	for _, p := range procs {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// "<id>:<controllers>:<path>"
			parts := strings.SplitN(sc.Text(), ":", 3)
			if len(parts) == 3 && (parts[2] == "/"+parent || strings.HasPrefix(parts[2], "/"+parent+"/")) {
				var pid int
				fmt.Sscanf(filepath.Base(filepath.Dir(p)), "%d", &pid)
				pids = append(pids, pid)
				break
			}
		}
		f.Close()
	}
	return pids
}

// DockerIP is the address of a container on a docker network, from
// docker inspect.
func (h *Host) DockerIP(container, network string) (string, error) {
	return h.Docker("inspect", "-f", fmt.Sprintf("{{(index .NetworkSettings.Networks %q).IPAddress}}", network), container)
}

// DockerContainer is a container of a host's engine (busybox running
// "sleep"). Its network namespace also has a name (ip netns attach), so
// the Container helpers (Ping, ServeTraffic, CheckTraffic, ...) run in it
// from outside, at the container's own interface settings.
type DockerContainer struct {
	*Container
	ID string // the engine's container id
}

// DockerRun starts "docker run -d --name name opts... BusyboxImage sleep
// N" on the host's engine, N the engine's own lifetime (holderLifetime,
// 6 h: a container of an hour-long soak must not end by itself), and
// names its network namespace. The container is removed with the engine
// at the latest.
func (h *Host) DockerRun(name string, opts ...string) (*DockerContainer, error) {
	args := append([]string{"run", "-d", "--name", name}, opts...)
	id, err := h.Docker(append(args, BusyboxImage, "sleep", strconv.Itoa(int(holderLifetime.Seconds())))...)
	if err != nil {
		return nil, err
	}
	c := &DockerContainer{Container: &Container{Name: name, Host: h}, ID: id}
	if err := c.Attach(); err != nil {
		return c, err
	}
	return c, nil
}

// Attach names the container's network namespace (again, e.g. after a
// restart) as <prefix>d<n>.
func (c *DockerContainer) Attach() error {
	pid, err := c.Host.Docker("inspect", "-f", "{{.State.Pid}}", c.ID)
	if err != nil {
		return err
	}
	if pid == "0" {
		return fmt.Errorf("container %s is not running", c.Name)
	}
	n := c.Host.tb.containers.Add(1)
	ns := fmt.Sprintf("%sd%d", c.Host.tb.Prefix, n)
	if _, err := run("ip", "netns", "attach", ns, pid); err != nil {
		return fmt.Errorf("name the network namespace of container %s: %w", c.Name, err)
	}
	c.NS = ns
	return nil
}

// Forget drops the namespace's name (which would keep the namespace, and
// the container's link, alive after the container ends).
func (c *DockerContainer) Forget() error {
	if c.NS == "" {
		return nil
	}
	if _, err := run("ip", "netns", "delete", c.NS); err != nil {
		return err
	}
	c.NS = ""
	return nil
}

// Remove forgets the namespace and removes the container (docker rm -f).
func (c *DockerContainer) Remove() error {
	if err := c.Forget(); err != nil {
		return err
	}
	_, err := c.Host.Docker("rm", "-f", c.ID)
	return err
}

// IPOn is the container's address on a docker network.
func (c *DockerContainer) IPOn(network string) (string, error) {
	return c.Host.DockerIP(c.ID, network)
}
