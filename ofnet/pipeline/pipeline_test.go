package pipeline

import (
	"errors"
	"net"
	"strings"
	"testing"

	of "github.com/contiv/netplugin/ofnet/openflow13"
)

func testTables() *Registry {
	return NewRegistry(Misses{ClassifierTable: MissGoto(VlanTable), VlanTable: MissDrop(),
		PolicyTable: MissGoto(SrvProxySNATTable), MacDestTable: MissNormal()})
}

// TestMetadataLayout checks the §3.0.3 examples are produced from the typed fields.
func TestMetadataLayout(t *testing.T) {
	r := testTables()
	f, err := r.Get(VlanTable).BuildFlow(10).MatchInPort(3).Action().PushVlan(1).
		SetMetadata(VRFField, 1).SetMetadata(SrcEPGField, 5).GotoTable(SrvProxyDNATTable).Done()
	if err != nil {
		t.Fatal(err)
	}
	want := "table=1, priority=10,in_port=3 actions=push_vlan:0x8100,set_field:4097->vlan_vid,write_metadata:0x100050000/0xff7fff0000,goto_table:3"
	if got := f.String(); got != want {
		t.Errorf("port flow\n got %s\nwant %s", got, want)
	}
	f, err = r.Get(PolicyTable).BuildFlow(60).MatchSrcDst(5, 5).MatchTCPDst(80).Action().GotoTable(SrvProxySNATTable).Done()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.String(), "metadata=0x5000a/0x7ffffffe") {
		t.Errorf("policy metadata: %s", f)
	}
	if v, _ := DstEPGField.Value(5); v != 0xa || DstEPGField.Mask() != 0xfffe || RxVtepField.Mask() != 1 ||
		SrcEPGField.Mask() != 0x7fff0000 || VRFField.Mask() != 0xff00000000 {
		t.Error("field masks do not follow §3.0.3")
	}
	if SrcEPGField.Get(0x100050000) != 5 || VRFField.Get(0x100050000) != 1 {
		t.Error("Get does not extract fields")
	}
}

// MatchSrcDst is a test helper: both EPG fields.
func (b *FlowBuilder) MatchSrcDst(src, dst uint64) *FlowBuilder {
	return b.MatchMetadata(SrcEPGField, src).MatchMetadata(DstEPGField, dst)
}

// TestEPGOverflowRefused: quirk A6 — EPG ids beyond 15 bits are an error, not
// truncated.
func TestEPGOverflowRefused(t *testing.T) {
	r := testTables()
	_, err := r.Get(VlanTable).BuildFlow(10).MatchInPort(1).Action().SetMetadata(SrcEPGField, 32768).
		GotoTable(SrvProxyDNATTable).Done()
	if !errors.Is(err, ErrValueTooLarge) {
		t.Fatalf("EPG 32768: %v, want ErrValueTooLarge", err)
	}
	if _, err := r.Get(VlanTable).BuildFlow(10).MatchMetadata(DstEPGField, 32767).Action().Drop().Done(); err != nil {
		t.Fatalf("EPG 32767: %v", err)
	}
}

