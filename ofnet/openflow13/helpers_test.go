package openflow13

import (
	"encoding/hex"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// needOVS returns the path of ovs-ofctl. Without it the test fails under CI=true and is
// skipped otherwise.
func needOVS(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("ovs-ofctl")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("ovs-ofctl is required when CI=true: %v", err)
		}
		t.Skipf("ovs-ofctl not installed: %v", err)
	}
	return p
}

// ofpPrint decodes b with `ovs-ofctl ofp-print` and returns its output.
func ofpPrint(t testing.TB, b []byte) string {
	t.Helper()
	out, err := exec.Command(needOVS(t), "ofp-print", hex.EncodeToString(b)).CombinedOutput()
	if err != nil {
		t.Fatalf("ovs-ofctl ofp-print %x: %v\n%s", b, err, out)
	}
	s := string(out)
	for _, bad := range []string{"decode error", "only uses", "parse error", "OFPERR"} {
		if strings.Contains(s, bad) {
			t.Fatalf("ovs-ofctl ofp-print complains about %x:\n%s", b, s)
		}
	}
	return s
}

func mustMAC(s string) net.HardwareAddr {
	m, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return m
}

func mustMarshal(t testing.TB, m interface{ MarshalBinary() ([]byte, error) }) []byte {
	b, err := m.MarshalBinary()
	if err != nil {
		if t == nil {
			panic(err)
		}
		t.Fatalf("marshal %T: %v", m, err)
	}
	return b
}

func ip(s string) net.IP { return net.ParseIP(s) }

func apply(a ...Action) Instruction { return InstrApplyActions{Actions: a} }

func gotoT(n uint8) Instruction { return InstrGotoTable{TableID: n} }

func wmd(v, m uint64) Instruction { return InstrWriteMetadata{Metadata: v, Mask: m} }

func flow(table uint8, prio uint16, fields []OXM, ins ...Instruction) *FlowMod {
	fm := NewFlowMod(table, prio, 0)
	fm.Xid = 1
	fm.Match = NewMatch(fields...)
	fm.Instructions = ins
	return fm
}

func f(o ...OXM) []OXM { return o }

var (
	ethIP   = OXMEthType(0x0800)
	ethIPv6 = OXMEthType(0x86dd)
	ethARP  = OXMEthType(0x0806)
	tcp     = OXMIPProto(6)
	udp     = OXMIPProto(17)
	toCtrl  = ActionOutput{Port: OFPPController, MaxLen: 0xffff}
	pushV   = ActionPushVLAN{EtherType: 0x8100}
	popV    = ActionPopVLAN{}
	ddMask  = mustMAC("ff:ff:00:00:00:00")
	dd      = mustMAC("02:02:00:00:00:00")
)

