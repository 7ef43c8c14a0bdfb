package agent

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/ofnet/ofrpc"
)

// goldenScenario applies the scenario of docs/dataplane.md Appendix B (without the
// service): network vlan 1 / VNI 5000 / VRF t1, a local endpoint on port 3
// (10.1.1.5, EPG 5, DSCP 10), a VTEP on port 7 to 198.18.0.2 with remote endpoint
// 10.1.1.9, and a rule.
func goldenScenario(t *testing.T, h *host, vni uint32) {
	ctx := testCtx(t)
	a := h.agent
	if err := a.AddNetwork(ctx, 1, vni, "10.1.1.1", "t1"); err != nil {
		t.Fatal(err)
	}
	ep := EndpointInfo{PortNo: 3, MacAddr: macFor(net.ParseIP("10.1.1.5")), IpAddr: net.ParseIP("10.1.1.5"),
		Vlan: 1, EndpointGroup: 5, Dscp: 10}
	if err := a.AddLocalEndpoint(ctx, ep); err != nil {
		t.Fatal(err)
	}
	if vni != 0 {
		if err := a.AddVtepPort(ctx, 7, net.ParseIP("198.18.0.2")); err != nil {
			t.Fatal(err)
		}
	} else if err := a.AddUplink(ctx, 7, "eth2"); err != nil {
		t.Fatal(err)
	}
	rep := ofrpc.OfnetEndpoint{EndpointID: "10.1.1.9:t1", IpAddr: net.ParseIP("10.1.1.9"), Vrf: "t1",
		MacAddrStr: "02:02:0a:01:01:09", Vlan: 1, Vni: vni, EndpointGroup: 6,
		OriginatorIp: net.ParseIP("198.18.0.2"), Timestamp: time.Now()}
	if err := a.AddRemoteEndpoint(ctx, rep); err != nil {
		t.Fatal(err)
	}
	rule := ofrpc.OfnetPolicyRule{RuleId: "r1", Priority: 50, SrcEndpointGroup: 5, DstEndpointGroup: 5,
		SrcIpAddr: "10.1.0.0/16", IpProtocol: 6, DstPort: 80, TcpFlags: "syn,!ack", Action: "allow"}
	if err := a.AddRule(ctx, rule); err != nil {
		t.Fatal(err)
	}
}

func checkGolden(t *testing.T, h *host, wantFlows, wantGroups []string) {
	t.Helper()
	got := h.flows(t)
	if strings.Join(got, "\n") != strings.Join(sorted(wantFlows), "\n") {
		t.Errorf("flows on the switch differ from the golden set\n got:\n  %s\nwant:\n  %s",
			strings.Join(got, "\n  "), strings.Join(sorted(wantFlows), "\n  "))
	}
	st := h.agent.State()
	if len(st.Flows) != len(got) {
		t.Errorf("agent cache has %d flows, switch %d", len(st.Flows), len(got))
	}
	gg := h.groups(t)
	if strings.Join(gg, "\n") != strings.Join(sorted(wantGroups), "\n") {
		t.Errorf("groups differ\n got:\n  %s\nwant:\n  %s", strings.Join(gg, "\n  "), strings.Join(sorted(wantGroups), "\n  "))
	}
}

// TestGoldenVxlanBridge compares the real switch with Appendix B, minus the DNS and
// service flows (out of scope), with these deliberate differences:
//   - the VTEP flow goes to table 6 (quirk A3 fixed; B has 6 too because the VTEP
//     came after the network);
//   - flood groups are local(V)=2V, all(V)=2V+1 (B: counter ids 1 and 2);
//   - the remote endpoint also gets its dst-group flow in table 4 (EPG 6);
//   - no DNS bypass flow for the VTEP port.
func TestGoldenVxlanBridge(t *testing.T) {
	h := startHost(t, DatapathVxlan, "198.18.0.1")
	goldenScenario(t, h, 5000)
	checkGolden(t, h, []string{
		"priority=100,dl_src=01:00:00:00:00:00/01:00:00:00:00:00 actions=drop",
		"priority=100,dl_dst=33:33:00:00:00:02 actions=drop",
		"priority=100,dl_dst=33:33:00:00:00:16 actions=drop",
		"priority=100,arp,arp_op=1 actions=CONTROLLER:65535",
		"priority=1 actions=goto_table:1",
		"table=1, priority=1 actions=drop",
		"table=1, priority=10,in_port=3 actions=push_vlan:0x8100,set_field:4097->vlan_vid,write_metadata:0x100050000/0xff7fff0000,goto_table:3",
		"table=1, priority=100,ip,in_port=3 actions=set_field:10->ip_dscp,push_vlan:0x8100,set_field:4097->vlan_vid,write_metadata:0x100050000/0xff7fff0000,goto_table:3",
		"table=1, priority=100,ipv6,in_port=3 actions=set_field:10->ip_dscp,push_vlan:0x8100,set_field:4097->vlan_vid,write_metadata:0x100050000/0xff7fff0000,goto_table:3",
		"table=1, priority=100,tun_id=0x1388,in_port=7 actions=push_vlan:0x8100,set_field:4097->vlan_vid,write_metadata:0x100000001/0xff00000001,goto_table:6",
		"table=3, priority=1 actions=goto_table:4",
		"table=4, priority=1 actions=goto_table:5",
		"table=4, priority=100,ip,metadata=0x100000000/0xff00000000,nw_dst=10.1.1.5 actions=write_metadata:0xa/0xfffe,goto_table:5",
		"table=4, priority=100,ip,metadata=0x100000000/0xff00000000,nw_dst=10.1.1.9 actions=write_metadata:0xc/0xfffe,goto_table:5",
		"table=5, priority=1 actions=goto_table:6",
		"table=5, priority=60,tcp,metadata=0x5000a/0x7ffffffe,nw_src=10.1.0.0/16,tp_dst=80,tcp_flags=+syn-ack actions=goto_table:6",
		"table=6, priority=1 actions=goto_table:9",
		"table=9, priority=1 actions=drop",
		"table=9, priority=10,metadata=0/0x1,dl_vlan=1 actions=group:3",
		"table=9, priority=10,metadata=0x1/0x1,dl_vlan=1 actions=group:2",
		"table=9, priority=100,dl_vlan=1,dl_dst=02:02:0a:01:01:05 actions=pop_vlan,output:3",
		"table=9, priority=100,dl_vlan=1,dl_dst=02:02:0a:01:01:09 actions=set_field:0x1388->tun_id,pop_vlan,output:7",
	}, []string{
		"group_id=2,type=all,bucket=actions=pop_vlan,output:3",
		"group_id=3,type=all,bucket=actions=pop_vlan,output:3,bucket=actions=set_field:0x1388->tun_id,pop_vlan,output:7",
	})
}

