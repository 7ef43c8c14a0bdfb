// Package throughput benchmarks TCP throughput between two containers on
// different hosts of the simulated cluster (VXLAN network, userspace OVS on
// both hosts) against two baselines between the same two namespaces, measured
// in the same run:
//
//   - plain OVS: a second link in each namespace plugged into a bridge of
//     the same userspace OVS, the two bridges joined by a VXLAN tunnel over
//     the same underlay, NORMAL forwarding, no controller, no contiv; the
//     container links set as the driver sets them (TX checksum offload off,
//     MTU 1450). contiv / plain OVS is the cost of contiv's pipeline.
//   - direct: a third link in each namespace plugged into the fabric's
//     underlay bridge (kernel veths and a Linux bridge, no OVS, no
//     encapsulation).
//
// Each setting (see settings: MTU 1500 and a jumbo underlay; userspace TSO
// with $THROUGHPUT_TSO=1) measures contiv and plain OVS twice, alternating,
// and the direct path once; it reports Gbit/s per path and setting and the
// ratio contiv / plain OVS, checks that UDP arrives on every path, and logs
// the datapath passes per packet (dpif-netdev/pmd-stats-show) and an
// ofproto/trace of a contiv packet (docs/traffic.md, "Throughput").
// Rates are iperf3's receiver side.
//
//	flock /tmp/contiv-nettest.lock go test ./test/bench/throughput -run '^$' -bench . -benchtime 1x -v
package throughput

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/api/attach"
	"github.com/contiv/netplugin/test/testbed"
)

// seconds is the length of each iperf3 run (plus one omitted second).
const seconds = 5

// path is one way between c0 and c1 the benchmark measures: the links at
// both ends (container side in the container, host side in the host's
// namespace; empty for the direct path, whose other end is in the fabric)
// and the receiver's address.
type path struct {
	name      string
	contLinks [2]string
	hostLinks [2]string
	dst       string
}

// setting is one datapath configuration the three paths are measured in.
type setting struct {
	name  string
	tso   bool // other_config:userspace-tso-enable=true, container links' TX offload on
	jumbo bool // underlay MTU 9000, containers 8950
}

// settings are measured in this order. Userspace TSO is measured only with
// $THROUGHPUT_TSO=1: OVS 3.1 drops every packet with offload flags that it
// has to encapsulate ("Tunneling packets with HW offload flags is not
// supported"), so with the container links' offload on, TCP and UDP stop
// on VXLAN paths, contiv's and plain OVS's alike (docs/traffic.md). Those
// settings restart ovs-vswitchd (OVS reads the key only at start), so they
// come last.
func settings() []setting {
	s := []setting{{name: "default"}, {name: "jumbo", jumbo: true}}
	if os.Getenv("THROUGHPUT_TSO") == "1" {
		s = append(s, setting{name: "tso", tso: true}, setting{name: "tso-jumbo", tso: true, jumbo: true})
	}
	return s
}

// rounds is how often each OVS path is measured per setting, alternating
// which goes first, so that a change of the machine's load during a run
// does not favour one of them.
const rounds = 2

