package testbed

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// PauseImage is the name of the sandbox image the hosts' containerd runs
// (built locally: no image registry can be reached).
const PauseImage = "docker.io/contiv/testbed-pause:1"

// criSocketRoot holds a folder per runtime, named after its host's
// namespace, with containerd's sockets.
const criSocketRoot = "/run/contiv-testbed-cri"

// criTimeout bounds one crictl or ctr call.
const criTimeout = 2 * time.Minute

// CRIPluginDir is where Debian's containernetworking-plugins live; the
// runtime needs its loopback plugin next to the network's plugins.
const CRIPluginDir = "/usr/lib/cni"

// FindCrictl locates crictl: $CRICTL, then PATH.
func FindCrictl() (string, error) {
	if p := os.Getenv("CRICTL"); p != "" {
		return p, nil
	}
	p, err := exec.LookPath("crictl")
	if err != nil {
		return "", fmt.Errorf("crictl not found (scripts/install-deps.sh installs it): %w", err)
	}
	return p, nil
}

// CRI is a containerd with its CRI plugin running inside one simulated
// host's network namespace (its own root, state, socket, runc root, CNI
// configuration and plugin folders), driven with crictl the way a
// kubelet drives its runtime: pod sandboxes get their network from the
// CNI configuration in ConfDir, through the plugins in BinDir.
type CRI struct {
	Host *Host
	// Dir holds containerd's root and state, the configuration files
	// and containerd.log.
	Dir     string
	ConfDir string // CNI configuration (conf_dir)
	BinDir  string // CNI plugins (bin_dir)
	Socket  string // containerd's gRPC socket

	crictl   string
	confList []byte
	// cniConf and cniBin are the CNI folders as containerd sees them.
	cniConf, cniBin string
	sockDir         string
	daemon          *daemon
	mu              sync.Mutex
	sandbox         map[string]bool // pod sandbox ids run by this test
	stopOnce        sync.Once
	// mountNS is the node's mount namespace containerd runs in ("" for
	// the machine's).
	mountNS string
}

// CRIOptions set up a host's runtime.
type CRIOptions struct {
	// ConfList is the CNI network configuration list the runtime uses;
	// nil means contivk8s against the host's netplugin (CNI 1.0.0, the
	// highest version containerd 1.6 takes).
	ConfList []byte
	// Plugins are CNI plugin binaries linked into BinDir besides the
	// reference loopback plugin; nil means the contivk8s build.
	Plugins []string
	// NoConfig starts the runtime without a CNI configuration (its
	// network status stays not ready); InstallConfig writes ConfList
	// later, as a CNI's DaemonSet does.
	NoConfig bool
	// Name tells apart several runtimes on one host (default "cri"):
	// their folder under the host's and their socket's.
	Name string
	// MountNS, when set, is the node's mount namespace (a bind-mounted
	// nsfs file, kubeinstall.go) containerd runs in; there the standard
	// CNI folders /etc/cni/net.d and /opt/cni/bin are bind mounts of
	// ConfDir and BinDir, the folders' paths as the test sees them.
	MountNS         string
	ConfDir, BinDir string
}

// ContivConfList is the contivk8s configuration list for h's netplugin.
func ContivConfList(h *Host, cniVersion string) []byte {
	return fmt.Appendf(nil, `{"cniVersion":%q,"name":"contiv-net","plugins":[{"type":"contivk8s","socket":%q,"logFile":%q}]}`,
		cniVersion, h.CNISocket(), filepath.Join(h.Dir, "contivk8s.log"))
}

// ContivPortmapConfList is ContivConfList with the portmap plugin chained
// after contivk8s as packaging/k8s/contiv.yaml installs it (type
// PortmapPlugin, BuildPortmapPlugin; docs/k8s.md "Host ports").
func ContivPortmapConfList(h *Host, cniVersion string) []byte {
	return fmt.Appendf(nil, `{"cniVersion":%q,"name":"contiv-net","plugins":[{"type":"contivk8s","socket":%q,"logFile":%q},`+
		`{"type":%q,"capabilities":{"portMappings":true},"backend":"iptables","snat":true,"masqAll":true}]}`,
		cniVersion, h.CNISocket(), filepath.Join(h.Dir, "contivk8s.log"), PortmapPlugin)
}