// TestGoldenVlanBridge: §3.3 — no vlan push, uplink bypasses policy, NORMAL at the
// end, dst-group flows for the local and the remote endpoint (IPv4 only).
func TestGoldenVlanBridge(t *testing.T) {
	h := startHost(t, DatapathVlan, "198.18.0.1")
	goldenScenario(t, h, 0)
	checkGolden(t, h, []string{
		"priority=100,arp,arp_op=1 actions=CONTROLLER:65535",
		"priority=1 actions=goto_table:1",
		"table=1, priority=1 actions=goto_table:4",
		"table=1, priority=10,in_port=3 actions=write_metadata:0x100050000/0xff7fff0000,goto_table:3",
		"table=1, priority=100,ip,in_port=3 actions=set_field:10->ip_dscp,write_metadata:0x100050000/0xff7fff0000,goto_table:3",
		"table=1, priority=100,ipv6,in_port=3 actions=set_field:10->ip_dscp,write_metadata:0x100050000/0xff7fff0000,goto_table:3",
		"table=1, priority=100,in_port=7 actions=goto_table:6",
		"table=3, priority=1 actions=goto_table:4",
		"table=4, priority=1 actions=goto_table:5",
		"table=4, priority=100,ip,metadata=0x100000000/0xff00000000,nw_dst=10.1.1.5 actions=write_metadata:0xa/0xfffe,goto_table:5",
		"table=4, priority=100,ip,metadata=0x100000000/0xff00000000,nw_dst=10.1.1.9 actions=write_metadata:0xc/0xfffe,goto_table:5",
		"table=5, priority=1 actions=goto_table:6",
		"table=5, priority=60,tcp,metadata=0x5000a/0x7ffffffe,nw_src=10.1.0.0/16,tp_dst=80,tcp_flags=+syn-ack actions=goto_table:6",
		"table=6, priority=1 actions=goto_table:9",
		"table=9, priority=1 actions=NORMAL",
	}, nil)
}

// TestGoldenVxlanRouting: §3.2 — no vlan, IP table per VRF, router MAC rewrites.
func TestGoldenVxlanRouting(t *testing.T) {
	h := startHost(t, DatapathVrouter, "198.18.0.1")
	goldenScenario(t, h, 5000)
	checkGolden(t, h, []string{
		"priority=100,dl_src=01:00:00:00:00:00/01:00:00:00:00:00 actions=drop",
		"priority=100,dl_dst=33:33:00:00:00:02 actions=drop",
		"priority=100,dl_dst=33:33:00:00:00:16 actions=drop",
		"priority=100,arp actions=CONTROLLER:65535",
		"priority=1 actions=goto_table:1",
		"table=1, priority=1 actions=drop",
		"table=1, priority=10,in_port=3 actions=write_metadata:0x100050000/0xff7fff0000,goto_table:3",
		"table=1, priority=100,ip,in_port=3 actions=set_field:10->ip_dscp,write_metadata:0x100050000/0xff7fff0000,goto_table:3",
		"table=1, priority=100,ipv6,in_port=3 actions=set_field:10->ip_dscp,write_metadata:0x100050000/0xff7fff0000,goto_table:3",
		"table=1, priority=100,tun_id=0x1388,in_port=7 actions=write_metadata:0x100000001/0xff00000001,goto_table:6",
		"table=2, priority=1 actions=drop",
		"table=3, priority=1 actions=goto_table:4",
		"table=4, priority=1 actions=goto_table:5",
		"table=4, priority=100,ip,metadata=0x100000000/0xff00000000,nw_dst=10.1.1.5 actions=write_metadata:0xa/0xfffe,goto_table:5",
		"table=4, priority=100,ip,metadata=0x100000000/0xff00000000,nw_dst=10.1.1.9 actions=write_metadata:0xc/0xfffe,goto_table:5",
		"table=5, priority=1 actions=goto_table:6",
		"table=5, priority=60,tcp,metadata=0x5000a/0x7ffffffe,nw_src=10.1.0.0/16,tp_dst=80,tcp_flags=+syn-ack actions=goto_table:6",
		"table=6, priority=1 actions=goto_table:7",
		"table=7, priority=1 actions=goto_table:8",
		"table=7, priority=100,ip,metadata=0x100000000/0xff00000000,nw_dst=10.1.1.5 actions=set_field:00:00:11:11:11:11->eth_src,set_field:02:02:0a:01:01:05->eth_dst,output:3",
		"table=7, priority=100,ip,metadata=0x100000000/0xff00000000,nw_dst=10.1.1.9 actions=set_field:0x1388->tun_id,set_field:00:00:11:11:11:11->eth_dst,output:7",
		"table=8, priority=1 actions=drop",
	}, nil)
}