func BenchmarkTCPThroughput(b *testing.B) {
	if _, err := exec.LookPath("iperf3"); err != nil {
		testbed.RequireComponent(b, "iperf3 (Debian package iperf3)", err)
	}
	tb := testbed.New(b, testbed.Config{Hosts: 2, NetMode: "vlan", FwdMode: "bridge"})
	if out, err := tb.Netctl("net", "create", "--encap", "vxlan", "--subnet", "198.19.40.0/24", "--gateway", "198.19.40.254", "tput"); err != nil {
		b.Fatalf("net create: %v\n%s", err, out)
	}
	c0 := tb.Hosts[0].NewContainerNS(b, "tx")
	c1 := tb.Hosts[1].NewContainerNS(b, "rx")
	r0 := attachOne(b, tb.Hosts[0], c0)
	r1 := attachOne(b, tb.Hosts[1], c1)
	ip1 := strings.Split(r1.IPAddress, "/")[0]
	contiv := path{name: "contiv", contLinks: [2]string{r0.IfName, r1.IfName}, hostLinks: [2]string{r0.PortName, r1.PortName}, dst: ip1}
	// The direct path: a second link in each namespace, plugged into the
	// fabric's underlay bridge.
	for i, c := range []*testbed.Container{c0, c1} {
		fab := fmt.Sprintf("tp%d", i)
		cmds := [][]string{
			{"ip", "-n", tb.FabricNS, "link", "add", fab, "type", "veth", "peer", "name", "direct", "netns", c.NS},
			{"ip", "-n", tb.FabricNS, "link", "set", fab, "master", testbed.UnderlayBridge, "up"},
			{"ip", "-n", c.NS, "addr", "add", fmt.Sprintf("198.19.41.%d/24", i+1), "dev", "direct"},
			{"ip", "-n", c.NS, "link", "set", "direct", "up"},
		}
		run(b, cmds...)
		b.Cleanup(func() { exec.Command("ip", "-n", tb.FabricNS, "link", "del", fab).Run() })
	}
	direct := path{name: "direct", contLinks: [2]string{"direct", "direct"}, dst: "198.19.41.2"}
	plainOVS(b, tb, c0, c1)
	plain := path{name: "plain-ovs", contLinks: [2]string{plainLink, plainLink}, hostLinks: [2]string{"pl0", "pl1"}, dst: "198.19.42.2"}
	for _, p := range []path{contiv, direct, plain} {
		if err := c0.Ping(p.dst, 1, 20*time.Second); err != nil {
			b.Fatalf("%s: %v", p.name, err)
		}
	}
	cs := []*testbed.Container{c0, c1}
	for i := 0; i < b.N; i++ {
		tsoOn := false
		for _, s := range settings() {
			if s.tso && !tsoOn {
				enableTSO(b, tb)
				tsoOn = true
			}
			setMTU(b, tb, cs, []path{contiv, plain, direct}, s.jumbo)
			// The container links of the OVS paths: TX checksum offload
			// (and with it TSO) as netplugin's driver leaves it (off),
			// or on where userspace TSO takes such segments.
			for _, p := range []path{contiv, plain} {
				for j, c := range cs {
					if out, err := c.Exec("ethtool", "-K", p.contLinks[j], "tx", onOff(s.tso)); err != nil {
						b.Fatalf("%v: %s", err, out)
					}
				}
			}
			if s.jumbo {
				jumboAsCreated(b, tb, c0, contiv)
			}
			rates := map[string]float64{}
			// ovs-vswitchd CPU time of both hosts per byte received:
			// the datapath's cost per byte, which the machine's load
			// moves far less than the rate (docs/traffic.md).
			cpuTime := map[string]time.Duration{}
			sent := map[string]float64{}
			order := []path{contiv, plain, plain, contiv, direct}
			for _, p := range order[:2*rounds+1] {
				if err := c0.Ping(p.dst, 1, 30*time.Second); err != nil {
					b.Logf("%s/%s: no ping: %v", s.name, p.name, err)
					continue
				}
				stats0 := clearDPStats(tb, p)
				cpu0 := vswitchdCPU(b, tb)
				r, bytes, err := iperf(b, c0, c1, p.dst, false)
				if err != nil {
					b.Logf("%s/%s TCP: %v", s.name, p.name, err)
				}
				if stats0 {
					b.Logf("%s/%s datapath after TCP: %s", s.name, p.name, dpStats(tb))
				}
				cpu := vswitchdCPU(b, tb) - cpu0
				b.Logf("%s/%s TCP %.1f Mbit/s, ovs-vswitchd CPU %.2f s for %.0f MB", s.name, p.name, r, cpu.Seconds(), bytes/1e6)
				n := 1.0
				if p.name != "direct" {
					n = rounds
				}
				rates[p.name] += r / n
				cpuTime[p.name] += cpu
				sent[p.name] += bytes
				// UDP: a bounded rate; the check is that it arrives.
				if u, _, err := iperf(b, c0, c1, p.dst, true); err != nil || u == 0 {
					b.Logf("%s/%s UDP FAILED: %.1f Mbit/s %v", s.name, p.name, u, err)
				}
			}
			for _, name := range []string{"contiv", "plain-ovs", "direct"} {
				b.ReportMetric(rates[name]/1000, s.name+"-"+name+"-Gbit/s")
			}
			if rates["plain-ovs"] > 0 {
				b.ReportMetric(rates["contiv"]/rates["plain-ovs"], s.name+"-ratio-plain-ovs")
			}
			cost := func(name string) float64 { // CPU seconds per GB
				if sent[name] == 0 {
					return 0
				}
				return cpuTime[name].Seconds() / (sent[name] / 1e9)
			}
			if cost("contiv") > 0 && cost("plain-ovs") > 0 {
				b.ReportMetric(cost("contiv"), s.name+"-contiv-cpu-s/GB")
				b.ReportMetric(cost("plain-ovs"), s.name+"-plain-ovs-cpu-s/GB")
				// plain / contiv: 1 when contiv's pipeline costs the
				// datapath nothing per byte; the rate ratio a machine
				// bound by ovs-vswitchd's CPU would show.
				b.ReportMetric(cost("plain-ovs")/cost("contiv"), s.name+"-cpu-ratio-plain-ovs")
				b.Logf("%-9s ovs-vswitchd CPU per GB: contiv %.2f s, plain OVS %.2f s, plain/contiv %.2f",
					s.name, cost("contiv"), cost("plain-ovs"), cost("plain-ovs")/cost("contiv"))
			}
			if rates["direct"] > 0 {
				b.ReportMetric(rates["contiv"]/rates["direct"], s.name+"-ratio-direct")
			}
			b.Logf("%-9s contiv %7.1f  plain OVS %7.1f  direct %7.1f Mbit/s  contiv/plain %.2f",
				s.name, rates["contiv"], rates["plain-ovs"], rates["direct"], rates["contiv"]/rates["plain-ovs"])
			if s.name == "default" {
				traceContiv(b, tb, c0, contiv)
			}
		}
	}
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// run runs commands and fails b on the first error.
func run(b *testing.B, cmds ...[]string) {
	b.Helper()
	for _, args := range cmds {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			b.Fatalf("%v: %v: %s", args, err, out)
		}
	}
}