// StartCRI starts a containerd inside the host's namespace, imports the
// pause image and waits until crictl gets an answer. When the test ends,
// every sandbox is stopped and removed (the CNI DELs go to the host's
// netplugin, still up then), containerd stops and its shims and
// folders go. A missing containerd, runc or crictl fails the test under
// CI=true and skips it elsewhere.
func (h *Host) StartCRI(t testing.TB, opt CRIOptions) *CRI {
	t.Helper()
	containerd, err := exec.LookPath("containerd")
	RequireComponent(t, "containerd (Debian package containerd)", err)
	_, err = exec.LookPath("runc")
	RequireComponent(t, "runc (Debian package runc)", err)
	_, err = exec.LookPath("ctr")
	RequireComponent(t, "ctr (Debian package containerd)", err)
	crictl, err := FindCrictl()
	RequireComponent(t, "crictl", err)
	_, err = os.Stat(filepath.Join(CRIPluginDir, "loopback"))
	RequireComponent(t, "CNI loopback plugin (Debian package containernetworking-plugins)", err)
	if opt.Plugins == nil {
		p, err := BuildCNIPlugin()
		if err != nil {
			t.Fatalf("testbed: %v", err)
		}
		opt.Plugins = []string{p}
	}
	if opt.ConfList == nil {
		opt.ConfList = ContivConfList(h, "1.0.0")
	}
	archive, err := PauseArchive()
	if err != nil {
		t.Fatalf("testbed: %v", err)
	}

	if opt.Name == "" {
		opt.Name = "cri"
	}
	dir := filepath.Join(h.Dir, opt.Name)
	// The socket path must stay under the 108 bytes of a unix address.
	sockDir := filepath.Join(criSocketRoot, h.NS+"-"+opt.Name)
	c := &CRI{Host: h, Dir: dir, ConfDir: filepath.Join(dir, "net.d"), BinDir: filepath.Join(dir, "bin"),
		Socket: filepath.Join(sockDir, "containerd.sock"), crictl: crictl, confList: opt.ConfList, sockDir: sockDir, sandbox: map[string]bool{}}
	c.cniConf, c.cniBin = c.ConfDir, c.BinDir
	if opt.MountNS != "" {
		c.ConfDir, c.BinDir = opt.ConfDir, opt.BinDir
		c.cniConf, c.cniBin = "/etc/cni/net.d", "/opt/cni/bin"
	}
	for _, d := range []string{dir, c.ConfDir, c.BinDir, sockDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatalf("testbed: cri folder: %v", err)
		}
	}
	if !opt.NoConfig {
		if err := c.InstallConfig(); err != nil {
			t.Fatalf("testbed: %v", err)
		}
	}
	for _, p := range append([]string{filepath.Join(CRIPluginDir, "loopback")}, opt.Plugins...) {
		if err := os.Symlink(p, filepath.Join(c.BinDir, filepath.Base(p))); err != nil {
			t.Fatalf("testbed: cni plugin: %v", err)
		}
	}
	conf := filepath.Join(dir, "containerd.toml")
	if err := os.WriteFile(conf, []byte(c.config()), 0o644); err != nil {
		t.Fatalf("testbed: containerd configuration: %v", err)
	}
	crictlConf := fmt.Sprintf("runtime-endpoint: unix://%s\nimage-endpoint: unix://%s\ntimeout: 60\n", c.Socket, c.Socket)
	if err := os.WriteFile(filepath.Join(dir, "crictl.yaml"), []byte(crictlConf), 0o644); err != nil {
		t.Fatalf("testbed: crictl configuration: %v", err)
	}
	// nsenter --net, not "ip netns exec": the latter gives the daemon a
	// mount namespace of its own, and the pod namespaces containerd
	// bind-mounts under /run/netns would not be seen outside it.
	c.daemon = nsDaemon("containerd", h.NS, containerd, filepath.Join(dir, "containerd.log"))
	c.daemon.direct = []string{"nsenter", "--net=" + filepath.Join(netnsDir(), h.NS), containerd, "--config", conf}
	c.mountNS = opt.MountNS
	if opt.MountNS != "" {
		c.daemon.direct = []string{"nsenter", "--net=" + filepath.Join(netnsDir(), h.NS), "--mount=" + opt.MountNS, containerd, "--config", conf}
	}
	t.Cleanup(func() { c.Stop(t) })
	if err := c.daemon.start(); err != nil {
		t.Fatalf("testbed: %v", err)
	}
	err = poll(60*time.Second, c.daemon.exited(), func() error {
		_, err := c.Crictl("info")
		return err
	})
	if err != nil {
		t.Fatalf("testbed: containerd on %s: %v\n%s", h.Name, err, c.daemon.logs(40))
	}
	if out, err := c.ctr("images", "import", archive); err != nil {
		t.Fatalf("testbed: import the pause image on %s: %v\n%s", h.Name, err, out)
	}
	return c
}

