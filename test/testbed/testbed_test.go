package testbed

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/contiv/netplugin/test/orphans"
)

func TestMain(m *testing.M) {
	if isFakeNetplugin() {
		os.Exit(fakeNetplugin(os.Args[1:]))
	}
	goleak.VerifyTestMain(m,
		// The etcd client's gRPC internals wind down on their own timers.
		goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
		// client-go's logger flushes on a timer for the whole process.
		goleak.IgnoreAnyFunction("k8s.io/klog/v2.(*flushDaemon).run"),
	)
}

// TestCluster builds three hosts and an embedded-store netmaster (no
// netplugin) and checks the underlay, the REST/store access paths, VXLAN
// and VLAN transport between hosts, and that cleanup leaves nothing.
func TestCluster(t *testing.T) {
	var prefix, dir string
	var pids []int
	t.Run("cluster", func(t *testing.T) {
		start := time.Now()
		tb := New(t, Config{Hosts: 3, NetMode: "vxlan", FwdMode: "routing", SkipNetplugin: true})
		t.Logf("New (3 hosts, embedded store): %v", time.Since(start).Round(time.Millisecond))
		prefix, dir = tb.Prefix, tb.Dir
		defer func() { pids = daemonPids(tb) }()

		t.Run("underlay", func(t *testing.T) { checkUnderlay(t, tb) })
		t.Run("netctl", func(t *testing.T) {
			out, err := tb.Netctl("tenant", "ls")
			if err != nil {
				t.Fatalf("netctl tenant ls: %v", err)
			}
			if !strings.Contains(out, "default") {
				t.Fatalf("netctl tenant ls does not list the default tenant:\n%s", out)
			}
		})
		t.Run("store", func(t *testing.T) { checkStore(t, tb) })
		t.Run("flows", func(t *testing.T) {
			flows, err := tb.Hosts[0].DumpFlows(PhyBridge)
			if err != nil {
				t.Fatal(err)
			}
			if len(flows) != 1 || !strings.HasSuffix(flows[0], "priority=0 actions=NORMAL") || strings.Contains(flows[0], "n_packets") {
				t.Fatalf("br-phy flows: %q", flows)
			}
		})
		t.Run("vxlan", func(t *testing.T) {
			a, b := tb.Hosts[0], tb.Hosts[1]
			ca := tunnelEnd(t, a, "tbx", []string{"type=vxlan", "options:remote_ip=" + b.IP, "options:key=5000"}, "", "198.19.250.1")
			tunnelEnd(t, b, "tbx", []string{"type=vxlan", "options:remote_ip=" + a.IP, "options:key=5000"}, "", "198.19.250.2")
			if err := ca.Ping("198.19.250.2", 3, 20*time.Second); err != nil {
				t.Fatalf("ping across the VXLAN tunnel: %v", err)
			}
			if err := ca.CheckTraffic("198.19.250.2", TrafficPort, 10*time.Second); err != nil {
				t.Fatalf("TCP/UDP across the VXLAN tunnel: %v", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			p := ca.StartPinger(ctx, "198.19.250.2")
			time.Sleep(1500 * time.Millisecond)
			st := p.Stop()
			if st.Err != nil || st.Sent == 0 || st.Received == 0 {
				t.Fatalf("pinger: %+v", st)
			}
			t.Logf("pinger: sent %d received %d longest gap %v", st.Sent, st.Received, st.LongestGap)
		})
		t.Run("vlan", func(t *testing.T) {
			a, b, c := tb.Hosts[1], tb.Hosts[2], tb.Hosts[0]
			ca := tunnelEnd(t, a, "tbl", nil, "100", "198.19.251.1")
			tunnelEnd(t, b, "tbl", nil, "100", "198.19.251.2")
			cc := tunnelEnd(t, c, "tbl", nil, "200", "198.19.251.3")
			if err := ca.Ping("198.19.251.2", 3, 20*time.Second); err != nil {
				t.Fatalf("ping across the VLAN trunk: %v", err)
			}
			if err := ca.CheckTraffic("198.19.251.2", TrafficPort, 10*time.Second); err != nil {
				t.Fatalf("TCP/UDP across the VLAN trunk: %v", err)
			}
			// Frames cross vlanfab tagged: VLAN 200 does not reach 100.
			if err := cc.Ping("198.19.251.1", 1, 2*time.Second); err == nil {
				t.Fatal("VLAN 200 reached VLAN 100")
			}
		})
		t.Run("stophost", func(t *testing.T) {
			h := tb.Hosts[2]
			h.StopHost(t)
			if err := tb.Hosts[0].Ping(h.IP, 1, 2*time.Second); err == nil {
				t.Fatalf("stopped host %s still answers", h.Name)
			}
			if err := tb.Hosts[0].Ping(tb.Hosts[1].IP, 1, 10*time.Second); err != nil {
				t.Fatalf("other hosts lost the underlay: %v", err)
			}
		})
	})
	checkGone(t, prefix, dir, pids)
}

// checkUnderlay: every host pings every other host and netmaster and gets
// /info over HTTP from its own namespace; the test process does too.
func checkUnderlay(t *testing.T, tb *Testbed) {
	for _, h := range tb.Hosts {
		for _, peer := range tb.Hosts {
			if peer != h {
				if err := h.Ping(peer.IP, 1, 10*time.Second); err != nil {
					t.Errorf("host %s -> host %s: %v", h.Name, peer.Name, err)
				}
			}
		}
		if err := h.Ping(MasterIP(0), 1, 10*time.Second); err != nil {
			t.Errorf("host %s -> netmaster: %v", h.Name, err)
		}
		resp, err := h.HTTPClient().Get(tb.Masters[0].URL() + "/info")
		if err != nil {
			t.Errorf("host %s GET /info: %v", h.Name, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("host %s GET /info: status %d", h.Name, resp.StatusCode)
		}
	}
	info, err := tb.Masters[0].Info()
	if err != nil {
		t.Fatal(err)
	}
	if info.LeaderIP != tb.Masters[0].Addr() {
		t.Fatalf("/info leader %q, want %s", info.LeaderIP, tb.Masters[0].Addr())
	}
	if got := tb.MasterURL(); got != "http://"+MasterIP(0)+":9999" {
		t.Fatalf("MasterURL %s", got)
	}
}

// checkStore reads what netmaster registered and writes and reads a key.
func checkStore(t *testing.T, tb *Testbed) {
	st := tb.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	svcs, err := st.GetService(ctx, "netmaster")
	if err != nil {
		t.Fatal(err)
	}
	if len(svcs) != 1 || svcs[0].HostAddr != MasterIP(0) {
		t.Fatalf("service netmaster: %+v", svcs)
	}
	key := "testbed/" + tb.Prefix + "probe"
	if _, err := st.Put(ctx, key, []byte("x")); err != nil {
		t.Fatal(err)
	}
	kv, err := st.Get(ctx, key)
	if err != nil || string(kv.Value) != "x" {
		t.Fatalf("get %s: %q %v", key, kv.Value, err)
	}
	if err := st.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
}

// tunnelEnd makes (once per host) a throw-away netdev bridge br with one
// extra port (a vxlan tunnel given by ifaceOpts, or the trunk eth2 when
// ifaceOpts is nil) and a container attached to it with addr/24, tagged
// with tag when not empty, running the traffic echo. Everything is removed
// at the end of the test.
func tunnelEnd(t *testing.T, h *Host, br string, ifaceOpts []string, tag, addr string) *Container {
	t.Helper()
	c := h.NewContainerNS(t, br+"-"+addr)
	t.Cleanup(func() { c.Delete(t) })
	args := []string{"add-br", br, "--", "set", "bridge", br, "datapath_type=netdev"}
	if ifaceOpts != nil {
		args = append(args, "--", "add-port", br, "tun0", "--", "set", "interface", "tun0")
		args = append(args, ifaceOpts...)
	} else {
		args = append(args, "--", "add-port", br, TrunkIf)
	}
	if out, err := h.Vsctl(args...); err != nil {
		t.Fatalf("%s: %v: %s", h.Name, err, out)
	}
	t.Cleanup(func() {
		if out, err := h.Vsctl("--if-exists", "del-br", br); err != nil {
			t.Errorf("%s del-br %s: %v: %s", h.Name, br, err, out)
		}
	})
	port := br + "p0"
	if err := addVeth(h.NS, port, c.NS, "eth0"); err != nil {
		t.Fatal(err)
	}
	if err := ipIn(c.NS, "addr", "add", addr+"/24", "dev", "eth0"); err != nil {
		t.Fatal(err)
	}
	portArgs := []string{"add-port", br, port}
	if tag != "" {
		portArgs = append(portArgs, "tag="+tag)
	}
	if out, err := h.Vsctl(portArgs...); err != nil {
		t.Fatalf("%s: %v: %s", h.Name, err, out)
	}
	// The test plays netplugin's driver here, which switches off TX
	// checksum offload on the container side for the userspace datapath
	// and leaves room for the VXLAN header in the MTU.
	if err := DisableTxOffload(c.NS, "eth0"); err != nil {
		t.Fatal(err)
	}
	if ifaceOpts != nil {
		if err := ipIn(c.NS, "link", "set", "eth0", "mtu", "1450"); err != nil {
			t.Fatal(err)
		}
	}
	c.ServeTraffic(t)
	return c
}

// TestFailover runs two netmasters on an external etcd; killing the leader
// makes the other one lead.
func TestFailover(t *testing.T) {
	var prefix, dir string
	var pids []int
	t.Run("cluster", func(t *testing.T) {
		tb := New(t, Config{Hosts: 1, NetMode: "vlan", FwdMode: "bridge", Netmasters: 2,
			Store: ExternalEtcd, LeaderTTL: 3 * time.Second, SkipNetplugin: true})
		prefix, dir = tb.Prefix, tb.Dir
		defer func() { pids = daemonPids(tb) }()

		if err := tb.Hosts[0].Ping(StoreIP, 1, 10*time.Second); err != nil {
			t.Fatalf("host -> store: %v", err)
		}
		first := tb.WaitLeader(t, nil, 30*time.Second)
		for _, m := range tb.Masters {
			info, err := m.Info()
			if err != nil || info.LeaderIP != first.Addr() {
				t.Fatalf("netmaster %s /info: %+v %v, want leader %s", m.Addr(), info, err, first.Addr())
			}
		}
		first.Kill(t)
		next := tb.WaitLeader(t, first, 30*time.Second)
		info, err := next.Info()
		if err != nil || info.LeaderIP != next.Addr() {
			t.Fatalf("new leader's /info: %+v %v", info, err)
		}
		if !strings.Contains(tb.MasterURL(), next.IP) {
			t.Fatalf("MasterURL %s does not point at the new leader %s", tb.MasterURL(), next.Addr())
		}
		if out, err := tb.Netctl("tenant", "ls"); err != nil || !strings.Contains(out, "default") {
			t.Fatalf("netctl after failover: %v\n%s", err, out)
		}
		// The killed netmaster comes back as a follower.
		first.Start(t)
		deadline := time.Now().Add(30 * time.Second)
		for {
			info, err := first.Info()
			if err == nil && info.LeaderIP == next.Addr() {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("restarted netmaster: %+v %v\n%s", info, err, first.Logs())
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
	checkGone(t, prefix, dir, pids)
}

// TestReapOrphans: a testbed whose owner died (marker with a dead pid) is
// destroyed by the next run, processes in its namespaces included.
func TestReapOrphans(t *testing.T) {
	if err := requireRoot(); err != nil {
		RequireComponent(t, "root", err)
	}
	prefix := namePrefix + randomHex(2) + "-"
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	ns := prefix + "h0"
	t.Cleanup(func() { destroy(prefix, dir) })
	if err := addNetNS(ns); err != nil {
		t.Fatal(err)
	}
	sleeper := &daemon{name: "sleep", ns: ns, bin: "sleep", args: []string{"60"}, logPath: filepath.Join(dir, "sleep.log")}
	if err := sleeper.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sleeper.stop(syscall.SIGKILL, time.Second) })
	// A pid that is certainly gone: a finished child of ours.
	gone := &daemon{name: "true", ns: ns, bin: "true", logPath: filepath.Join(dir, "true.log")}
	if err := gone.start(); err != nil {
		t.Fatal(err)
	}
	<-gone.exited()
	if err := os.MkdirAll(string(markers), 0o755); err != nil {
		t.Fatal(err)
	}
	marker := fmt.Sprintf("%d\n%s\n", gone.cmd.Process.Pid, dir)
	if err := os.WriteFile(filepath.Join(string(markers), prefix), []byte(marker), 0o644); err != nil {
		t.Fatal(err)
	}
	reapOrphans(t)
	select {
	case <-sleeper.exited():
	case <-time.After(10 * time.Second):
		t.Fatal("process in the orphaned namespace survived")
	}
	checkGone(t, prefix, dir, nil)
}

func requireRoot() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("must run as root to create namespaces")
	}
	return nil
}

// daemonPids lists the processes the testbed started that run now.
func daemonPids(tb *Testbed) []int {
	var ds []*daemon
	for _, h := range tb.Hosts {
		ds = append(ds, h.netplugin)
	}
	for _, m := range tb.Masters {
		ds = append(ds, m.proc)
	}
	if tb.store != nil {
		ds = append(ds, tb.store)
	}
	var pids []int
	for _, d := range ds {
		if d.running() {
			pids = append(pids, d.cmd.Process.Pid)
		}
	}
	for _, ns := range listNetNS(tb.Prefix) {
		pids = append(pids, nsPids(ns)...)
	}
	return pids
}

// checkGone asserts that no namespace, process, folder or marker of the
// testbed remains.
func checkGone(t *testing.T, prefix, dir string, pids []int) {
	t.Helper()
	if prefix == "" {
		t.Fatal("testbed was not built")
	}
	if left := listNetNS(prefix); len(left) > 0 {
		t.Errorf("namespaces left: %v", left)
	}
	for _, pid := range pids {
		if orphans.Alive(pid) {
			t.Errorf("process %d still runs", pid)
		}
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), prefix) && orphans.Alive(pid) {
			t.Errorf("process %d still runs: %s", pid, strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("state dir %s left", dir)
	}
	if _, err := os.Stat(filepath.Join(string(markers), prefix)); err == nil {
		t.Errorf("marker of %s left", prefix)
	}
}

func TestNormalizeFlows(t *testing.T) {
	dump := `OFPST_FLOW reply (OF1.3) (xid=0x2):
 cookie=0x5, duration=12.5s, table=0, n_packets=3, n_bytes=180, priority=100,in_port=2 actions=goto_table:1
 cookie=0x0, duration=1.0s, table=0, n_packets=0, n_bytes=0, idle_age=4, priority=0 actions=NORMAL
`
	got := NormalizeFlows(dump)
	want := []string{"table=0, priority=0 actions=NORMAL", "table=0, priority=100,in_port=2 actions=goto_table:1"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

func TestParsePing(t *testing.T) {
	out := `PING 198.19.250.2 (198.19.250.2) 56(84) bytes of data.
64 bytes from 198.19.250.2: icmp_seq=1 ttl=64 time=0.5 ms
64 bytes from 198.19.250.2: icmp_seq=2 ttl=64 time=0.5 ms
64 bytes from 198.19.250.2: icmp_seq=6 ttl=64 time=0.5 ms
64 bytes from 198.19.250.2: icmp_seq=6 ttl=64 time=0.5 ms (DUP!)
64 bytes from 198.19.250.2: icmp_seq=7 ttl=64 time=0.5 ms

--- 198.19.250.2 ping statistics ---
9 packets transmitted, 4 received, +1 duplicates, 55% packet loss, time 1600ms
`
	st := parsePing(out)
	if st.Err != nil || st.Sent != 9 || st.Received != 4 || st.MaxLost != 3 || st.LongestGap != 4*PingInterval {
		t.Fatalf("%+v", st)
	}
	if st := parsePing("9 packets transmitted, 0 received"); st.MaxLost != 8 || st.Received != 0 {
		t.Fatalf("%+v", st)
	}
}
