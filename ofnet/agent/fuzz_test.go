package agent

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/contiv/netplugin/ofnet/ofrpc"
	of "github.com/contiv/netplugin/ofnet/openflow13"
	"github.com/contiv/netplugin/ofnet/packet"
)

// FuzzARPPacketIn feeds arbitrary frames, ports and tunnel ids to the ARP decision of
// every datapath, with local, remote and VTEP state present: it must never panic.
func FuzzARPPacketIn(f *testing.F) {
	mac := net.HardwareAddr{2, 2, 10, 1, 1, 5}
	f.Add(packet.ARPRequestFrame(mac, net.ParseIP("10.1.1.5"), net.ParseIP("10.1.1.9"), 0), uint32(3), uint64(0))
	f.Add(packet.ARPRequestFrame(mac, net.ParseIP("10.1.1.9"), net.ParseIP("10.1.1.5"), 1), uint32(7), uint64(5000))
	f.Add(packet.GARPFrame(mac, net.ParseIP("10.1.1.5"), 0), uint32(3), uint64(0))
	f.Add([]byte{0xff, 0xff}, uint32(0), uint64(1))
	f.Add(packet.ARPRequestFrame(mac, net.ParseIP("10.1.1.5"), net.ParseIP("10.1.1.100"), 0), uint32(3), uint64(0))
	agents := fuzzAgents(f, mac, nil, func(ctx context.Context, a *Agent) {
		_ = a.AddSvcSpec(ctx, "web:t1", ServiceSpec{Vrf: "t1", IpAddress: "10.1.1.100", Ports: []ServicePort{{"TCP", 80, 8080}}})
		_ = a.SvcProviderUpdate(ctx, "web:t1", []string{"10.1.1.9"})
	})
	f.Fuzz(func(t *testing.T, frame []byte, port uint32, tun uint64) {
		pi := &of.PacketIn{Data: frame, Match: of.NewMatch(of.OXMInPort(port), of.OXMTunnelID(tun))}
		for _, a := range agents {
			_, pos := featureARP{}.decide(a, pi)
			for _, po := range pos {
				if _, err := po.MarshalBinary(); err != nil {
					t.Fatalf("unencodable packet-out: %v", err)
				}
			}
		}
	})
}

// fuzzAgents is one agent per datapath (no switch connected) with an
// uplink or VTEP, network 1 of tenant t1, local endpoint 10.1.1.5 (mac) on
// port 3 and remote endpoint 10.1.1.9; extra adds to each. The fuzz
// targets feed packet-ins to their decisions.
func fuzzAgents(f *testing.F, mac net.HardwareAddr, lookup DNSLookup, extra func(context.Context, *Agent)) []*Agent {
	ctx := testCtx(f)
	var agents []*Agent
	for _, dp := range []string{DatapathVxlan, DatapathVrouter, DatapathVlan} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			f.Fatal(err)
		}
		f.Cleanup(func() { ln.Close() })
		a, err := New(Config{Datapath: dp, LocalIP: net.ParseIP("198.18.0.1"), OFListener: ln, Logger: testLogger(f), DNSLookup: lookup})
		if err != nil {
			f.Fatal(err)
		}
		f.Cleanup(func() { a.pool.Close() })
		var vni uint32 = 5000
		if dp == DatapathVlan {
			vni = 0
			_ = a.AddUplink(ctx, 7, "eth2")
		} else {
			_ = a.AddVtepPort(ctx, 7, net.ParseIP("198.18.0.2"))
		}
		_ = a.AddNetwork(ctx, 1, vni, "10.1.1.1", "t1")
		_ = a.AddLocalEndpoint(ctx, EndpointInfo{PortNo: 3, MacAddr: mac, IpAddr: net.ParseIP("10.1.1.5"), Vlan: 1, EndpointGroupVlan: 1})
		_ = a.AddRemoteEndpoint(ctx, ofrpc.OfnetEndpoint{EndpointID: "10.1.1.9:t1", IpAddr: net.ParseIP("10.1.1.9"),
			Vrf: "t1", MacAddrStr: "02:02:0a:01:01:09", Vlan: 1, Vni: vni,
			OriginatorIp: net.ParseIP("198.18.0.2"), Timestamp: time.Now()})
		if extra != nil {
			extra(ctx, a)
		}
		agents = append(agents, a)
	}
	return agents
}
