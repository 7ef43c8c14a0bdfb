package trace

import (
	"strings"
	"testing"
)

// sample is the shape of ovs-vswitchd 3.1's ofproto/trace answer for a
// packet leaving through a userspace VXLAN tunnel.
const sample = `Flow: tcp,in_port=3,vlan_tci=0x0000,dl_src=02:02:c6:13:09:01,dl_dst=00:00:11:11:11:11,nw_src=198.19.9.1,nw_dst=198.19.9.3,nw_tos=0,nw_ecn=0,nw_ttl=64,nw_frag=no,tp_src=40000,tp_dst=80,tcp_flags=syn

bridge("contivVxlanBridge")
---------------------------
 0. priority 1, cookie 0x117ce19baa54c278
    goto_table:1
 1. in_port=3, priority 10, cookie 0x3a1b
    write_metadata:0x100020000/0xff7fff0000
    goto_table:3
 5. No match.
    drop
 7. ip,metadata=0x200000000/0xff00000000,nw_dst=198.19.9.3, priority 100, cookie 0x4abc
    set_field:0x1->tun_id
    set_field:00:00:11:11:11:11->eth_dst
    output:2
     -> output to native tunnel
     -> tunneling to 198.18.0.12 via br-phy

bridge("br-phy")
----------------
 0. priority 0
    NORMAL
     -> forwarding to learned port
    output:9

Final flow: unchanged
Megaflow: recirc_id=0,eth,tcp,in_port=3,nw_frag=no
Datapath actions: tnl_push(tnl_port(4789),header(size=50,type=4)),out_port(1)),1
`

func TestParse(t *testing.T) {
	p, err := Parse(sample)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(p.Flow, "tcp,in_port=3") || !strings.HasPrefix(p.DatapathActions, "tnl_push") {
		t.Fatalf("flow %q, datapath actions %q", p.Flow, p.DatapathActions)
	}
	if len(p.Hops) != 5 {
		t.Fatalf("%d hops: %+v", len(p.Hops), p.Hops)
	}
	h := p.Hops[1]
	if h.Table != 1 || h.Match != "in_port=3" || h.Priority != 10 || h.Cookie != "0x3a1b" || len(h.Actions) != 2 {
		t.Fatalf("hop 1: %+v", h)
	}
	if !p.Hops[2].NoMatch || p.Hops[3].Match != "ip,metadata=0x200000000/0xff00000000,nw_dst=198.19.9.3" {
		t.Fatalf("hops 2, 3: %+v %+v", p.Hops[2], p.Hops[3])
	}
	if p.Hops[4].Bridge != "br-phy" {
		t.Fatalf("hop 4 bridge %q", p.Hops[4].Bridge)
	}
	if out := p.Output("contivVxlanBridge"); out != 2 {
		t.Fatalf("output %d, want 2 (br-phy's output:9 is not ours)", out)
	}
	r := Result{Bridge: "contivVxlanBridge", Packet: "tcp 198.19.9.1 -> 198.19.9.3:80", OutPort: 2, OutPortName: "vxif19818012", Tunnel: true, RemoteIP: "198.18.0.12"}
	r.Decide(p)
	if r.Verdict != "forwarded" || r.Summary != "tcp 198.19.9.1 -> 198.19.9.3:80: forwarded to tunnel port vxif19818012 to 198.18.0.12" {
		t.Fatalf("%+v", r)
	}
}

func TestDecideDrop(t *testing.T) {
	p := Parsed{Hops: []Hop{
		{Bridge: "b", Table: 4, TableName: "DstGroup", Priority: 100},
		{Bridge: "b", Table: 5, TableName: "Policy", Priority: 15, Object: "rule t:p:7", Actions: []string{"drop"}},
	}, DatapathActions: "drop"}
	r := Result{Bridge: "b", Packet: "tcp 1.1.1.1 -> 1.1.1.2:80", KnownDestination: true}
	r.Decide(p)
	if r.Verdict != "dropped" || r.Rule != "t:p:7" || r.Summary != "tcp 1.1.1.1 -> 1.1.1.2:80: dropped by policy rule t:p:7 (table Policy)" {
		t.Fatalf("%+v", r)
	}
	p = Parsed{Hops: []Hop{{Bridge: "b", Table: 8, TableName: "HostSNAT", Priority: 1, Object: "init base", Actions: []string{"drop"}}}}
	r = Result{Bridge: "b", Packet: "udp 1.1.1.1 -> 1.1.1.9:53"}
	r.Decide(p)
	if r.Summary != "udp 1.1.1.1 -> 1.1.1.9:53: dropped, 1.1.1.9 is not a known endpoint (table HostSNAT: no flow matched (table miss: drop))" {
		t.Fatalf("%q", r.Summary)
	}
}

func TestParseRequest(t *testing.T) {
	for _, tc := range []struct{ ep, dst, proto, port, err string }{
		{"", "1.1.1.1", "tcp", "80", "endpoint is required"},
		{"e", "x", "tcp", "80", `destination "x" is not an IPv4 address`},
		{"e", "::1", "tcp", "80", "not an IPv4 address"},
		{"e", "1.1.1.1", "sctp", "80", `protocol "sctp"`},
		{"e", "1.1.1.1", "udp", "", "needs a destination port"},
		{"e", "1.1.1.1", "tcp", "70000", "not 1-65535"},
		{"e", "1.1.1.1", "icmp", "5", "icmp has no port"},
	} {
		if _, err := ParseRequest(tc.ep, tc.dst, tc.proto, tc.port); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ParseRequest(%q,%q,%q,%q) = %v, want %q", tc.ep, tc.dst, tc.proto, tc.port, err, tc.err)
		}
	}
	r, err := ParseRequest("e", "1.1.1.2", "", "53")
	if err != nil || r.Proto != "tcp" || r.Port != 53 {
		t.Fatalf("%+v %v", r, err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(sample)
	f.Add(" 1. priority x\n")
	f.Add("bridge(\"b\")\n 999. No match.\n")
	f.Fuzz(func(t *testing.T, in string) {
		p, err := Parse(in)
		if err != nil {
			return
		}
		for _, h := range p.Hops {
			_ = p.Output(h.Bridge)
		}
		r := Result{Bridge: "b"}
		r.Decide(p)
	})
}
