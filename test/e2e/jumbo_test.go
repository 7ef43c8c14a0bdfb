package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/test/testbed"
)

// TestJumboUnderlay: with every underlay link at MTU 9000 before netplugin
// starts, VXLAN endpoints get 8950 on both ends of their veth
// (docs/traffic.md, "Jumbo underlay"), the next endpoint gets the same, and
// full-size packets cross between hosts: a don't-fragment ping that fills
// the MTU, a bulk TCP transfer (full-size segments) and a UDP datagram that
// fills the MTU.
func TestJumboUnderlay(t *testing.T) {
	tb := testbed.New(t, testbed.Config{Hosts: 2, NetMode: "vlan", FwdMode: "bridge", SkipNetplugin: true})
	for i, h := range tb.Hosts {
		// Every link of the host (management, underlay, VLAN trunk) and
		// its fabric end, as on a host whose network is all jumbo.
		var cmds [][]string
		for j, l := range []string{testbed.MgmtIf, testbed.UnderlayIf, testbed.TrunkIf} {
			cmds = append(cmds, []string{"ip", "-n", tb.FabricNS, "link", "set", fmt.Sprintf("h%d%c", i, "muv"[j]), "mtu", "9000"},
				[]string{"ip", "-n", h.NS, "link", "set", l, "mtu", "9000"})
		}
		for _, args := range cmds {
			if out, err := h.Exec(args...); err != nil {
				t.Fatalf("%v: %v: %s", args, err, out)
			}
		}
		if out, err := h.Vsctl("set", "interface", testbed.PhyBridge, "mtu_request=9000"); err != nil {
			t.Fatalf("%s: %v: %s", h.Name, err, out)
		}
	}
	for _, h := range tb.Hosts {
		h.StartNetplugin(t)
	}
	tb.WaitNetplugins(t, 2, 60*time.Second)
	netctl(t, tb, "net", "create", "--encap", "vxlan", "--subnet", "198.19.44.0/24", "--gateway", "198.19.44.254", "jumbo")

	const mtu = 8950
	a := attachNew(t, tb.Hosts[0], "ja", "default", "jumbo", "")
	b := attachNew(t, tb.Hosts[1], "jb", "default", "jumbo", "")
	a2 := attachNew(t, tb.Hosts[0], "ja2", "default", "jumbo", "")
	for _, c := range []*ctr{a, b, a2} {
		if got := linkMTU(t, c.Container.Exec, c.res.IfName); got != mtu {
			t.Errorf("%s: container side %s MTU %d, want %d", c.Name, c.res.IfName, got, mtu)
		}
		if got := linkMTU(t, c.host.Exec, c.res.PortName); got != mtu {
			t.Errorf("%s: OVS side %s MTU %d, want %d", c.Name, c.res.PortName, got, mtu)
		}
	}
	if t.Failed() {
		for _, h := range tb.Hosts {
			out, _ := h.Exec("ip", "-o", "link")
			t.Logf("%s links:\n%s", h.Name, out)
		}
	}
	if err := pingOK(a, b, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, pair := range [][2]*ctr{{a, b}, {b, a2}} {
		from, to := pair[0], pair[1]
		// ICMP: 8950 - 20 - 8 bytes of payload, don't fragment.
		if out, err := from.Exec("ping", "-n", "-M", "do", "-s", strconv.Itoa(mtu-28), "-c", "2", "-W", "2", "-w", "10", to.ip()); err != nil {
			t.Errorf("%s → %s: full-size don't-fragment ping: %v\n%s", from.Name, to.Name, err, out)
		}
		// TCP: 3 MB with matching checksum, sent in MSS-sized segments.
		if err := from.TCPEcho(to.ip(), testbed.TrafficPort, testbed.BulkBytes, trafficTimeout); err != nil {
			t.Errorf("%s → %s: %v", from.Name, to.Name, err)
		}
		// UDP: a datagram filling the MTU (the kernel sets DF on it).
		if err := from.UDPEchoSize(to.ip(), testbed.TrafficPort, mtu-28, trafficTimeout); err != nil {
			t.Errorf("%s → %s: %v", from.Name, to.Name, err)
		}
	}
}

// linkMTU reads a link's MTU with exec ("ip -o link show NAME").
func linkMTU(t *testing.T, exec func(...string) (string, error), name string) int {
	t.Helper()
	out, err := exec("ip", "-o", "link", "show", name)
	if err != nil {
		t.Fatalf("ip link show %s: %v: %s", name, err, out)
	}
	f := strings.Fields(out)
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "mtu" {
			n, err := strconv.Atoi(f[i+1])
			if err != nil {
				t.Fatalf("%s: mtu %q", name, f[i+1])
			}
			return n
		}
	}
	t.Fatalf("%s: no mtu in %q", name, out)
	return 0
}
