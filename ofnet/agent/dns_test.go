package agent

import (
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/miekg/dns"

	of "github.com/contiv/netplugin/ofnet/openflow13"
	"github.com/contiv/netplugin/ofnet/packet"
	"github.com/contiv/netplugin/test/ovstest"
)

// dnsQueryFrame is a UDP/53 query frame from a container.
func dnsQueryFrame(src net.HardwareAddr, srcIP, dstIP net.IP, payload []byte) []byte {
	u := packet.UDP{SrcPort: 40000, DstPort: 53, Payload: payload}
	p := packet.IPv4{TTL: 64, ID: 7, Protocol: packet.ProtoUDP, Src: srcIP, Dst: dstIP, Payload: u.Marshal()}
	e := packet.Ethernet{Dst: net.HardwareAddr{2, 2, 9, 9, 9, 9}, Src: src, EtherType: packet.EtherTypeIPv4, Payload: p.Marshal()}
	return e.Marshal()
}

// echoLookup "answers" every query of tenant t1 whose payload starts with "known".
func echoLookup(q []byte, vrf string) ([]byte, bool) {
	if vrf == "t1" && strings.HasPrefix(string(q), "known") {
		return append([]byte("answer:"), q...), true
	}
	return nil, false
}

func TestDNSDecide(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a, err := New(Config{Datapath: DatapathVxlan, LocalIP: net.ParseIP("198.18.0.1"), OFListener: ln,
		Logger: testLogger(t), DNSLookup: echoLookup})
	if err != nil {
		t.Fatal(err)
	}
	defer a.pool.Close()
	ctx := testCtx(t)
	mac := net.HardwareAddr{2, 2, 198, 18, 10, 1}
	_ = a.AddNetwork(ctx, 10, 7000, "", "t1")
	_ = a.AddVtepPort(ctx, 7, net.ParseIP("198.18.0.2"))
	_ = a.AddLocalEndpoint(ctx, EndpointInfo{PortNo: 3, MacAddr: mac, IpAddr: net.ParseIP("198.18.10.1"), Vlan: 10})
	src, dst := net.ParseIP("198.18.10.1").To4(), net.ParseIP("198.18.10.254").To4()
	pi := func(port uint32, payload string) *of.PacketIn {
		return &of.PacketIn{Data: dnsQueryFrame(mac, src, dst, []byte(payload)), Match: of.NewMatch(of.OXMInPort(port))}
	}

	handled, po := featureDNS{}.decide(a, pi(3, "known-query"))
	if !handled || po == nil || len(po.Actions) != 1 || po.Actions[0].(of.ActionOutput).Port != 3 {
		t.Fatalf("answer: handled %v, packet-out %+v", handled, po)
	}
	eth, _ := packet.ParseEthernet(po.Data)
	ip, _ := packet.ParseIPv4(eth.Payload)
	udp, _ := packet.ParseUDP(ip.Payload)
	if eth.Dst.String() != mac.String() || !ip.Dst.Equal(src) || !ip.Src.Equal(dst) || ip.TTL != 64 || ip.ID != 7 ||
		udp.SrcPort != 53 || udp.DstPort != 40000 || udp.Checksum != 0 || string(udp.Payload) != "answer:known-query" ||
		!packet.IPv4ChecksumOK(eth.Payload) {
		t.Errorf("answer frame: eth %+v ip %+v udp %+v", eth, ip, udp)
	}

	handled, po = featureDNS{}.decide(a, pi(3, "other"))
	if !handled || po == nil || po.InPort != 3 || po.Actions[0].(of.ActionOutput).Port != of.OFPPTable {
		t.Fatalf("re-inject: handled %v, packet-out %+v", handled, po)
	}
	if e, _ := packet.ParseEthernet(po.Data); e.VLAN != dnsReinjectVlan {
		t.Errorf("re-injected frame vlan %d", e.VLAN)
	}
	if handled, po = (featureDNS{}).decide(a, pi(7, "known-query")); !handled || po != nil {
		t.Errorf("query from a VTEP: handled %v, packet-out %+v", handled, po)
	}
	if handled, _ = (featureDNS{}).decide(a, &of.PacketIn{Data: packet.ARPRequestFrame(mac, src, dst, 0)}); handled {
		t.Error("an ARP frame was taken for DNS")
	}
}