// InstallConfig writes the runtime's CNI configuration list in place:
// containerd 1.6 reloads its CNI configuration on a write, rename or
// removal in the folder but ignores a creation, so a file renamed into
// the folder (a creation there) would never be loaded.
func (c *CRI) InstallConfig() error {
	if err := os.WriteFile(filepath.Join(c.ConfDir, "10-net.conflist"), c.confList, 0o644); err != nil {
		return fmt.Errorf("cni configuration: %w", err)
	}
	return nil
}

// config is containerd's configuration: everything under Dir, CRI on,
// the settings a nested runtime needs (restrict_oom_score_adj, no
// AppArmor), the local pause image, the CNI folders.
func (c *CRI) config() string {
	return fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.internal.v1.tracing", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = %[3]q

[ttrpc]
  address = %[4]q

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = %[5]q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[6]q
  restrict_oom_score_adj = true
  disable_apparmor = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = %[7]q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[8]q
    conf_dir = %[9]q
    max_conf_num = 1
`, filepath.Join(c.Dir, "root"), filepath.Join(c.Dir, "state"), c.Socket, c.Socket+".ttrpc",
		filepath.Join(c.Dir, "opt"), PauseImage, filepath.Join(c.Dir, "runc"), c.cniBin, c.cniConf)
}

// Crictl runs crictl against this runtime and returns its standard
// output; the error carries the command and its standard error.
func (c *CRI) Crictl(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), criTimeout)
	defer cancel()
	argv := append([]string{"--config", filepath.Join(c.Dir, "crictl.yaml")}, args...)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, c.crictl, argv...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("crictl %s on %s: %w: %s", strings.Join(args, " "), c.Host.Name, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return stdout.String(), nil
}

// ctr runs "ctr -n k8s.io" against this runtime.
func (c *CRI) ctr(args ...string) (string, error) {
	return run("ctr", append([]string{"--address", c.Socket, "--namespace", "k8s.io"}, args...)...)
}

// PodConfig describes a pod sandbox for RunPod.
type PodConfig struct {
	Name, Namespace, UID string
	Labels               map[string]string
}

// Pod is a running pod sandbox.
type Pod struct {
	// Container is the pod's network namespace (cni-<uuid>, made by
	// containerd), usable with the testbed's traffic helpers.
	*Container
	ID        string // sandbox id (K8S_POD_INFRA_CONTAINER_ID)
	Namespace string
	UID       string
	NetNS     string // the namespace's path
	cri       *CRI
}

// RunPod runs a pod sandbox ("crictl runp"): containerd creates its
// network namespace and calls the CNI ADD; the pod's address is what
// the runtime reports.
func (c *CRI) RunPod(t testing.TB, pc PodConfig) *Pod {
	t.Helper()
	p, err := c.TryRunPod(pc)
	if err != nil {
		t.Fatalf("testbed: %v", err)
	}
	return p
}

// TryRunPod is RunPod returning the error ("crictl runp" failing when
// the CNI ADD fails; the failed sandbox is then stopped and removed).
func (c *CRI) TryRunPod(pc PodConfig) (*Pod, error) {
	if pc.Namespace == "" {
		pc.Namespace = "default"
	}
	if pc.UID == "" {
		pc.UID = randomHex(8)
	}
	spec := map[string]any{
		"metadata":      map[string]any{"name": pc.Name, "namespace": pc.Namespace, "uid": pc.UID, "attempt": 0},
		"labels":        pc.Labels,
		"log_directory": filepath.Join(c.Dir, "pods", pc.Namespace+"_"+pc.Name),
		"linux":         map[string]any{},
	}
	data, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("pod %s: %w", pc.Name, err)
	}
	f := filepath.Join(c.Dir, "pod-"+pc.Namespace+"-"+pc.Name+"-"+pc.UID+".json")
	if err := os.WriteFile(f, data, 0o644); err != nil {
		return nil, fmt.Errorf("pod %s: %w", pc.Name, err)
	}
	out, err := c.Crictl("runp", f)
	if err != nil {
		// A sandbox whose CNI ADD failed stays, not ready; the kubelet
		// stops and removes it before it tries again, and so does this.
		if ids, lerr := c.Crictl("pods", "-q", "--name", "^"+pc.Name+"$", "--namespace", "^"+pc.Namespace+"$"); lerr == nil {
			for _, id := range strings.Fields(ids) {
				if _, serr := c.Crictl("stopp", id); serr == nil {
					c.Crictl("rmp", id)
				}
			}
		}
		return nil, err
	}
	id := strings.TrimSpace(out)
	c.mu.Lock()
	c.sandbox[id] = true
	c.mu.Unlock()
	ip, netns, err := c.inspect(id)
	if err != nil {
		return nil, err
	}
	return &Pod{Container: &Container{Name: pc.Name, NS: filepath.Base(netns), Host: c.Host, IP: ip},
		ID: id, Namespace: pc.Namespace, UID: pc.UID, NetNS: netns, cri: c}, nil
}

// inspect returns a sandbox's address and network namespace path.
func (c *CRI) inspect(id string) (ip, netns string, err error) {
	out, err := c.Crictl("inspectp", "-o", "json", id)
	if err != nil {
		return "", "", err
	}
	var v struct {
		Status struct {
			Network struct{ IP string } `json:"network"`
		} `json:"status"`
		Info struct {
			RuntimeSpec struct {
				Linux struct {
					Namespaces []struct{ Type, Path string } `json:"namespaces"`
				} `json:"linux"`
			} `json:"runtimeSpec"`
		} `json:"info"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		return "", "", fmt.Errorf("crictl inspectp %s: %w", id, err)
	}
	for _, ns := range v.Info.RuntimeSpec.Linux.Namespaces {
		if ns.Type == "network" {
			netns = ns.Path
		}
	}
	if netns == "" || v.Status.Network.IP == "" {
		return "", "", fmt.Errorf("crictl inspectp %s: no network namespace or address:\n%s", id, out)
	}
	return v.Status.Network.IP, netns, nil
}

