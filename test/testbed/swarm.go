package testbed

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Swarm mode (Config.Swarm): the hosts' engines accept a global-scope
// network driver only from a managed (v2) plugin, so netplugin runs as one:
// StartManagedPlugin builds a plugin from a local rootfs holding a static
// netplugin (docker plugin create, no registry) with the host's command
// line, and enables it; the engine then runs netplugin in the host's
// namespace with the host's folder mounted at /hostdir.

// ManagedPluginName is the plugin (and driver) name in swarm mode.
const ManagedPluginName = "contivtb/netplugin:latest"

// hostDirInPlugin is where the host's folder appears inside the plugin.
const hostDirInPlugin = "/hostdir"

// pluginConfig is the managed plugin's config.json (the fields used).
type pluginConfig struct {
	Description   string   `json:"description"`
	Documentation string   `json:"documentation"`
	Entrypoint    []string `json:"entrypoint"`
	Interface     struct {
		Types  []string `json:"types"`
		Socket string   `json:"socket"`
	} `json:"interface"`
	Network struct {
		Type string `json:"type"`
	} `json:"network"`
	Linux struct {
		Capabilities []string `json:"capabilities"`
	} `json:"linux"`
	Mounts []pluginMount `json:"mounts"`
}

type pluginMount struct {
	Source      string   `json:"source"`
	Destination string   `json:"destination"`
	Type        string   `json:"type"`
	Options     []string `json:"options"`
}

// pluginArgs is NetpluginArgs with the host's paths as the plugin sees
// them.
func (h *Host) pluginArgs() []string {
	cfg := h.tb.Config
	args := []string{
		"--mode", "swarm-mode", "--netmode", cfg.NetMode, "--fwdmode", cfg.FwdMode,
		"--host", h.Name, "--vtep-ip", h.IP, "--ctrl-ip", h.CtrlIP,
		"--vlan-uplinks", TrunkIf,
		"--ovsdb-socket", filepath.Join(hostDirInPlugin, strings.TrimPrefix(h.OVS.DBSock, h.Dir)), "--ovs-datapath", "netdev",
		"--attach-socket", filepath.Join(hostDirInPlugin, "attach.sock"),
		"--mesos-socket", filepath.Join(hostDirInPlugin, "mesos.sock"), "--mesos-state-dir", filepath.Join(hostDirInPlugin, "mesos"),
		"--name", "netplugin", "--docker-plugin-dir", "/run/docker/plugins",
		"--docker-socket", filepath.Join(hostDirInPlugin, "docker", "docker.sock"),
		"--log-level", "debug",
	}
	rpc, err := h.tb.agentRPCArgs(h)
	if err != nil {
		rpc = []string{"--rpc-tls-cert-file", "/nonexistent: " + err.Error()}
	}
	for i, a := range rpc {
		if strings.HasPrefix(a, h.Dir+"/") {
			rpc[i] = filepath.Join(hostDirInPlugin, strings.TrimPrefix(a, h.Dir))
		}
	}
	args = append(args, rpc...)
	return append(append(args, h.tb.StoreArgs()...), cfg.NetpluginArgs...)
}

// pluginStorePaths rewrites the store's client files in args to the
// copies StartManagedPlugin puts into the host folder, which the plugin
// sees at hostDirInPlugin.
func (h *Host) pluginStorePaths(args []string) []string {
	if !h.tb.storeTLS() {
		return args
	}
	out := append([]string(nil), args...)
	for i, a := range out {
		if filepath.Dir(a) == h.tb.StorePKI.Dir {
			out[i] = filepath.Join(hostDirInPlugin, "store-pki", filepath.Base(a))
		}
	}
	return out
}

// StartManagedPlugin creates and enables the managed netplugin on the
// host's (running) engine and waits until the host registers.
func (h *Host) StartManagedPlugin(t testing.TB) {
	t.Helper()
	if !strings.HasPrefix(h.OVS.DBSock, h.Dir+"/") {
		t.Fatalf("testbed: OVSDB socket %s is not in the host folder %s", h.OVS.DBSock, h.Dir)
	}
	dir := filepath.Join(h.Dir, "plugin-build")
	rootfs := filepath.Join(dir, "rootfs")
	for _, d := range []string{filepath.Join(rootfs, "run", "docker", "plugins"), filepath.Join(rootfs, hostDirInPlugin), filepath.Join(rootfs, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(rootfs, "netplugin"), "./cmd/netplugin")
	build.Dir, build.Env = root, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("testbed: static netplugin: %v\n%s", err, out)
	}
	if _, err := h.tb.copyStoreClientFiles(filepath.Join(h.Dir, "store-pki")); err != nil {
		t.Fatalf("testbed: %v", err)
	}
	var cfg pluginConfig
	cfg.Description = "contiv netplugin (testbed host " + h.Name + ")"
	cfg.Documentation = "docs/docker.md"
	cfg.Entrypoint = append([]string{"/netplugin"}, h.pluginArgs()...)
	cfg.Entrypoint = h.pluginStorePaths(cfg.Entrypoint)
	cfg.Interface.Types = []string{"docker.networkdriver/1.0", "docker.ipamdriver/1.0"}
	cfg.Interface.Socket = "netplugin.sock"
	cfg.Network.Type = "host"
	cfg.Linux.Capabilities = []string{"CAP_NET_ADMIN", "CAP_SYS_ADMIN", "CAP_NET_RAW", "CAP_SYS_PTRACE"}
	cfg.Mounts = []pluginMount{{Source: h.Dir, Destination: hostDirInPlugin, Type: "bind", Options: []string{"rbind", "rw"}}}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := h.Docker("plugin", "create", ManagedPluginName, dir); err != nil {
		t.Fatalf("testbed: %v\n%s", err, out)
	}
	if out, err := h.Docker("plugin", "enable", "--timeout", "60", ManagedPluginName); err != nil {
		t.Fatalf("testbed: %v\n%s\n%s", err, out, h.engine.proc.logs(40))
	}
	h.tb.WaitNetplugins(t, h.Index+1, netpluginReadyTimeout)
}

// InitSwarm makes the host's engine a single-node swarm that stays on
// loopback and test addresses: docker_gwbridge first (198.18.250.0/24,
// no masquerading), then swarm init on 127.0.0.1 with a 198.18.252.0/22
// address pool. The swarm is left and the bridge removed in the cleanup.
func (h *Host) InitSwarm(t testing.TB) {
	t.Helper()
	if out, err := h.Docker("network", "create", "--subnet", "198.18.250.0/24",
		"--opt", "com.docker.network.bridge.name=docker_gwbridge",
		"--opt", "com.docker.network.bridge.enable_icc=false",
		"--opt", "com.docker.network.bridge.enable_ip_masquerade=false", "docker_gwbridge"); err != nil {
		t.Fatalf("testbed: %v\n%s", err, out)
	}
	if out, err := h.Docker("swarm", "init", "--advertise-addr", "127.0.0.1", "--listen-addr", "127.0.0.1:2377",
		"--data-path-addr", "127.0.0.1", "--default-addr-pool", "198.18.252.0/22", "--default-addr-pool-mask-length", "26"); err != nil {
		t.Fatalf("testbed: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if h.engine == nil || !h.engine.proc.running() {
			return
		}
		h.Docker("swarm", "leave", "--force")
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if _, err := h.Docker("network", "rm", "docker_gwbridge"); err == nil {
				return
			}
			time.Sleep(500 * time.Millisecond)
		}
		t.Errorf("testbed: docker_gwbridge of %s not removed", h.Name)
	})
}
