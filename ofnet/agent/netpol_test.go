package agent

import (
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPortMasks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi uint16
		want   [][2]uint16
	}{
		{80, 80, [][2]uint16{{80, 0xffff}}},
		{8080, 8087, [][2]uint16{{8080, 0xfff8}}},
		{8079, 8081, [][2]uint16{{8079, 0xffff}, {8080, 0xfffe}}},
		{1, 65535, nil}, // checked by coverage below
	} {
		got := portMasks(tc.lo, tc.hi)
		if tc.want != nil && !slices.Equal(got, tc.want) {
			t.Errorf("portMasks(%d,%d) = %v, want %v", tc.lo, tc.hi, got, tc.want)
		}
		covered := 0
		for p := 0; p < 65536; p++ {
			in := false
			for _, m := range got {
				if uint16(p)&m[1] == m[0] {
					if in {
						t.Fatalf("port %d covered twice in %v", p, got)
					}
					in = true
				}
			}
			if in != (p >= int(tc.lo) && p <= int(tc.hi)) {
				t.Fatalf("portMasks(%d,%d): port %d covered=%v", tc.lo, tc.hi, p, in)
			}
			if in {
				covered++
			}
		}
	}
}

func TestNetworkPolicyVxlanBridge(t *testing.T)  { testNetworkPolicyLocal(t, DatapathVxlan) }
func TestNetworkPolicyVxlanRouting(t *testing.T) { testNetworkPolicyLocal(t, DatapathVrouter) }
func TestNetworkPolicyVlanBridge(t *testing.T)   { testNetworkPolicyLocal(t, DatapathVlan) }

// TestNetworkPolicyRefusedOnOtherDatapaths: the datapaths that do not
// enforce NetworkPolicy say so and install nothing.
func TestNetworkPolicyRefusedOnOtherDatapaths(t *testing.T) {
	for _, dp := range []string{DatapathVlrouter} {
		a := &Agent{cfg: Config{Bridge: "b", Datapath: dp}}
		if err := a.SetNetworkPolicy(testCtx(t), nil); !errors.Is(err, ErrNetpolUnsupported) {
			t.Errorf("%s: SetNetworkPolicy = %v, want ErrNetpolUnsupported", dp, err)
		}
		if a.netpol != nil {
			t.Errorf("%s: netpol state recorded", dp)
		}
	}
}

// testNetworkPolicyLocal: three endpoints on one bridge. B accepts TCP
// 8080-8081 from A only; A accepts nothing new (its replies still pass); C may
// open nothing. Removing the rules opens everything again; bad input is refused
// and changes nothing.
func testNetworkPolicyLocal(t *testing.T, datapath string) {
	h := startHost(t, datapath, "198.18.0.1")
	ctx := testCtx(t)
	var vni uint32 = 7000
	var tag uint16
	if datapath == DatapathVlan {
		vni, tag = 0, 10
	}
	if err := h.agent.AddNetwork(ctx, 10, vni, "198.18.10.254", "t1"); err != nil {
		t.Fatal(err)
	}
	var cs []*container
	for _, ip := range []string{"198.18.10.1", "198.18.10.2", "198.18.10.3"} {
		c := h.addContainer(t, ip, 24, tag, 0)
		c.txOffloadOff(t)
		if err := h.agent.AddLocalEndpoint(ctx, c.endpointInfo(10, 0)); err != nil {
			t.Fatal(err)
		}
		c.serveIdentity(t, 8080)
		cs = append(cs, c)
	}
	a, b, c := cs[0], cs[1], cs[2]
	var attempts []string // what each connection attempt of the last reach saw
	reach1 := func(from, to *container) bool {
		start := time.Now()
		_, err := from.dial(to.ip.String()+":8080", 2*time.Second)
		attempts = append(attempts, fmt.Sprintf("%s +%v: %v", start.Format("15:04:05.000"), time.Since(start).Round(time.Millisecond), err))
		return err == nil
	}
	// reach waits up to 10 s for the answer the current rules give: OVS
	// revalidates the datapath flows it cached for earlier connections
	// asynchronously after a flow table change. Then it asks once more.
	var want bool
	reach := func(from, to *container) bool {
		attempts = attempts[:0]
		for end := time.Now().Add(10 * time.Second); reach1(from, to) != want && time.Now().Before(end); {
			time.Sleep(100 * time.Millisecond)
		}
		return reach1(from, to)
	}
	want = true
	for _, p := range [][2]*container{{a, b}, {b, a}, {c, b}} {
		if !reach(p[0], p[1]) {
			t.Fatalf("%s → %s fails before any policy", p[0].ip, p[1].ip)
		}
	}
	ipA, ipB, ipC := netip.MustParseAddr("198.18.10.1"), netip.MustParseAddr("198.18.10.2"), netip.MustParseAddr("198.18.10.3")
	rules := map[netip.Addr]NetpolPod{
		ipA: {IngressIsolated: true},
		ipB: {IngressIsolated: true, Ingress: []NetpolAllow{{Peer: netip.PrefixFrom(ipA, 32), Proto: 6, PortMin: 8080, PortMax: 8081}}},
		ipC: {EgressIsolated: true},
	}
	if err := h.agent.SetNetworkPolicy(ctx, rules); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		from, to *container
		want     bool
	}{
		{a, b, true},  // allowed, and the replies pass A's default deny
		{b, a, false}, // A accepts nothing new
		{c, b, false}, // C may open nothing, and B does not accept C
		{c, a, false},
	} {
		want = tc.want
		if got := reach(tc.from, tc.to); got != tc.want {
			t.Errorf("%s → %s: reached %v, want %v\nattempts:\n%s\n%s\n%s", tc.from.ip, tc.to.ip, got, tc.want,
				strings.Join(attempts, "\n"), strings.Join(h.flows(t), "\n"), h.netpolDiag(tc.from, tc.to, 8080, datapath))
		}
	}
	// A new TCP packet without SYN (a connection conntrack lost) passes the
	// isolation of A; a SYN, which would open a connection, does not.
	for _, tc := range []struct {
		flags string
		pass  bool
	}{{"0x010", true}, {"0x019", true}, {"0x002", false}} {
		flow := fmt.Sprintf("in_port=%d,tcp,dl_src=%s,dl_dst=%s,nw_src=%s,nw_dst=%s,tp_src=8080,tp_dst=40000,tcp_flags=%s",
			b.port, b.mac, a.mac, b.ip, a.ip, tc.flags)
		out, err := h.ovs.Appctl("ovs-vswitchd", "ofproto/trace", h.bridge, flow)
		if err != nil {
			t.Fatalf("ofproto/trace %s: %v\n%s", flow, err, out)
		}
		acts := lastDatapathActions(out)
		if passed := acts != "" && acts != "drop"; passed != tc.pass {
			t.Errorf("B → A tcp_flags=%s as a new connection: final datapath actions %q, want passed=%v\n%s", tc.flags, acts, tc.pass, out)
		}
	}
	before := h.flows(t)
	for _, bad := range []map[netip.Addr]NetpolPod{
		{netip.MustParseAddr("2001:db8::1"): {}},
		{ipA: {IngressIsolated: true, Ingress: []NetpolAllow{{Peer: netip.MustParsePrefix("2001:db8::/64")}}}},
		{ipA: {IngressIsolated: true, Ingress: []NetpolAllow{{Peer: netip.PrefixFrom(ipB, 32), Proto: 6, PortMin: 90, PortMax: 80}}}},
		{ipA: {IngressIsolated: true, Ingress: []NetpolAllow{{Peer: netip.PrefixFrom(ipB, 32), PortMin: 80, PortMax: 80}}}},
	} {
		if err := h.agent.SetNetworkPolicy(ctx, bad); err == nil {
			t.Errorf("SetNetworkPolicy(%v) accepted", bad)
		}
	}
	if after := h.flows(t); !slices.Equal(before, after) {
		t.Errorf("refused input changed the flows")
	}
	if err := h.agent.SetNetworkPolicy(ctx, nil); err != nil {
		t.Fatal(err)
	}
	want = true
	for _, p := range [][2]*container{{a, b}, {b, a}, {c, b}, {c, a}} {
		if !reach(p[0], p[1]) {
			stats, _ := h.ovs.Ofctl("-O", "OpenFlow13", "dump-flows", h.bridge)
			t.Errorf("%s → %s fails after the rules were removed\n%s", p[0].ip, p[1].ip, stats)
		}
	}
}