// enableTSO sets userspace-tso-enable on both hosts' OVS and restarts
// ovs-vswitchd, which reads it only at start; netplugin reconnects and
// pushes its flows again.
func enableTSO(b *testing.B, tb *testbed.Testbed) {
	b.Helper()
	for _, h := range tb.Hosts {
		if out, err := h.Vsctl("set", "Open_vSwitch", ".", "other_config:userspace-tso-enable=true"); err != nil {
			b.Fatalf("%s: %v: %s", h.Name, err, out)
		}
		h.RestartVswitchd(b)
	}
}

// setMTU gives the underlay (the fabric's ends of the hosts' underlay
// links, the hosts' eth1 and br-phy) 9000 bytes when jumbo, else 1500, and
// every link of the paths the matching size: the container sides 50 bytes
// less on the VXLAN paths, as netplugin would give a new endpoint on such
// a host, the OVS ends the full size (a veth drops what is larger than the
// receiving end's MTU).
func setMTU(b *testing.B, tb *testbed.Testbed, cs []*testbed.Container, paths []path, jumbo bool) {
	b.Helper()
	mtu := 1500
	if jumbo {
		mtu = 9000
	}
	m := fmt.Sprint(mtu)
	var cmds [][]string
	for i, h := range tb.Hosts {
		cmds = append(cmds,
			[]string{"ip", "-n", tb.FabricNS, "link", "set", fmt.Sprintf("h%du", i), "mtu", m},
			[]string{"ip", "-n", tb.FabricNS, "link", "set", fmt.Sprintf("tp%d", i), "mtu", m},
			[]string{"ip", "-n", h.NS, "link", "set", testbed.UnderlayIf, "mtu", m})
		if out, err := h.Vsctl("set", "interface", testbed.PhyBridge, "mtu_request="+m); err != nil {
			b.Fatalf("%s: %v: %s", h.Name, err, out)
		}
	}
	for _, p := range paths {
		for j, c := range cs {
			cm := mtu
			if p.hostLinks[j] != "" {
				cmds = append(cmds, []string{"ip", "-n", tb.Hosts[j].NS, "link", "set", p.hostLinks[j], "mtu", m})
				cm -= 50
			}
			cmds = append(cmds, []string{"ip", "-n", c.NS, "link", "set", p.contLinks[j], "mtu", fmt.Sprint(cm)})
		}
	}
	run(b, cmds...)
}

