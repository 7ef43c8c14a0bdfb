package testbed

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/contiv/netplugin/test/ovstest"
)

// Host is one simulated host: a namespace with its own OVS and netplugin.
type Host struct {
	Index int
	Name  string // host label (--host) and namespace name
	NS    string
	IP    string // underlay address (on br-phy): --vtep-ip
	// CtrlIP is its management address (on eth0): --ctrl-ip, and the
	// source of its traffic to netmaster and the store.
	CtrlIP string
	Dir    string // OVS state, sockets, netplugin.log
	OVS    *ovstest.OVS

	tb                             *Testbed
	netplugin                      *daemon
	engine                         *Engine     // Config.Docker only
	fabMgmt, fabUnderlay, fabTrunk string      // this host's links on the fabric side
	stopped                        atomic.Bool // StopHost ran: OVS is down

	// ExtraArgs are appended to this host's netplugin command line after
	// Config.NetpluginArgs at its next start (e.g. "--mode", "kubernetes"
	// for one host of a docker-mode cluster).
	ExtraArgs []string
}

// AttachSocket is the unix socket of netplugin's attach API.
func (h *Host) AttachSocket() string { return filepath.Join(h.Dir, "attach.sock") }

// CNISocket is the unix socket of netplugin's CNI server (kubernetes
// mode, docs/daemons.md §8.2).
func (h *Host) CNISocket() string { return filepath.Join(h.Dir, "cni.sock") }

// CNIStateDir holds the CNI server's attachment records.
func (h *Host) CNIStateDir() string { return filepath.Join(h.Dir, "cni") }

// MesosSocket is the unix socket of netplugin's Mesos CNI server
// (docs/mesos.md).
func (h *Host) MesosSocket() string { return filepath.Join(h.Dir, "mesos.sock") }

// MesosStateDir holds the Mesos CNI server's attachment records.
func (h *Host) MesosStateDir() string { return filepath.Join(h.Dir, "mesos") }

// NetpluginArgs is the command line StartNetplugin uses.
func (h *Host) NetpluginArgs() []string {
	cfg := h.tb.Config
	args := []string{
		"--mode", cfg.mode(), "--netmode", cfg.NetMode, "--fwdmode", cfg.FwdMode,
		"--host", h.Name, "--vtep-ip", h.IP, "--ctrl-ip", h.CtrlIP,
		"--vlan-uplinks", TrunkIf,
		"--ovsdb-socket", h.OVS.DBSock, "--ovs-datapath", "netdev",
		"--attach-socket", h.AttachSocket(),
		"--cni-socket", h.CNISocket(), "--cni-state-dir", h.CNIStateDir(),
		"--mesos-socket", h.MesosSocket(), "--mesos-state-dir", h.MesosStateDir(),
		"--log-level", "debug",
	}
	if cfg.Docker {
		args = append(args, "--name", PluginName, "--docker-plugin-dir", h.PluginDir(), "--docker-socket", h.DockerSocket())
	}
	args = append(args, h.tb.StoreArgs()...)
	rpc, err := h.tb.agentRPCArgs(h)
	if err != nil {
		// Only a failing disk gets here; the daemon then refuses to start
		// and says why.
		rpc = []string{"--rpc-tls-cert-file", "/nonexistent: " + err.Error()}
	}
	args = append(args, rpc...)
	args = append(args, h.tb.netpluginRESTArgs(h)...)
	args = append(args, cfg.NetpluginArgs...)
	if cfg.NetpluginHostArgs != nil {
		args = append(args, cfg.NetpluginHostArgs(h)...)
	}
	return append(args, h.ExtraArgs...)
}

// StartNetplugin starts the host's netplugin (output appended to
// Dir/netplugin.log). It does not wait for registration: see
// Testbed.WaitNetplugins.
func (h *Host) StartNetplugin(t testing.TB) {
	t.Helper()
	bin, err := h.tb.netpluginBinary()
	if err != nil {
		t.Fatalf("testbed: netplugin does not build: %v", err)
	}
	h.netplugin.bin = bin
	h.netplugin.args = h.NetpluginArgs()
	if err := h.netplugin.start(); err != nil {
		t.Fatalf("testbed: %v", err)
	}
}

// StopNetplugin sends SIGTERM and waits for the exit; a netplugin that
// needs longer than 15 s is killed and the test fails.
func (h *Host) StopNetplugin(t testing.TB) {
	t.Helper()
	if err := h.netplugin.stop(syscall.SIGTERM, stopGrace); err != nil {
		t.Errorf("testbed: %v\n%s", err, h.netplugin.logs(40))
	}
}