// netpolDiag is what a NetworkPolicy failure report needs: the zone's
// connection tracker entries, the trace of a SYN from one container to the
// other's port, both ARP tables and the datapath flows.
func (h *host) netpolDiag(from, to *container, port int, datapath string) string {
	zone := "zone=16385"
	if datapath == DatapathVlan {
		zone = "zone=16386"
	}
	var b strings.Builder
	out, err := h.ovs.Appctl("ovs-vswitchd", "dpctl/dump-conntrack", zone)
	fmt.Fprintf(&b, "--- dpctl/dump-conntrack %s (%v) ---\n%s\n", zone, err, out)
	flow := fmt.Sprintf("in_port=%d,tcp,dl_src=%s,dl_dst=%s,nw_src=%s,nw_dst=%s,tp_src=40000,tp_dst=%d,tcp_flags=0x002",
		from.port, from.mac, to.mac, from.ip, to.ip, port)
	out, err = h.ovs.Appctl("ovs-vswitchd", "ofproto/trace", h.bridge, flow)
	fmt.Fprintf(&b, "--- ofproto/trace %s (%v) ---\n%s\n", flow, err, out)
	for _, c := range []*container{from, to} {
		arp, err := exec.Command("ip", "netns", "exec", c.ns, "ip", "neigh").CombinedOutput()
		fmt.Fprintf(&b, "--- ip neigh in %s (%v) ---\n%s\n", c.ip, err, arp)
		socks, err := exec.Command("ip", "netns", "exec", c.ns, "ss", "-tanoi").CombinedOutput()
		fmt.Fprintf(&b, "--- ss -tanoi in %s (%v) ---\n%s\n", c.ip, err, socks)
	}
	out, err = h.ovs.Appctl("ovs-vswitchd", "dpctl/dump-conntrack", "-s")
	fmt.Fprintf(&b, "--- dpctl/dump-conntrack -s, all zones (%v) ---\n%s\n", err, out)
	out, err = h.ovs.Appctl("ovs-vswitchd", "coverage/show")
	fmt.Fprintf(&b, "--- coverage/show (%v) ---\n%s\n", err, out)
	out, err = h.ovs.Appctl("ovs-vswitchd", "dpctl/dump-flows")
	fmt.Fprintf(&b, "--- dpctl/dump-flows (%v) ---\n%s\n", err, out)
	return b.String()
}

// lastDatapathActions is the last "Datapath actions:" of an ofproto/trace
// output: what happens to the packet after its last recirculation.
func lastDatapathActions(trace string) string {
	last := ""
	for _, l := range strings.Split(trace, "\n") {
		if a, ok := strings.CutPrefix(strings.TrimSpace(l), "Datapath actions:"); ok {
			last = strings.TrimSpace(a)
		}
	}
	return last
}
