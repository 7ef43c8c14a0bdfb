package openflow13

import (
	"bytes"
	"net"
	"strings"
	"testing"
)

// ctSamples are the conntrack flows and the select group of the service load
// balancer (docs/services.md), with the text OVS prints for them.
func ctSamples() ([]*FlowMod, []*GroupMod) {
	vip, prov := net.ParseIP("198.19.9.9"), net.ParseIP("198.19.1.5")
	lookup := NewFlowMod(3, 100, 0x42)
	lookup.Match = NewMatch(OXMEthType(0x0800), OXMIPProto(6), OXMIPv4Dst(vip, nil), OXMTCPDst(80),
		OXMCtState(0, CtStateTrk))
	lookup.Instructions = []Instruction{apply(ActionConntrack{Zone: 3, RecircTable: 3, Actions: []Action{ActionNAT{}}})}
	pick := NewFlowMod(3, 100, 0x42)
	pick.Match = NewMatch(OXMEthType(0x0800), OXMIPProto(6), OXMIPv4Dst(vip, nil), OXMTCPDst(80),
		OXMCtState(CtStateTrk|CtStateNew, CtStateTrk|CtStateNew), OXMCtZone(3))
	pick.Instructions = []Instruction{apply(ActionGroup{GroupID: 7})}
	est := NewFlowMod(3, 90, 0x42)
	est.Match = NewMatch(OXMEthType(0x0800), OXMCtState(CtStateTrk, CtStateTrk|CtStateNew|CtStateInv), OXMCtZone(3))
	est.Instructions = []Instruction{InstrGotoTable{TableID: 4}}
	noRecirc := NewFlowMod(6, 100, 0x43)
	noRecirc.Match = NewMatch(OXMEthType(0x0800), OXMIPv4Src(prov, nil))
	noRecirc.Instructions = []Instruction{apply(ActionConntrack{Flags: NXCTFlagCommit, Zone: 9, RecircTable: NXCTRecircNone},
		ActionOutput{Port: 2, MaxLen: 256})}
	g := &GroupMod{Command: GroupAdd, GroupType: GroupTypeSelect, GroupID: 7, Buckets: []Bucket{
		{Weight: 100, WatchPort: OFPPAny, WatchGroup: OFPGAny, Actions: []Action{
			ActionSetField{Field: OXMEthDst(net.HardwareAddr{2, 2, 0xc6, 0x13, 1, 5})},
			ActionConntrack{Flags: NXCTFlagCommit, Zone: 3, RecircTable: 4, Actions: []Action{
				ActionNAT{Flags: NXNATFlagDst, IPv4Min: prov, ProtoMin: 8080}}}}},
		{Weight: 100, WatchPort: OFPPAny, WatchGroup: OFPGAny, Actions: []Action{
			ActionConntrack{Flags: NXCTFlagCommit, Zone: 3, RecircTable: 4, Actions: []Action{
				ActionNAT{Flags: NXNATFlagDst, IPv4Min: net.ParseIP("198.19.1.6"), IPv4Max: net.ParseIP("198.19.1.7"),
					ProtoMin: 8080, ProtoMax: 8081}}}}},
	}}
	// A NetworkPolicy flow: a port range as a masked tp_dst, then back to the
	// bridging table.
	netpol := NewFlowMod(12, 100, 0x44)
	netpol.Match = NewMatch(OXMEthType(0x0800), OXMIPProto(6), OXMIPv4Src(net.ParseIP("198.19.1.0"), net.CIDRMask(24, 32)),
		OXMTCPDstMasked(8080, 0xfff8), OXMCtZone(0x4001))
	netpol.Instructions = []Instruction{apply(ActionConntrack{Flags: NXCTFlagCommit, Zone: 0x4001, RecircTable: NXCTRecircNone},
		ActionResubmit{InPort: OFPPInPortNX, Table: 9})}
	return []*FlowMod{lookup, pick, est, noRecirc, netpol}, []*GroupMod{g}
}

func TestConntrackRender(t *testing.T) {
	fms, gms := ctSamples()
	want := []string{
		"cookie=0x42, table=3, priority=100,ct_state=-trk,tcp,nw_dst=198.19.9.9,tp_dst=80 actions=ct(table=3,zone=3,nat)",
		"cookie=0x42, table=3, priority=100,ct_state=+new+trk,ct_zone=3,tcp,nw_dst=198.19.9.9,tp_dst=80 actions=group:7",
		"cookie=0x42, table=3, priority=90,ct_state=-new-inv+trk,ct_zone=3,ip actions=goto_table:4",
		"cookie=0x43, table=6, priority=100,ip,nw_src=198.19.1.5 actions=ct(commit,zone=9),output:2",
		"cookie=0x44, table=12, priority=100,ct_zone=16385,tcp,nw_src=198.19.1.0/24,tp_dst=0x1f90/0xfff8 actions=ct(commit,zone=16385),resubmit(,9)",
	}
	for i, fm := range fms {
		if got := fm.String(); got != want[i] {
			t.Errorf("flow %d:\n got %s\nwant %s", i, got, want[i])
		}
	}
	wantG := "group_id=7,type=select,bucket=weight:100,actions=set_field:02:02:c6:13:01:05->eth_dst," +
		"ct(commit,table=4,zone=3,nat(dst=198.19.1.5:8080)),bucket=weight:100,actions=ct(commit,table=4,zone=3,nat(dst=198.19.1.6-198.19.1.7:8080-8081))"
	if got := gms[0].String(); got != wantG {
		t.Errorf("group:\n got %s\nwant %s", got, wantG)
	}
}