// KillNetplugin ends netplugin with SIGKILL and waits for its exit.
func (h *Host) KillNetplugin(t testing.TB) {
	t.Helper()
	if err := h.netplugin.stop(syscall.SIGKILL, stopGrace); err != nil {
		t.Fatalf("testbed: %v", err)
	}
}

// RestartNetplugin stops netplugin (SIGTERM) and starts it again.
func (h *Host) RestartNetplugin(t testing.TB) {
	t.Helper()
	h.StopNetplugin(t)
	h.StartNetplugin(t)
}

// NetpluginRunning reports whether the host's netplugin process is up.
func (h *Host) NetpluginRunning() bool { return h.netplugin.running() }

// NetpluginExited is closed when the current netplugin process exits.
func (h *Host) NetpluginExited() <-chan struct{} { return h.netplugin.exited() }

// Logs returns the host's whole netplugin log.
func (h *Host) Logs() string { return h.netplugin.logs(0) }

// RestartVswitchd restarts ovs-vswitchd keeping the database.
func (h *Host) RestartVswitchd(t testing.TB) {
	t.Helper()
	h.OVS.RestartVswitchd(t)
}

// StopHost takes the host off the cluster as if it had crashed: netplugin
// is killed, both OVS daemons stop, and its management, underlay and
// trunk links go down on both sides. Its namespace stays until the testbed's cleanup.
func (h *Host) StopHost(t testing.TB) {
	t.Helper()
	h.KillNetplugin(t)
	h.stopped.Store(true)
	h.OVS.KillVswitchd(t)
	h.OVS.KillOVSDB(t)
	for _, l := range [][2]string{{h.tb.FabricNS, h.fabMgmt}, {h.tb.FabricNS, h.fabUnderlay}, {h.tb.FabricNS, h.fabTrunk},
		{h.NS, MgmtIf}, {h.NS, UnderlayIf}, {h.NS, TrunkIf}} {
		if err := ipIn(l[0], "link", "set", l[1], "down"); err != nil {
			t.Fatalf("testbed: stop host %s: %v", h.Name, err)
		}
	}
}

// Exec runs a program inside the host's namespace.
func (h *Host) Exec(args ...string) (string, error) {
	return nsExec(h.NS, args[0], args[1:]...)
}

// Ping runs ping from the host's namespace, see Container.Ping.
func (h *Host) Ping(ip string, count int, timeout time.Duration) error {
	return ping(h.NS, ip, count, timeout)
}

// DialContext opens a connection from inside the host's namespace.
func (h *Host) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return dialIn(h.NS)(ctx, network, addr)
}

// HTTPClient returns a client whose connections start inside the host's
// namespace (e.g. for netplugin's inspect server on 127.0.0.1:9090).
func (h *Host) HTTPClient() *http.Client { return nsHTTPClient(h.NS) }

// Vsctl runs ovs-vsctl against the host's OVS.
func (h *Host) Vsctl(args ...string) (string, error) { return h.OVS.Vsctl(args...) }

// Ofctl runs "ovs-ofctl -O OpenFlow13 args..." in the host.
func (h *Host) Ofctl(args ...string) (string, error) {
	return h.OVS.Ofctl(append([]string{"-O", "OpenFlow13"}, args...)...)
}

// DumpFlows returns the flows of a bridge, one per line in ovs-ofctl
// syntax without the fields that change by themselves (cookie, duration,
// packet and byte counters, ages), sorted, so that two dumps compare.
func (h *Host) DumpFlows(bridge string) ([]string, error) {
	out, err := h.Ofctl("dump-flows", bridge)
	if err != nil {
		return nil, fmt.Errorf("dump flows of %s on %s: %w", bridge, h.Name, err)
	}
	return NormalizeFlows(out), nil
}

// volatileFlowFields are dropped by NormalizeFlows.
var volatileFlowFields = []string{"cookie=", "duration=", "n_packets=", "n_bytes=", "idle_age=", "hard_age="}

// NormalizeFlows turns "ovs-ofctl dump-flows" output into sorted flow
// lines without cookie, duration, counters and ages.
func NormalizeFlows(dump string) []string {
	var flows []string
	for _, line := range strings.Split(dump, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.Contains(line, "_FLOW reply") {
			continue
		}
		head, actions, found := strings.Cut(line, " actions=")
		var kept []string
		for _, f := range strings.Split(head, ", ") {
			volatile := false
			for _, v := range volatileFlowFields {
				if strings.HasPrefix(f, v) {
					volatile = true
					break
				}
			}
			if !volatile {
				kept = append(kept, f)
			}
		}
		flow := strings.Join(kept, ", ")
		if found {
			flow += " actions=" + actions
		}
		flows = append(flows, strings.TrimSpace(flow))
	}
	sort.Strings(flows)
	return flows
}