// appendixB is docs/dataplane.md Appendix B (verified on OVS 3.1), built with the codec.
var appendixB = []struct {
	want string
	fm   *FlowMod
}{
	{"priority=100,dl_src=01:00:00:00:00:00/01:00:00:00:00:00 actions=drop",
		flow(0, 100, f(OXMEthSrcMasked(mustMAC("01:00:00:00:00:00"), mustMAC("01:00:00:00:00:00"))))},
	{"priority=100,arp,arp_op=1 actions=CONTROLLER:65535",
		flow(0, 100, f(ethARP, OXMARPOp(1)), apply(toCtrl))},
	{"priority=100,udp,dl_src=02:02:00:00:00:00/ff:ff:00:00:00:00,tp_dst=53 actions=CONTROLLER:65535",
		flow(0, 100, f(OXMEthSrcMasked(dd, ddMask), ethIP, udp, OXMUDPDst(53)), apply(toCtrl))},
	{"priority=101,udp,dl_vlan=4093,dl_src=02:02:00:00:00:00/ff:ff:00:00:00:00,tp_dst=53 actions=pop_vlan,goto_table:1",
		flow(0, 101, f(OXMUDPDst(53), OXMVlanVID(4093), OXMEthSrcMasked(dd, ddMask), ethIP, udp), apply(popV), gotoT(1))},
	{"priority=102,udp,in_port=7,tp_dst=53 actions=goto_table:1",
		flow(0, 102, f(OXMInPort(7), ethIP, udp, OXMUDPDst(53)), gotoT(1))},
	{"priority=1 actions=goto_table:1", flow(0, 1, nil, gotoT(1))},
	{"table=1, priority=1 actions=drop", flow(1, 1, nil)},
	{"table=1, priority=10,in_port=3 actions=push_vlan:0x8100,set_field:4097->vlan_vid,write_metadata:0x100050000/0xff7fff0000,goto_table:3",
		flow(1, 10, f(OXMInPort(3)), wmd(0x100050000, 0xff7fff0000), apply(pushV, ActionSetField{OXMVlanVID(1)}), gotoT(3))},
	{"table=1, priority=100,ip,in_port=3 actions=set_field:10->ip_dscp,push_vlan:0x8100,set_field:4097->vlan_vid,write_metadata:0x100050000/0xff7fff0000,goto_table:3",
		flow(1, 100, f(OXMInPort(3), ethIP), wmd(0x100050000, 0xff7fff0000), apply(ActionSetField{OXMIPDSCP(10)}, pushV, ActionSetField{OXMVlanVID(1)}), gotoT(3))},
	{"table=1, priority=100,ipv6,in_port=3 actions=set_field:10->ip_dscp,push_vlan:0x8100,set_field:4097->vlan_vid,write_metadata:0x100050000/0xff7fff0000,goto_table:3",
		flow(1, 100, f(OXMInPort(3), ethIPv6), wmd(0x100050000, 0xff7fff0000), apply(ActionSetField{OXMIPDSCP(10)}, pushV, ActionSetField{OXMVlanVID(1)}), gotoT(3))},
	{"table=1, priority=100,tun_id=0x1388,in_port=7 actions=push_vlan:0x8100,set_field:4097->vlan_vid,write_metadata:0x100000001/0xff00000001,goto_table:6",
		flow(1, 100, f(OXMTunnelID(5000), OXMInPort(7)), wmd(0x100000001, 0xff00000001), apply(pushV, ActionSetField{OXMVlanVID(1)}), gotoT(6))},
	{"table=3, priority=1 actions=goto_table:4", flow(3, 1, nil, gotoT(4))},
	{"table=3, priority=10,tcp,nw_dst=10.254.0.10 actions=CONTROLLER:65535",
		flow(3, 10, f(ethIP, tcp, OXMIPv4Dst(ip("10.254.0.10"), nil)), apply(toCtrl))},
	{"table=3, priority=100,tcp,nw_src=10.1.1.5,nw_dst=10.254.0.10,tp_dst=80 actions=set_field:02:02:0a:01:01:06->eth_dst,set_field:8080->tcp_dst,set_field:10.1.1.6->ip_dst,goto_table:4",
		flow(3, 100, f(ethIP, OXMIPv4Src(ip("10.1.1.5"), nil), OXMIPv4Dst(ip("10.254.0.10"), nil), tcp, OXMTCPDst(80)),
			apply(ActionSetField{OXMEthDst(mustMAC("02:02:0a:01:01:06"))}, ActionSetField{OXMTCPDst(8080)}, ActionSetField{OXMIPv4Dst(ip("10.1.1.6"), nil)}), gotoT(4))},
	{"table=4, priority=1 actions=goto_table:5", flow(4, 1, nil, gotoT(5))},
	{"table=4, priority=100,ip,metadata=0x100000000/0xff00000000,nw_dst=10.1.1.5 actions=write_metadata:0xa/0xfffe,goto_table:5",
		flow(4, 100, f(ethIP, OXMIPv4Dst(ip("10.1.1.5"), nil), OXMMetadataMasked(0x100000000, 0xff00000000)), wmd(0xa, 0xfffe), gotoT(5))},
	{"table=5, priority=1 actions=goto_table:6", flow(5, 1, nil, gotoT(6))},
	{"table=5, priority=60,tcp,metadata=0x5000a/0x7ffffffe,nw_src=10.1.0.0/16,tp_dst=80,tcp_flags=+syn-ack actions=goto_table:6",
		flow(5, 60, f(ethIP, OXMIPv4Src(ip("10.1.0.0"), net.CIDRMask(16, 32)), tcp, OXMTCPDst(80), OXMTCPFlags(0x02, 0x12), OXMMetadataMasked(0x5000a, 0x7ffffffe)), gotoT(6))},
	{"table=6, priority=1 actions=goto_table:9", flow(6, 1, nil, gotoT(9))},
	{"table=6, priority=100,tcp,nw_src=10.1.1.6,nw_dst=10.1.1.5,tp_src=8080 actions=set_field:80->tcp_src,set_field:10.254.0.10->ip_src,goto_table:9",
		flow(6, 100, f(ethIP, OXMIPv4Dst(ip("10.1.1.5"), nil), OXMIPv4Src(ip("10.1.1.6"), nil), tcp, OXMTCPSrc(8080)),
			apply(ActionSetField{OXMTCPSrc(80)}, ActionSetField{OXMIPv4Src(ip("10.254.0.10"), nil)}), gotoT(9))},
	{"table=9, priority=1 actions=drop", flow(9, 1, nil)},
	{"table=9, priority=10,metadata=0/0x1,dl_vlan=1 actions=group:2",
		flow(9, 10, f(OXMMetadataMasked(0, 1), OXMVlanVID(1)), apply(ActionGroup{2}))},
	{"table=9, priority=10,metadata=0x1/0x1,dl_vlan=1 actions=group:1",
		flow(9, 10, f(OXMMetadataMasked(1, 1), OXMVlanVID(1)), apply(ActionGroup{1}))},
	{"table=9, priority=100,dl_vlan=1,dl_dst=02:02:0a:01:01:05 actions=pop_vlan,output:3",
		flow(9, 100, f(OXMEthDst(mustMAC("02:02:0a:01:01:05")), OXMVlanVID(1)), apply(popV, ActionOutput{Port: 3, MaxLen: 256}))},
	{"table=9, priority=100,dl_vlan=1,dl_dst=02:02:0a:01:01:09 actions=set_field:0x1388->tun_id,pop_vlan,output:7",
		flow(9, 100, f(OXMEthDst(mustMAC("02:02:0a:01:01:09")), OXMVlanVID(1)), apply(ActionSetField{OXMTunnelID(5000)}, popV, ActionOutput{Port: 7, MaxLen: 256}))},
}

var appendixBGroups = []struct {
	want string
	gm   *GroupMod
}{
	{"group_id=1,type=all,bucket=actions=pop_vlan,output:3",
		&GroupMod{GroupID: 1, Buckets: []Bucket{NewBucket(popV, ActionOutput{Port: 3, MaxLen: 256})}}},
	{"group_id=2,type=all,bucket=actions=pop_vlan,output:3,bucket=actions=set_field:0x1388->tun_id,pop_vlan,output:7",
		&GroupMod{GroupID: 2, Buckets: []Bucket{NewBucket(popV, ActionOutput{Port: 3, MaxLen: 256}),
			NewBucket(ActionSetField{OXMTunnelID(5000)}, popV, ActionOutput{Port: 7, MaxLen: 256})}}},
}