// jumboAsCreated logs whether a full-size packet crosses the contiv path
// with the OVS ends of the endpoint veths at the MTU netplugin creates them
// with (the kernel's 1500) while the container ends have the jumbo MTU: a
// veth drops a frame larger than its peer's MTU. setMTU then raises them.
func jumboAsCreated(b *testing.B, tb *testbed.Testbed, c0 *testbed.Container, p path) {
	b.Helper()
	set := func(mtu string) {
		for j, h := range tb.Hosts[:2] {
			run(b, []string{"ip", "-n", h.NS, "link", "set", p.hostLinks[j], "mtu", mtu})
		}
	}
	set("1500")
	out, err := c0.Exec("ping", "-M", "do", "-s", "8900", "-c", "2", "-W", "3", p.dst)
	b.Logf("jumbo, OVS-side veth MTU as netplugin leaves it (1500): 8928-byte ping to %s: err=%v\n%s", p.dst, err, out)
	set("9000")
	out, err = c0.Exec("ping", "-M", "do", "-s", "8900", "-c", "2", "-W", "3", p.dst)
	b.Logf("jumbo, OVS-side veth MTU 9000: 8928-byte ping to %s: err=%v\n%s", p.dst, err, out)
}

// clearDPStats clears the datapath statistics of both hosts for a path
// through OVS and reports whether it did.
func clearDPStats(tb *testbed.Testbed, p path) bool {
	if p.hostLinks[0] == "" {
		return false
	}
	for _, h := range tb.Hosts {
		h.OVS.Appctl("ovs-vswitchd", "dpif-netdev/pmd-stats-clear")
	}
	return true
}

// dpStats is each host's datapath passes per packet (1 + recirculations)
// and processing cycles per packet from dpif-netdev/pmd-stats-show.
func dpStats(tb *testbed.Testbed) string {
	var parts []string
	for _, h := range tb.Hosts {
		out, err := h.OVS.Appctl("ovs-vswitchd", "dpif-netdev/pmd-stats-show")
		if err != nil {
			parts = append(parts, fmt.Sprintf("%s: %v", h.Name, err))
			continue
		}
		var keep []string
		for _, l := range strings.Split(out, "\n") {
			l = strings.TrimSpace(l)
			for _, k := range []string{"packets received", "packet recirculations", "avg. datapath passes", "avg. subtable lookups",
				"phwol hits", "megaflow hits", "emc hits", "smc hits", "miss with success", "avg cycles per packet", "avg processing cycles"} {
				if strings.HasPrefix(l, k) {
					keep = append(keep, l)
				}
			}
		}
		parts = append(parts, fmt.Sprintf("%s [%s]", h.Name, strings.Join(keep, "; ")))
	}
	return strings.Join(parts, " ")
}

