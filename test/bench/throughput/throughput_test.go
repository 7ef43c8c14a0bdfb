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
//     encapsulation), with TX offload on and again off.
//
// Rates are iperf3's receiver side in Mbit/s.
//
//	go test ./test/bench/throughput -run '^$' -bench . -benchtime 1x
package throughput

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/api/attach"
	"github.com/contiv/netplugin/test/testbed"
)

// seconds is the length of each iperf3 run (plus one omitted second).
const seconds = 5

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
	attachOne(b, tb.Hosts[0], c0)
	ip1 := attachOne(b, tb.Hosts[1], c1)
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
		for _, args := range cmds {
			if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
				b.Fatalf("%v: %v: %s", args, err, out)
			}
		}
		b.Cleanup(func() { exec.Command("ip", "-n", tb.FabricNS, "link", "del", fab).Run() })
	}
	if err := c0.Ping(ip1, 1, 20*time.Second); err != nil {
		b.Fatal(err)
	}
	if err := c0.Ping("198.19.41.2", 1, 20*time.Second); err != nil {
		b.Fatal(err)
	}
	plainOVS(b, tb, c0, c1)
	if err := c0.Ping("198.19.42.2", 1, 20*time.Second); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		viaContiv := iperf(b, c0, c1, ip1)
		viaOVS := iperf(b, c0, c1, "198.19.42.2")
		direct := iperf(b, c0, c1, "198.19.41.2")
		b.ReportMetric(viaContiv, "contiv-Mbit/s")
		b.ReportMetric(viaOVS, "plain-ovs-Mbit/s")
		b.ReportMetric(viaContiv/viaOVS, "ratio-plain-ovs")
		b.ReportMetric(direct, "direct-Mbit/s")
		b.ReportMetric(viaContiv/direct, "ratio")
		// The direct link with the container side's offload setting on the
		// userspace datapath (no TX checksum offload, hence no TSO): the
		// share of the gap that is segmentation rather than OVS and VXLAN.
		for _, c := range []*testbed.Container{c0, c1} {
			if out, err := c.Exec("ethtool", "-K", "direct", "tx", "off"); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
		}
		plain := iperf(b, c0, c1, "198.19.41.2")
		for _, c := range []*testbed.Container{c0, c1} {
			c.Exec("ethtool", "-K", "direct", "tx", "on")
		}
		b.ReportMetric(plain, "direct-tx-off-Mbit/s")
		b.ReportMetric(viaContiv/plain, "ratio-tx-off")
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

func attachOne(b *testing.B, h *testbed.Host, c *testbed.Container) string {
	b.Helper()
	res, err := attach.NewClient(h.AttachSocket()).Attach(b.Context(), attach.Request{Tenant: "default", Network: "tput",
		ContainerID: c.NS, Name: c.Name, NetNS: c.NSPath()})
	if err != nil {
		b.Fatalf("attach %s: %v", c.Name, err)
	}
	return strings.Split(res.IPAddress, "/")[0]
}

// iperf runs iperf3 from → to's address ip and returns the receiver's rate
// in Mbit/s.
func iperf(b *testing.B, from, to *testbed.Container, ip string) float64 {
	b.Helper()
	srv := exec.Command("ip", "netns", "exec", to.NS, "iperf3", "-s", "-1", "-B", ip)
	if err := srv.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	var out []byte
	var err error
	for range 50 { // until the server listens
		out, err = exec.Command("ip", "netns", "exec", from.NS, "iperf3", "-c", ip, "-t", fmt.Sprint(seconds), "-O", "1", "-J").Output()
		if !strings.Contains(string(out), "unable to connect") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		b.Fatalf("iperf3 to %s: %v\n%s", ip, err, out)
	}
	var res struct {
		End struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.End.SumReceived.BitsPerSecond == 0 {
		b.Fatalf("iperf3 output (%v):\n%s", err, out)
	}
	return res.End.SumReceived.BitsPerSecond / 1e6
}