// sandboxNetNS is the path of a sandbox's network namespace when it is
// one containerd made under the machine's netns folder (cni-<uuid>); ""
// otherwise (not found, or in a node's own mount namespace, whose folder
// goes with the node).
func (c *CRI) sandboxNetNS(id string) string {
	out, err := c.Crictl("inspectp", "-o", "json", id)
	if err != nil {
		return ""
	}
	var v struct {
		Info struct {
			RuntimeSpec struct {
				Linux struct {
					Namespaces []struct{ Type, Path string } `json:"namespaces"`
				} `json:"linux"`
			} `json:"runtimeSpec"`
		} `json:"info"`
	}
	if json.Unmarshal([]byte(out), &v) != nil {
		return ""
	}
	for _, ns := range v.Info.RuntimeSpec.Linux.Namespaces {
		if ns.Type == "network" && c.mountNS == "" &&
			filepath.Dir(ns.Path) == netnsDir() && strings.HasPrefix(filepath.Base(ns.Path), "cni-") {
			return ns.Path
		}
	}
	return ""
}

// Stop stops the sandbox ("crictl stopp": the runtime's first CNI DEL).
func (p *Pod) Stop() error {
	_, err := p.cri.Crictl("stopp", p.ID)
	return err
}

// Remove removes the sandbox ("crictl rmp": the second CNI DEL).
func (p *Pod) Remove() error {
	if _, err := p.cri.Crictl("rmp", p.ID); err != nil {
		return err
	}
	p.cri.mu.Lock()
	delete(p.cri.sandbox, p.ID)
	p.cri.mu.Unlock()
	return nil
}