// traceContiv logs ofproto/trace of one TCP packet of the contiv path on the
// sending host and the datapath flows both hosts hold, for counting tables
// and recirculations (docs/traffic.md).
func traceContiv(b *testing.B, tb *testbed.Testbed, c0 *testbed.Container, p path) {
	b.Helper()
	src, _ := c0.Exec("cat", "/sys/class/net/"+p.contLinks[0]+"/address")
	neigh, _ := c0.Exec("ip", "neigh", "show", p.dst)
	f := strings.Fields(neigh)
	dst := ""
	for i := range f {
		if f[i] == "lladdr" && i+1 < len(f) {
			dst = f[i+1]
		}
	}
	ip0, _ := c0.Exec("ip", "-4", "-o", "addr", "show", "dev", p.contLinks[0])
	srcIP := ""
	if g := strings.Fields(ip0); len(g) > 3 {
		srcIP = strings.Split(g[3], "/")[0]
	}
	h := tb.Hosts[0]
	br, _ := h.Vsctl("port-to-br", p.hostLinks[0])
	flow := fmt.Sprintf("in_port=%s,tcp,dl_src=%s,dl_dst=%s,nw_src=%s,nw_dst=%s,tp_src=40000,tp_dst=5201",
		p.hostLinks[0], strings.TrimSpace(src), dst, srcIP, p.dst)
	out, err := h.OVS.Appctl("ovs-vswitchd", "ofproto/trace", strings.TrimSpace(br), flow)
	b.Logf("ofproto/trace %s %s (%v):\n%s", strings.TrimSpace(br), flow, err, out)
	for _, h := range tb.Hosts {
		out, _ := h.OVS.Appctl("ovs-vswitchd", "dpctl/dump-flows", "-m")
		b.Logf("%s datapath flows:\n%s", h.Name, out)
	}
}

// plainBridge, plainVNI and plainLink name the plain-OVS baseline's bridge,
// its tunnel key (far from the VNIs netmaster hands out, so the tunnel port
// with this exact key takes these packets, not contiv's key=flow port) and
// the container-side link.
const (
	plainBridge = "plainbr"
	plainVNI    = "16000001"
	plainLink   = "plain"
)

// plainOVS joins c0 and c1 through a userspace OVS bridge on each host and
// a VXLAN tunnel between the hosts' VTEP addresses, with the bridges in
// standalone mode (NORMAL forwarding), as an operator would set it up by
// hand. Addresses are 198.19.42.1 and .2.
func plainOVS(b *testing.B, tb *testbed.Testbed, c0, c1 *testbed.Container) {
	b.Helper()
	hosts := []*testbed.Host{tb.Hosts[0], tb.Hosts[1]}
	for i, c := range []*testbed.Container{c0, c1} {
		h, peer := hosts[i], hosts[1-i]
		if out, err := h.Vsctl("add-br", plainBridge, "--", "set", "bridge", plainBridge, "datapath_type=netdev", "fail_mode=standalone",
			"--", "add-port", plainBridge, "plaintun", "--", "set", "interface", "plaintun", "type=vxlan",
			"options:remote_ip="+peer.IP, "options:key="+plainVNI); err != nil {
			b.Fatalf("%s: add %s: %v: %s", h.Name, plainBridge, err, out)
		}
		b.Cleanup(func() { h.Vsctl("--if-exists", "del-br", plainBridge) })
		hostSide := fmt.Sprintf("pl%d", i)
		cmds := [][]string{
			{"ip", "-n", h.NS, "link", "add", hostSide, "type", "veth", "peer", "name", plainLink, "netns", c.NS},
			{"ip", "-n", h.NS, "link", "set", hostSide, "up"},
			{"ip", "-n", c.NS, "addr", "add", fmt.Sprintf("198.19.42.%d/24", i+1), "dev", plainLink},
			{"ip", "-n", c.NS, "link", "set", plainLink, "mtu", "1450", "up"},
		}
		for _, args := range cmds {
			if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
				b.Fatalf("%v: %v: %s", args, err, out)
			}
		}
		if err := testbed.DisableTxOffload(c.NS, plainLink); err != nil {
			b.Fatal(err)
		}
		if out, err := h.Vsctl("add-port", plainBridge, hostSide); err != nil {
			b.Fatalf("%s: add-port %s: %v: %s", h.Name, hostSide, err, out)
		}
	}
}