// TestBuilderConsistency: the builder adds prerequisites and refuses what OVS would
// reject as inconsistent.
func TestBuilderConsistency(t *testing.T) {
	r := testTables()
	mac := net.HardwareAddr{2, 2, 10, 1, 1, 5}
	ok, err := r.Get(MacDestTable).BuildFlow(100).MatchTCPDst(80).Action().SetTCPDst(8080).
		SetIPv4Dst(net.ParseIP("10.1.1.6")).Output(3).Done()
	if err != nil {
		t.Fatal(err)
	}
	if got := ok.String(); got != "table=9, priority=100,tcp,tp_dst=80 actions=set_field:8080->tcp_dst,set_field:10.1.1.6->ip_dst,output:3" {
		t.Errorf("prerequisites not added: %s", got)
	}
	if err := ok.Match.CheckPrereqs(); err != nil {
		t.Error(err)
	}
	bad := map[string]func() error{
		"pop_vlan without vlan match": func() error {
			_, err := r.Get(MacDestTable).BuildFlow(100).MatchEthDst(mac).Action().PopVlan().Output(3).Done()
			return err
		},
		"set ip_dst without ip": func() error {
			_, err := r.Get(MacDestTable).BuildFlow(100).MatchInPort(1).Action().SetIPv4Dst(net.ParseIP("1.2.3.4")).Done()
			return err
		},
		"set tcp_dst on udp": func() error {
			_, err := r.Get(MacDestTable).BuildFlow(100).MatchUDPDst(53).Action().SetTCPDst(1).Done()
			return err
		},
		"dscp without ip": func() error {
			_, err := r.Get(VlanTable).BuildFlow(100).MatchInPort(1).Action().SetDSCP(10).Done()
			return err
		},
		"conflicting eth_type": func() error {
			_, err := r.Get(VlanTable).BuildFlow(100).MatchARPOp(1).MatchIPv4Dst(net.ParseIP("1.2.3.4"), nil).Action().Drop().Done()
			return err
		},
		"drop with actions": func() error {
			_, err := r.Get(VlanTable).BuildFlow(100).Action().Output(1).Drop().Done()
			return err
		},
		"goto backwards": func() error {
			_, err := r.Get(MacDestTable).BuildFlow(100).Action().GotoTable(VlanTable).Done()
			return err
		},
		"no actions": func() error {
			_, err := r.Get(MacDestTable).BuildFlow(100).Action().Done()
			return err
		},
		"vlan 0": func() error {
			_, err := r.Get(VlanTable).BuildFlow(100).Action().PushVlan(0).GotoTable(MacDestTable).Done()
			return err
		},
	}
	for name, fn := range bad {
		if err := fn(); !errors.Is(err, ErrInconsistent) {
			t.Errorf("%s: %v, want ErrInconsistent", name, err)
		}
	}
	drop, err := r.Get(VlanTable).BuildFlow(1).Action().Drop().Done()
	if err != nil || len(drop.Instructions) != 0 {
		t.Errorf("drop flow: %v, %v; want no instructions", drop, err)
	}
}

// TestRegistryMisses: each declared table has its miss flow, names come from the
// registry, unknown tables are still usable.
func TestRegistryMisses(t *testing.T) {
	r := testTables()
	flows, err := r.MissFlows(CookieOf(CatInit, "x"))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(Render(flows, false), "\n")
	want := strings.Join([]string{
		"priority=1 actions=goto_table:1",
		"table=1, priority=1 actions=drop",
		"table=5, priority=1 actions=goto_table:6",
		"table=9, priority=1 actions=NORMAL",
	}, "\n")
	if got != want {
		t.Errorf("miss flows\n got %s\nwant %s", got, want)
	}
	if r.Get(PolicyTable).Name != "Policy" || r.Get(IPTable).ID != IPTable || TableID(42).String() != "Table42" {
		t.Error("table names")
	}
	if n := len(r.All()); n != 4 {
		t.Errorf("%d tables declared, want 4", n)
	}
}

// TestCookies: category in the top byte, deterministic object hash.
func TestCookies(t *testing.T) {
	a, b := CookieOf(CatRule, "r1"), CookieOf(CatRule, "r1")
	if a != b || CookieCategory(a) != CatRule || a == CookieOf(CatRule, "r2") || CookieOf(CatVtep, "r1")&^CookieCategoryMask != a&^CookieCategoryMask {
		t.Errorf("cookies: %#x %#x", a, b)
	}
	if CatRule.String() != "rule" {
		t.Error(CatRule.String())
	}
}

// TestNormalizeDump strips statistics, cookies and table 0 like Render prints.
func TestNormalizeDump(t *testing.T) {
	out := "OFPST_FLOW reply (OF1.3) (xid=0x2):\n" +
		" cookie=0x300, duration=1.5s, table=0, n_packets=3, n_bytes=180, priority=1 actions=goto_table:1\n" +
		" cookie=0x5, duration=1.5s, table=9, n_packets=0, n_bytes=0, idle_age=4, priority=100,dl_vlan=1 actions=drop\n"
	got := NormalizeDump(out, false)
	want := []string{"priority=1 actions=goto_table:1", "table=9, priority=100,dl_vlan=1 actions=drop"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("NormalizeDump = %q, want %q", got, want)
	}
	if got := NormalizeDump(out, true); !strings.HasPrefix(got[0], "cookie=0x300, priority=1") {
		t.Errorf("with cookies: %q", got)
	}
	_ = of.OFPPAny
}
