package agent

import (
	"context"
	"flag"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/ofnet/ofrpc"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/pipelines.golden from the current code")

// pipelineScenario gives an agent of datapath dp state that exercises
// every feature's flows: uplink or VTEP, two networks with gateways,
// local endpoints (one with DSCP), a remote endpoint, allow and deny rules,
// a service with providers, NetworkPolicy, host access (vrouter), the BGP
// port, peer and a route (vlrouter), and DNS interception.
func pipelineScenario(t *testing.T, dp string, arpFlood bool) *Agent {
	t.Helper()
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	lookup := func([]byte, string) ([]byte, bool) { return nil, false }
	a, err := New(Config{Datapath: dp, LocalIP: net.ParseIP("198.18.0.1"), OFListener: ln, Logger: testLogger(t),
		DNSLookup: lookup, UplinkMAC: "02:02:c6:12:00:01"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.pool.Close() })
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s %s: %v", dp, what, err)
		}
	}
	vlan := dp == DatapathVlan || dp == DatapathVlrouter
	var vni1, vni2 uint32 = 5000, 5001
	if vlan {
		vni1, vni2 = 0, 0
		must("uplink", a.AddUplink(ctx, 7, "eth2"))
	} else {
		must("vtep", a.AddVtepPort(ctx, 7, net.ParseIP("198.18.0.2")))
	}
	if arpFlood {
		must("arp mode", a.SetArpMode(ctx, "flood"))
	}
	must("network 1", a.AddNetwork(ctx, 1, vni1, "10.1.1.1", "t1"))
	must("network 2", a.AddNetwork(ctx, 2, vni2, "10.2.1.1", "t2"))
	must("local 1", a.AddLocalEndpoint(ctx, EndpointInfo{PortNo: 3, MacAddr: macFor(net.ParseIP("10.1.1.5")),
		IpAddr: net.ParseIP("10.1.1.5"), Vlan: 1, EndpointGroup: 5, EndpointGroupVlan: 1, Dscp: 10}))
	must("local 2", a.AddLocalEndpoint(ctx, EndpointInfo{PortNo: 4, MacAddr: macFor(net.ParseIP("10.1.1.6")),
		IpAddr: net.ParseIP("10.1.1.6"), Vlan: 1, EndpointGroup: 6, EndpointGroupVlan: 1}))
	must("local 3", a.AddLocalEndpoint(ctx, EndpointInfo{PortNo: 5, MacAddr: macFor(net.ParseIP("10.2.1.5")),
		IpAddr: net.ParseIP("10.2.1.5"), Vlan: 2}))
	if dp != DatapathVlrouter {
		must("remote", a.AddRemoteEndpoint(ctx, ofrpc.OfnetEndpoint{EndpointID: "10.1.1.9:t1", IpAddr: net.ParseIP("10.1.1.9"),
			Vrf: "t1", MacAddrStr: "02:02:0a:01:01:09", Vlan: 1, Vni: vni1, EndpointGroup: 6,
			OriginatorIp: net.ParseIP("198.18.0.2"), OriginatorMac: "02:02:c6:12:00:02", Timestamp: time.Unix(1700000000, 0)}))
	}
	for _, r := range []ofrpc.OfnetPolicyRule{
		{RuleId: "allow-web", Priority: 50, SrcEndpointGroup: 5, DstEndpointGroup: 6, SrcIpAddr: "10.1.0.0/16",
			IpProtocol: 6, DstPort: 80, TcpFlags: "syn,!ack", Action: "allow"},
		{RuleId: "deny-all", Priority: 1, DstEndpointGroup: 6, Action: "deny"},
		{RuleId: "allow-udp", Priority: 7, SrcEndpointGroup: 6, IpProtocol: 17, SrcPort: 53, DstIpAddr: "10.1.1.5", Action: "allow"},
	} {
		must("rule "+r.RuleId, a.AddRule(ctx, r))
	}
	must("service", a.AddSvcSpec(ctx, "web:t1", ServiceSpec{Vrf: "t1", IpAddress: "10.1.1.100",
		Ports: []ServicePort{{"TCP", 80, 8080}, {"UDP", 53, 5353}}}))
	must("providers", a.SvcProviderUpdate(ctx, "web:t1", []string{"10.1.1.6", "10.1.1.9"}))
	if dp != DatapathVlrouter {
		peer := netip.MustParsePrefix("10.1.1.6/32")
		must("netpol", a.SetNetworkPolicy(ctx, map[netip.Addr]NetpolPod{
			netip.MustParseAddr("10.1.1.5"): {IngressIsolated: true, EgressIsolated: true,
				Ingress: []NetpolAllow{{Peer: peer, Proto: 6, PortMin: 80, PortMax: 80}, {Peer: netip.MustParsePrefix("10.9.0.0/16")}},
				Egress:  []NetpolAllow{{Peer: peer, Proto: 17, PortMin: 1000, PortMax: 1003}}},
			netip.MustParseAddr("10.1.1.6"): {IngressIsolated: true},
		}))
	}
	if dp == DatapathVrouter {
		_, pvt, _ := net.ParseCIDR("172.20.0.1/16")
		pvt.IP = net.ParseIP("172.20.0.1").To4()
		must("host access", a.SetHostAccess(ctx, HostAccess{Port: 0xfffe, MAC: net.HardwareAddr{2, 2, 0xac, 0x14, 0, 1}, Addr: pvt}))
	}
	if dp == DatapathVlrouter {
		must("bgp port", a.SetBgpPort(ctx, 8, net.ParseIP("198.18.50.11")))
		must("bgp peer", a.SetBgpPeerMAC(ctx, net.HardwareAddr{2, 2, 0xc6, 0x12, 0x32, 1}))
		_, route, _ := net.ParseCIDR("10.1.1.9/32")
		must("bgp route", a.AddBgpRoute(ctx, route))
		_, route, _ = net.ParseCIDR("10.3.0.0/16")
		must("bgp route", a.AddBgpRoute(ctx, route))
	}
	return a
}

// TestPipelinesGolden renders every datapath's flows and groups for
// pipelineScenario and compares them with testdata/pipelines.golden, which
// was recorded before the flow priorities got their names
// (priorities.go): the names changed no flow. Run with -update to record
// a deliberate change.
func TestPipelinesGolden(t *testing.T) {
	var b strings.Builder
	for _, dp := range []string{DatapathVxlan, DatapathVrouter, DatapathVlan, DatapathVlrouter} {
		for _, flood := range []bool{false, true} {
			a := pipelineScenario(t, dp, flood)
			fl, gr, err := a.desiredFlows()
			if err != nil {
				t.Fatalf("%s: %v", dp, err)
			}
			mode := "proxy"
			if flood {
				mode = "flood"
			}
			b.WriteString("## " + dp + " arp " + mode + "\n")
			for _, l := range append(fl, gr...) {
				b.WriteString(l + "\n")
			}
		}
	}
	path := filepath.Join("testdata", "pipelines.golden")
	if *updateGolden {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (record it with -update)", err)
	}
	if got := b.String(); got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := 0; i < max(len(gl), len(wl)); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("pipelines differ from %s at line %d:\n got: %s\nwant: %s", path, i+1, g, w)
			}
		}
	}
}
