package agent

import (
	"net"
	"strings"
	"testing"
)

func hasFlow(flows []string, parts ...string) bool {
	for _, f := range flows {
		ok := true
		for _, p := range parts {
			if !strings.Contains(f, p) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// TestVlanRoutingFlows: the vlrouter flows of docs/dataplane.md §3.4 on a real
// switch: local endpoints in the IP table, the uplink into it, the BGP port's
// flows, learned routes only once the peer's MAC is known, flushed on demand.
func TestVlanRoutingFlows(t *testing.T) {
	h := startHost(t, DatapathVlrouter, "198.18.0.1")
	ctx := testCtx(t)
	a := h.agent
	if err := a.AddNetwork(ctx, 10, 0, "198.19.2.254", "default"); err != nil {
		t.Fatal(err)
	}
	ep := EndpointInfo{PortNo: 3, MacAddr: macFor(net.ParseIP("198.19.2.1")), IpAddr: net.ParseIP("198.19.2.1"), Vlan: 10}
	if err := a.AddLocalEndpoint(ctx, ep); err != nil {
		t.Fatal(err)
	}
	if err := a.AddUplink(ctx, 7, "eth2"); err != nil {
		t.Fatal(err)
	}
	if err := a.SetBgpPort(ctx, 8, net.ParseIP("198.18.50.11")); err != nil {
		t.Fatal(err)
	}
	_, route, _ := net.ParseCIDR("198.19.2.2/32")
	if err := a.AddBgpRoute(ctx, route); err != nil {
		t.Fatal(err)
	}
	flows := h.flows(t)
	for _, want := range [][]string{
		{"table=7", "priority=102", "nw_dst=198.19.2.1", "output:3"},
		{"table=1", "priority=100", "in_port=7", "goto_table:6"},
		{"priority=101", "in_port=8", "output:7"},
		{"priority=101", "arp", "in_port=7", "output:8"},
		{"priority=101", "in_port=7", "nw_dst=198.18.50.11", "output:8"},
		{"priority=100", "arp", "CONTROLLER"},
	} {
		if !hasFlow(flows, want...) {
			t.Errorf("no flow with %v:\n%s", want, strings.Join(flows, "\n"))
		}
	}
	if hasFlow(flows, "nw_dst=198.19.2.2") {
		t.Errorf("a learned route is installed before the peer's MAC is known")
	}
	peer, _ := net.ParseMAC("02:00:00:00:00:01")
	if err := a.SetBgpPeerMAC(ctx, peer); err != nil {
		t.Fatal(err)
	}
	if flows := h.flows(t); !hasFlow(flows, "table=7", "priority=101", "nw_dst=198.19.2.2", "02:00:00:00:00:01->eth_dst", "output:7") {
		t.Errorf("learned route not installed:\n%s", strings.Join(flows, "\n"))
	}
	if err := a.FlushBgpRoutes(ctx); err != nil {
		t.Fatal(err)
	}
	if flows := h.flows(t); hasFlow(flows, "nw_dst=198.19.2.2") {
		t.Errorf("route left after the flush")
	}
	if err := a.SetBgpPort(ctx, 0, nil); err != nil {
		t.Fatal(err)
	}
	if flows := h.flows(t); hasFlow(flows, "in_port=8") {
		t.Errorf("BGP port flows left after clearing it")
	}
	if err := (&Agent{cfg: Config{Datapath: DatapathVlan}}).SetBgpPort(ctx, 8, net.ParseIP("198.18.50.11")); err == nil {
		t.Error("SetBgpPort accepted on the vlan (bridging) datapath")
	}
}

// TestHostAccessFlows: the contivh0 flows of docs/dataplane.md §3.7.
func TestHostAccessFlows(t *testing.T) {
	h := startHost(t, DatapathVrouter, "198.18.0.1")
	ctx := testCtx(t)
	a := h.agent
	if err := a.AddNetwork(ctx, 1, 5000, "198.19.5.254", "default"); err != nil {
		t.Fatal(err)
	}
	ep := EndpointInfo{PortNo: 3, MacAddr: macFor(net.ParseIP("198.19.5.1")), IpAddr: net.ParseIP("198.19.5.1"), Vlan: 1}
	if err := a.AddLocalEndpoint(ctx, ep); err != nil {
		t.Fatal(err)
	}
	mac, _ := net.ParseMAC("02:02:ac:13:ff:fe")
	for _, bad := range []HostAccess{{}, {Port: 9, MAC: mac}, {Port: 9, MAC: mac, Addr: &net.IPNet{IP: net.ParseIP("172.19.255.254"), Mask: net.CIDRMask(24, 32)}}} {
		if err := a.SetHostAccess(ctx, bad); err == nil {
			t.Errorf("SetHostAccess(%+v) accepted", bad)
		}
	}
	if err := a.SetHostAccess(ctx, HostAccess{Port: 9, MAC: mac, Addr: &net.IPNet{IP: net.ParseIP("172.19.255.254"), Mask: net.CIDRMask(16, 32)}}); err != nil {
		t.Fatal(err)
	}
	flows := h.flows(t)
	for _, want := range [][]string{
		{"priority=99", "in_port=9", "goto_table:2"},
		{"table=7", "priority=10", "in_port=9", "drop"},
		{"table=8", "priority=101", "nw_dst=172.19.0.0/16", "drop"},
		{"table=8", "priority=100", "in_port=3", "172.19.0.3->ip_src", "output:9"},
		{"table=8", "priority=102", "in_port=3", "nw_dst=172.19.255.254", "output:9"},
		{"table=2", "priority=100", "in_port=9", "nw_dst=172.19.0.3", "198.19.5.1->ip_dst", "goto_table:6"},
	} {
		if !hasFlow(flows, want...) {
			t.Errorf("no flow with %v:\n%s", want, strings.Join(flows, "\n"))
		}
	}
	if err := a.ClearHostAccess(ctx); err != nil {
		t.Fatal(err)
	}
	if flows := h.flows(t); hasFlow(flows, "in_port=9") || hasFlow(flows, "172.19.") {
		t.Errorf("host access flows left after ClearHostAccess:\n%s", strings.Join(flows, "\n"))
	}
}