func attachOne(b *testing.B, h *testbed.Host, c *testbed.Container) attach.Result {
	b.Helper()
	res, err := attach.NewClient(h.AttachSocket()).Attach(b.Context(), attach.Request{Tenant: "default", Network: "tput",
		ContainerID: c.NS, Name: c.Name, NetNS: c.NSPath()})
	if err != nil {
		b.Fatalf("attach %s: %v", c.Name, err)
	}
	return res
}

// iperf runs iperf3 from → to's address ip and returns the receiver's rate
// in Mbit/s and the bytes it received: TCP for seconds, or UDP at a bounded
// 100 Mbit/s for 2 s.
func iperf(b *testing.B, from, to *testbed.Container, ip string, udp bool) (float64, float64, error) {
	b.Helper()
	srv := exec.Command("ip", "netns", "exec", to.NS, "iperf3", "-s", "-1", "-B", ip)
	if err := srv.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	args := []string{"netns", "exec", from.NS, "iperf3", "-c", ip, "-t", fmt.Sprint(seconds), "-O", "1", "-J"}
	if udp {
		args = []string{"netns", "exec", from.NS, "iperf3", "-c", ip, "-u", "-b", "100M", "-t", "2", "-J"}
	}
	var out []byte
	var err error
	for range 50 { // until the server listens
		ctx, cancel := context.WithTimeout(b.Context(), 30*time.Second)
		out, err = exec.CommandContext(ctx, "ip", args...).Output()
		cancel()
		if !strings.Contains(string(out), "unable to connect") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("iperf3 to %s: %w\n%s", ip, err, out)
	}
	var res struct {
		End struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
				Bytes         float64 `json:"bytes"`
			} `json:"sum_received"`
			Sum struct {
				BitsPerSecond float64 `json:"bits_per_second"`
				LostPercent   float64 `json:"lost_percent"`
			} `json:"sum"`
		} `json:"end"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return 0, 0, fmt.Errorf("iperf3 output (%w):\n%s", err, out)
	}
	if udp {
		if res.End.Sum.LostPercent > 50 {
			return 0, 0, fmt.Errorf("UDP: %.0f %% lost", res.End.Sum.LostPercent)
		}
		return res.End.Sum.BitsPerSecond * (1 - res.End.Sum.LostPercent/100) / 1e6, 0, nil
	}
	if res.End.SumReceived.BitsPerSecond == 0 {
		return 0, 0, fmt.Errorf("iperf3: nothing received:\n%s", out)
	}
	return res.End.SumReceived.BitsPerSecond / 1e6, res.End.SumReceived.Bytes, nil
}

// vswitchdCPU is the CPU time (user and system, all threads) both hosts'
// ovs-vswitchd processes have used so far, from /proc/<pid>/stat.
func vswitchdCPU(b *testing.B, tb *testbed.Testbed) time.Duration {
	b.Helper()
	var total time.Duration
	for _, h := range tb.Hosts {
		pid, err := h.OVS.PID("ovs-vswitchd")
		if err != nil {
			b.Fatal(err)
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			b.Fatalf("ovs-vswitchd of %s: %v", h.Name, err)
		}
		// Fields after the command name, which is in parentheses and may
		// hold spaces: state is field 3, utime 14 and stime 15.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) < 13 {
			b.Fatalf("ovs-vswitchd of %s: short /proc stat %q", h.Name, stat)
		}
		for _, v := range f[11:13] {
			ticks, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				b.Fatalf("ovs-vswitchd of %s: /proc stat %q: %v", h.Name, stat, err)
			}
			total += time.Duration(ticks) * time.Second / clockTicks
		}
	}
	return total
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/<pid>/stat's times
// (100 on every Linux architecture Go supports here).
const clockTicks = 100