// TestConntrackRoundTrip: the typed actions decode back to themselves.
func TestConntrackRoundTrip(t *testing.T) {
	fms, gms := ctSamples()
	for _, fm := range fms {
		b := mustMarshal(t, fm)
		var got FlowMod
		if err := got.UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
		if got.String() != fm.String() {
			t.Errorf("round trip:\n got %s\nwant %s", got.String(), fm.String())
		}
		if strings.Contains(got.String(), "unknown_action") {
			t.Errorf("decoded as unknown: %s", got.String())
		}
	}
	b := mustMarshal(t, gms[0])
	var g GroupMod
	if err := g.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if g.String() != gms[0].String() {
		t.Errorf("group round trip:\n got %s\nwant %s", g.String(), gms[0].String())
	}
}

// TestNiciraNonCanonicalStaysUnknown: a ct action with junk in its padding, or a nat
// with an IPv6 range, is kept verbatim rather than typed.
func TestNiciraNonCanonicalStaysUnknown(t *testing.T) {
	ct, err := MarshalActions([]Action{ActionConntrack{Zone: 1, RecircTable: 2}})
	if err != nil {
		t.Fatal(err)
	}
	ct[20] = 0xaa // a pad byte
	acts, err := UnmarshalActions(ct)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := acts[0].(ActionUnknown); !ok {
		t.Errorf("ct with a non-zero pad decoded as %T", acts[0])
	}
	if enc, _ := MarshalActions(acts); !bytes.Equal(enc, ct) {
		t.Errorf("unknown ct does not re-encode verbatim")
	}
	nat := []byte{0xff, 0xff, 0, 32, 0, 0, 0x23, 0x20, 0, 36, 0, 0, 0, 2, 0, byte(nxNATRangeIPv6Min)}
	nat = append(nat, make([]byte, 16)...)
	if acts, err := UnmarshalActions(nat); err != nil || len(acts) != 1 {
		t.Fatalf("decode nat: %v %v", acts, err)
	} else if _, ok := acts[0].(ActionUnknown); !ok {
		t.Errorf("IPv6 nat decoded as %T", acts[0])
	}
	if _, err := MarshalActions([]Action{ActionNAT{Flags: NXNATFlagDst, IPv4Min: net.ParseIP("2001:db8::1")}}); err == nil {
		t.Error("nat to an IPv6 address encoded without error")
	}
}

// TestOVSDecodesConntrack: ovs-ofctl reads our ct encodings as the text above.
func TestOVSDecodesConntrack(t *testing.T) {
	needOVS(t)
	fms, gms := ctSamples()
	for _, fm := range fms {
		out := ofpPrint(t, mustMarshal(t, fm))
		if want := ofpPrintFlowMod(fm); !strings.Contains(out, want) {
			t.Errorf("ovs-ofctl ofp-print:\n got %s\nwant %s", out, want)
		}
	}
	out := ofpPrint(t, mustMarshal(t, gms[0]))
	for _, want := range []string{"type=select", "ct(commit,table=4,zone=3,nat(dst=198.19.1.5:8080))",
		"nat(dst=198.19.1.6-198.19.1.7:8080-8081)", "set_field:02:02:c6:13:01:05->eth_dst"} {
		if !strings.Contains(out, want) {
			t.Errorf("ovs-ofctl ofp-print of the group lacks %q:\n%s", want, out)
		}
	}
}

func TestGroupStatsCodec(t *testing.T) {
	in := []GroupStats{{GroupID: 7, RefCount: 1, PacketCount: 30, ByteCount: 2000, DurationSec: 5,
		Buckets: []BucketCounter{{10, 700}, {20, 1300}}}, {GroupID: 9}}
	b := AppendGroupStats(nil, in)
	out, err := DecodeGroupStats(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || out[0].GroupID != 7 || len(out[0].Buckets) != 2 || out[0].Buckets[1].ByteCount != 1300 || out[1].GroupID != 9 {
		t.Errorf("decoded %+v", out)
	}
	for _, bad := range [][]byte{b[:len(b)-1], {0, 41, 0, 0}, {0, 8}} {
		if _, err := DecodeGroupStats(bad); err == nil {
			t.Errorf("DecodeGroupStats(%x) accepted", bad)
		}
	}
	req := mustMarshal(t, NewGroupStatsRequest(OFPGAll))
	if out := ofpPrint(t, req); !strings.Contains(out, "OFPST_GROUP request") {
		t.Errorf("group stats request: %s", out)
	}
}

func FuzzGroupStats(f *testing.F) {
	f.Add(AppendGroupStats(nil, []GroupStats{{GroupID: 7, Buckets: []BucketCounter{{1, 2}}}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		gs, err := DecodeGroupStats(b)
		if err != nil {
			return
		}
		if enc := AppendGroupStats(nil, gs); len(enc) != len(b) {
			t.Fatalf("re-encoded %d bytes, decoded %d", len(enc), len(b))
		}
	})
}