// Sandboxes lists the ids of the runtime's pod sandboxes.
func (c *CRI) Sandboxes() ([]string, error) {
	out, err := c.Crictl("pods", "-q")
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// Logs returns the last n lines of containerd's log.
func (c *CRI) Logs(n int) string { return c.daemon.logs(n) }

// Stop removes every sandbox, stops containerd, kills shims it left and
// removes its folders. The test's cleanup calls it; calling it again
// does nothing.
func (c *CRI) Stop(t testing.TB) {
	c.stopOnce.Do(func() { c.stop(t) })
}

func (c *CRI) stop(t testing.TB) {
	// The sandboxes' network namespaces (cni-<uuid> under /run/netns):
	// one whose sandbox could not be removed (its CNI DEL failed, the
	// runtime was stuck) is removed below, so no empty namespace stays.
	var netnss []string
	if c.daemon.running() {
		if ids, err := c.Sandboxes(); err != nil {
			t.Logf("testbed: %v", err)
		} else {
			for _, id := range ids {
				if p := c.sandboxNetNS(id); p != "" {
					netnss = append(netnss, p)
				}
				_, err := c.Crictl("rmp", "-f", id)
				switch {
				case err != nil && strings.Contains(err.Error(), "cni plugin not initialized"):
					// The network plugin was uninstalled (its
					// configuration removed) after the kubelet had
					// stopped the sandbox and torn its network down;
					// containerd cannot ask it again. The shims are
					// killed below.
					t.Logf("testbed: %v", err)
				case err != nil:
					t.Errorf("testbed: %v", err)
				}
			}
		}
		if err := c.daemon.stop(syscall.SIGTERM, stopGrace); err != nil {
			t.Errorf("testbed: %v", err)
		}
	}
	// Shims outlive containerd; ours name its socket on their command
	// line.
	for _, pid := range shimPids(c.Socket) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	for _, p := range netnss {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		syscall.Unmount(p, syscall.MNT_DETACH)
		if err := os.Remove(p); err != nil {
			t.Logf("testbed: pod network namespace %s: %v", p, err)
		} else {
			t.Logf("testbed: pod network namespace %s left by the runtime removed", p)
		}
	}
	for _, m := range mountsUnder(c.Dir) {
		syscall.Unmount(m, syscall.MNT_DETACH)
	}
	if err := os.RemoveAll(c.sockDir); err != nil {
		t.Logf("testbed: %v", err)
	}
	if err := os.RemoveAll(c.Dir); err != nil {
		t.Errorf("testbed: remove %s: %v", c.Dir, err)
	}
}

// reapCRI kills the shims of the runtimes of testbed prefix that a
// killed test left (containerd itself dies with the test) and unmounts
// what is left in their folders under dir, before the testbed's folder
// is removed.
func reapCRI(prefix, dir string) {
	socks, _ := filepath.Glob(filepath.Join(criSocketRoot, prefix+"*", "containerd.sock"))
	for _, sock := range socks {
		for _, pid := range shimPids(sock) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		os.RemoveAll(filepath.Dir(sock))
	}
	if dir == "" {
		return
	}
	criDirs, _ := filepath.Glob(filepath.Join(dir, "*", "cri*"))
	for _, d := range criDirs {
		for _, m := range mountsUnder(d) {
			syscall.Unmount(m, syscall.MNT_DETACH)
		}
	}
}

// shimPids are the containerd shims started for the containerd at sock.
func shimPids(sock string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if len(args) == 0 || !strings.Contains(filepath.Base(args[0]), "containerd-shim") {
			continue
		}
		for _, a := range args {
			if a == sock {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// mountsUnder lists the mount points below dir, deepest first.
func mountsUnder(dir string) []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			out = append(out, f[4])
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// pauseBuild caches the pause archive of this test process.
var pauseBuild struct {
	once sync.Once
	path string
	err  error
}

// PauseArchive builds the pause image as a "docker save" archive that
// "ctr images import" takes: one layer holding test/tools/pause built
// statically, entrypoint /pause. The archive is a function of the
// binary only (fixed times and owners), and cached under
// ~/.cache/contiv-testbed by the binary's digest.
func PauseArchive() (string, error) {
	pauseBuild.once.Do(func() { pauseBuild.path, pauseBuild.err = buildPauseArchive() })
	return pauseBuild.path, pauseBuild.err
}

func buildPauseArchive() (string, error) {
	dir, err := buildDir()
	if err != nil {
		return "", err
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "pause")
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, "./test/tools/pause")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("testbed: build the pause binary: %w\n%s", err, out)
	}
	exe, err := os.ReadFile(bin)
	if err != nil {
		return "", fmt.Errorf("testbed: pause binary: %w", err)
	}
	sum := sha256.Sum256(exe)
	cache, path := imageCachePath("pause-" + hex.EncodeToString(sum[:8]) + ".tar")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	archive, err := PauseImageArchive(exe)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", fmt.Errorf("testbed: image cache: %w", err)
	}
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if err := os.WriteFile(tmp, archive, 0o644); err != nil {
		return "", fmt.Errorf("testbed: image cache: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("testbed: image cache: %w", err)
	}
	return path, nil
}

// imageCachePath is where the image archive name is cached:
// ~/.cache/contiv-testbed (the temporary folder without a cache folder),
// returned too.
func imageCachePath(name string) (dir, path string) {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, "contiv-testbed")
	return dir, filepath.Join(dir, name)
}

// PauseImageArchive packs exe as /pause into a single-layer image named
// PauseImage, in the "docker save" format (manifest.json, the image
// configuration, the layer tar), the same bytes for the same exe.
func PauseImageArchive(exe []byte) ([]byte, error) {
	if len(exe) == 0 {
		return nil, errors.New("testbed: pause image: empty binary")
	}
	epoch := time.Unix(0, 0).UTC()
	var layer bytes.Buffer
	lw := tar.NewWriter(&layer)
	if err := lw.WriteHeader(&tar.Header{Name: "pause", Mode: 0o755, Size: int64(len(exe)), ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
		return nil, fmt.Errorf("testbed: pause layer: %w", err)
	}
	if _, err := lw.Write(exe); err != nil {
		return nil, fmt.Errorf("testbed: pause layer: %w", err)
	}
	if err := lw.Close(); err != nil {
		return nil, fmt.Errorf("testbed: pause layer: %w", err)
	}
	layerSum := sha256.Sum256(layer.Bytes())
	layerDigest := "sha256:" + hex.EncodeToString(layerSum[:])
	config, err := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"created":      epoch.Format(time.RFC3339),
		"config":       map[string]any{"Entrypoint": []string{"/pause"}},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{layerDigest}},
	})
	if err != nil {
		return nil, fmt.Errorf("testbed: pause config: %w", err)
	}
	configSum := sha256.Sum256(config)
	configName := hex.EncodeToString(configSum[:]) + ".json"
	layerName := hex.EncodeToString(layerSum[:]) + "/layer.tar"
	manifest, err := json.Marshal([]map[string]any{{
		"Config":   configName,
		"RepoTags": []string{strings.TrimPrefix(PauseImage, "docker.io/")},
		"Layers":   []string{layerName},
	}})
	if err != nil {
		return nil, fmt.Errorf("testbed: pause manifest: %w", err)
	}
	var out bytes.Buffer
	w := tar.NewWriter(&out)
	for _, f := range []struct {
		name string
		data []byte
	}{{configName, config}, {layerName, layer.Bytes()}, {"manifest.json", manifest}} {
		if dir := filepath.Dir(f.name); dir != "." {
			if err := w.WriteHeader(&tar.Header{Name: dir + "/", Mode: 0o755, ModTime: epoch, Typeflag: tar.TypeDir, Format: tar.FormatPAX}); err != nil {
				return nil, fmt.Errorf("testbed: pause archive: %w", err)
			}
		}
		if err := w.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data)), ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return nil, fmt.Errorf("testbed: pause archive: %w", err)
		}
		if _, err := w.Write(f.data); err != nil {
			return nil, fmt.Errorf("testbed: pause archive: %w", err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("testbed: pause archive: %w", err)
	}
	return out.Bytes(), nil
}