// FuzzDNSPacketIn feeds arbitrary frames and ports to the DNS decision of every
// datapath: it must never panic and every packet-out must encode.
func FuzzDNSPacketIn(f *testing.F) {
	mac := net.HardwareAddr{2, 2, 10, 1, 1, 5}
	f.Add(dnsQueryFrame(mac, net.ParseIP("10.1.1.5").To4(), net.ParseIP("10.1.1.1").To4(), []byte("known-q")), uint32(3), uint64(0))
	f.Add(dnsQueryFrame(mac, net.ParseIP("10.1.1.5").To4(), net.ParseIP("10.1.1.1").To4(), []byte("x")), uint32(7), uint64(5000))
	f.Add([]byte{0xff, 0xff}, uint32(0), uint64(1))
	agents := fuzzAgents(f, mac, echoLookup, nil)
	f.Fuzz(func(t *testing.T, frame []byte, port uint32, tun uint64) {
		pi := &of.PacketIn{Data: frame, Match: of.NewMatch(of.OXMInPort(port), of.OXMTunnelID(tun))}
		for _, a := range agents {
			if _, po := (featureDNS{}).decide(a, pi); po != nil {
				if _, err := po.MarshalBinary(); err != nil {
					t.Fatalf("unencodable packet-out: %v", err)
				}
			}
		}
	})
}

// TestDNSInterception: on a real OVS, dig in a container gets the agent's answer for a
// name the lookup knows; for another name the query goes on to the address it was
// sent to (another container running a resolver stub).
func TestDNSInterception(t *testing.T) {
	if _, err := exec.LookPath("dig"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("dig (bind9-dnsutils) is required when CI=true: %v", err)
		}
		t.Skip("dig not installed (bind9-dnsutils)")
	}
	h := startHost(t, DatapathVxlan, "198.18.0.1", withDNS(nameLookup))
	ctx := testCtx(t)
	if err := h.agent.AddNetwork(ctx, 10, 7000, "198.18.10.254", "t1"); err != nil {
		t.Fatal(err)
	}
	c1 := h.addContainer(t, "198.18.10.1", 24, 0, 0)
	c2 := h.addContainer(t, "198.18.10.2", 24, 0, 0)
	for i, c := range []*container{c1, c2} {
		if err := h.agent.AddLocalEndpoint(ctx, c.endpointInfo(10, i+1)); err != nil {
			t.Fatal(err)
		}
	}
	c2.txOffloadOff(t) // the stub's answer crosses the userspace datapath
	c2.serveDNS(t, "other.example.", "198.18.99.9")
	dig := func(name string) string {
		out, _ := exec.Command("ip", "netns", "exec", c1.ns, "dig", "+short", "+tries=1", "+time=2", "@198.18.10.2", name, "A").CombinedOutput()
		return strings.TrimSpace(string(out))
	}
	if got := dig("web.contiv."); got != "198.18.50.5" {
		t.Errorf("dig web.contiv: %q, want the agent's answer 198.18.50.5\n%s", got, h.dumpOnFail(t))
	}
	if got := dig("other.example."); got != "198.18.99.9" {
		t.Errorf("dig other.example: %q, want the container resolver's answer 198.18.99.9\n%s", got, h.dumpOnFail(t))
	}
}

func withDNS(l DNSLookup) hostOpt { return func(c *Config) { c.DNSLookup = l } }

// nameLookup knows one name of tenant t1.
func nameLookup(q []byte, vrf string) ([]byte, bool) {
	var m dns.Msg
	if vrf != "t1" || m.Unpack(q) != nil || len(m.Question) != 1 || m.Question[0].Name != "web.contiv." {
		return nil, false
	}
	var r dns.Msg
	r.SetReply(&m)
	r.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: "web.contiv.", Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 120},
		A: net.ParseIP("198.18.50.5")}}
	b, err := r.Pack()
	return b, err == nil
}

// serveDNS runs a resolver stub on the container's address answering name with ip.
func (c *container) serveDNS(t *testing.T, name, ip string) {
	t.Helper()
	var pc net.PacketConn
	err := ovstest.DoInNetNS(c.ns, func() error {
		var err error
		pc, err = net.ListenPacket("udp", c.ip.String()+":53")
		return err
	})
	if err != nil {
		t.Fatalf("listen in %s: %v", c.ns, err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		var r dns.Msg
		r.SetReply(q)
		if len(q.Question) == 1 && q.Question[0].Name == name && q.Question[0].Qtype == dns.TypeA {
			r.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: net.ParseIP(ip)}}
		}
		_ = w.WriteMsg(&r)
	})}
	go func() { _ = srv.ActivateAndServe() }()
	t.Cleanup(func() { _ = srv.Shutdown() })
}
