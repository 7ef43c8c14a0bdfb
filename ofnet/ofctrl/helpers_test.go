package ofctrl

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	of "github.com/contiv/netplugin/ofnet/openflow13"
	"github.com/contiv/netplugin/test/ovstest"
	"github.com/contiv/netplugin/utils/logtest"
	"github.com/contiv/netplugin/utils/runtest"
	"github.com/sirupsen/logrus"
)

// testEnv is one private OVS with one netdev bridge whose controller is our Controller.
type testEnv struct {
	ovs    *ovstest.OVS
	ctrl   *Controller
	bridge string
	dpid   uint64
	sw     *Switch

	connects    chan uint64
	disconnects chan uint64
	pins        chan *of.PacketIn
}

type envOpt func(*Config)

func quietLogger(t testing.TB) logrus.FieldLogger { return logtest.New(t, logrus.InfoLevel) }

// startEnv starts OVS and the controller, creates the bridge and waits for the switch's
// first connection (handshake + resync).
func startEnv(t testing.TB, opts ...envOpt) *testEnv {
	t.Helper()
	o := ovstest.Start(t)
	ln := o.ListenTCP(t)
	e := &testEnv{ovs: o, bridge: "br0",
		connects: make(chan uint64, 16), disconnects: make(chan uint64, 16),
		pins: make(chan *of.PacketIn, 64)}
	cfg := Config{
		Listener: ln,
		Logger:   quietLogger(t),
		OnConnect: func(sw *Switch) {
			select {
			case e.connects <- sw.DatapathID():
			default:
			}
		},
		OnDisconnect: func(dpid uint64) {
			select {
			case e.disconnects <- dpid:
			default:
			}
		},
		OnPacketIn: func(_ *Switch, pi *of.PacketIn) {
			select {
			case e.pins <- pi:
			default:
			}
		},
	}
	for _, opt := range opts {
		opt(&cfg)
	}
	ctrl, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.ctrl = ctrl
	runtest.Go(t, "Run", ctrl.Run)

	out, err := o.Vsctl("add-br", e.bridge,
		"--", "set", "bridge", e.bridge, "datapath_type=netdev", "protocols=OpenFlow13",
		"fail_mode=secure",
		"--", "set-controller", e.bridge, "tcp:"+ln.Addr().String(),
		"--", "set", "controller", e.bridge, "max_backoff=1000", "inactivity_probe=5000")
	if err != nil {
		t.Fatalf("create bridge: %v: %s", err, out)
	}
	out, err = o.Vsctl("get", "bridge", e.bridge, "datapath_id")
	if err != nil {
		t.Fatalf("get datapath_id: %v: %s", err, out)
	}
	e.dpid, err = strconv.ParseUint(strings.Trim(strings.TrimSpace(out), `"`), 16, 64)
	if err != nil {
		t.Fatalf("parse datapath_id %q: %v", out, err)
	}
	e.sw = ctrl.Switch(e.dpid)
	e.waitConnect(t, 20*time.Second)
	return e
}

func (e *testEnv) waitConnect(t testing.TB, d time.Duration) {
	t.Helper()
	select {
	case id := <-e.connects:
		if id != e.dpid {
			t.Fatalf("switch connected with datapath ID %016x, ovs-vsctl says %016x", id, e.dpid)
		}
	case <-time.After(d):
		t.Fatalf("switch %016x did not connect within %v", e.dpid, d)
	}
}

// checkNoDisconnect fails if the switch disconnected since the last check (a benchmark
// figure spanning a reconnect would be meaningless).
func (e *testEnv) checkNoDisconnect(t testing.TB) {
	t.Helper()
	select {
	case <-e.disconnects:
		t.Fatal("switch disconnected during the measurement (machine overloaded?)")
	default:
	}
}

// ofctlFlows returns `ovs-ofctl --no-stats dump-flows` lines, sorted.
func (e *testEnv) ofctlFlows(t testing.TB) []string {
	t.Helper()
	out, err := e.ovs.Ofctl("-O", "OpenFlow13", "--no-stats", "dump-flows", e.bridge)
	if err != nil {
		t.Fatalf("dump-flows: %v: %s", err, out)
	}
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		// Skip the reply header and ovs-ofctl's own log lines (e.g. "Unreasonably long
		// poll interval" warnings on a loaded machine; Exec returns stderr too).
		if !strings.Contains(l, "actions=") || strings.HasPrefix(l, "OFPST_FLOW") {
			continue
		}
		lines = append(lines, l)
	}
	sort.Strings(lines)
	return lines
}

// ofctlGroups returns `ovs-ofctl dump-groups` lines, sorted.
func (e *testEnv) ofctlGroups(t testing.TB) []string {
	t.Helper()
	gs, err := e.ovs.Groups(e.bridge)
	if err != nil {
		t.Fatal(err)
	}
	return gs
}

func renderFlows(fs []Flow) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.String()
	}
	sort.Strings(out)
	return out
}

func renderGroups(gs []Group) []string {
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = g.String()
	}
	sort.Strings(out)
	return out
}

// diffLines reports lines only in want or only in got (at most a few of each).
func diffLines(want, got []string) string {
	w := map[string]bool{}
	for _, l := range want {
		w[l] = true
	}
	g := map[string]bool{}
	for _, l := range got {
		g[l] = true
	}
	var b strings.Builder
	n := 0
	for _, l := range want {
		if !g[l] && n < 5 {
			fmt.Fprintf(&b, "\n  missing: %s", l)
			n++
		}
	}
	n = 0
	for _, l := range got {
		if !w[l] && n < 5 {
			fmt.Fprintf(&b, "\n  extra:   %s", l)
			n++
		}
	}
	return b.String()
}

// checkOfctlAgrees compares ovs-ofctl's dump with the recorded state, as rendered strings.
func (e *testEnv) checkOfctlAgrees(t testing.TB) {
	t.Helper()
	want := renderFlows(e.sw.Flows())
	got := e.ofctlFlows(t)
	if d := diffLines(want, got); d != "" || len(want) != len(got) {
		t.Errorf("ovs-ofctl dump-flows (%d lines) disagrees with the record (%d flows):%s", len(got), len(want), d)
	}
	wantG := renderGroups(e.sw.Groups())
	gotG := e.ofctlGroups(t)
	if d := diffLines(wantG, gotG); d != "" || len(wantG) != len(gotG) {
		t.Errorf("ovs-ofctl dump-groups (%d lines) disagrees with the record (%d groups):%s", len(gotG), len(wantG), d)
	}
}

// checkDumpAgrees compares our own flow-stats dump with the recorded state by key and
// content.
func checkDumpAgrees(t testing.TB, ctx context.Context, sw *Switch) {
	t.Helper()
	dumped, err := sw.DumpFlows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rec := map[FlowKey]*recFlow{}
	for _, f := range sw.Flows() {
		rec[f.Key()] = newRecFlow(f)
	}
	bad := 0
	for i := range dumped {
		f := FlowFromStats(&dumped[i])
		r, ok := rec[f.Key()]
		switch {
		case !ok:
			t.Errorf("dumped flow not recorded: %s", f)
		case !r.sameContent(f.Cookie, f.Instructions):
			t.Errorf("dumped flow differs:\n got  %s\n want %s", f, r.flow)
		default:
			delete(rec, f.Key())
			continue
		}
		if bad++; bad > 5 {
			t.Fatal("too many differences")
		}
	}
	for _, r := range rec {
		t.Errorf("recorded flow missing from dump: %s", r.flow)
		if bad++; bad > 5 {
			t.Fatal("too many differences")
		}
	}
}

// ---- test data ----

func mac(i int) net.HardwareAddr {
	return net.HardwareAddr{0x02, 0, byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i)}
}

func ip4(v uint32) net.IP {
	b := make(net.IP, 4)
	binary.BigEndian.PutUint32(b, v)
	return b
}

const testNet = 198<<24 | 18<<16 // 198.18.0.0/15

func apply(a ...of.Action) of.Instruction { return of.InstrApplyActions{Actions: a} }
func output(p uint32) of.Action           { return of.ActionOutput{Port: p, MaxLen: 0} }

// testGroups returns n groups of every type (all, select, indirect, ff), ids 1.. .
func testGroups(n int) []Group {
	var gs []Group
	id := uint32(1)
	for i := 0; i < n; i++ {
		gs = append(gs,
			Group{ID: id, Type: of.GroupTypeAll, Buckets: []of.Bucket{
				of.NewBucket(output(1)),
				of.NewBucket(of.ActionSetField{Field: of.OXMTunnelID(uint64(i))}, output(2)),
			}},
			Group{ID: id + 1, Type: of.GroupTypeSelect, Buckets: []of.Bucket{
				{Weight: 50, WatchPort: of.OFPPAny, WatchGroup: of.OFPGAny, Actions: []of.Action{output(3)}},
				{Weight: 100, WatchPort: of.OFPPAny, WatchGroup: of.OFPGAny, Actions: []of.Action{output(4)}},
			}},
			Group{ID: id + 2, Type: of.GroupTypeIndirect, Buckets: []of.Bucket{
				of.NewBucket(of.ActionSetField{Field: of.OXMEthDst(mac(i))}, output(5)),
			}},
			Group{ID: id + 3, Type: of.GroupTypeFastFailover, Buckets: []of.Bucket{
				{WatchPort: 6, WatchGroup: of.OFPGAny, Actions: []of.Action{output(6)}},
				{WatchPort: 7, WatchGroup: of.OFPGAny, Actions: []of.Action{output(7)}},
			}},
		)
		id += 4
	}
	return gs
}

// testFlows returns n distinct flows mixing the match fields and actions of docs/dataplane.md
// §2.7–§2.8 (plus NXM registers): in_port, vlan_vid, eth_type + masked IPv4 src/dst,
// TCP/UDP ports, masked metadata, tunnel id, registers, IPv6, tcp_flags; output,
// push/pop vlan, set_field (also of a register), goto_table, write_metadata, group.
// Flows use the groups given (round robin); with none, output instead.
func testFlows(n int, cookieBase uint64, groups []Group) []Flow {
	fs := make([]Flow, 0, n)
	for i := 0; i < n; i++ {
		j := i / 8
		c := cookieBase + uint64(i)
		var f Flow
		switch i % 8 {
		case 0:
			f = Flow{Table: 0, Priority: 100, Match: of.NewMatch(of.OXMInPort(uint32(j + 1))),
				Instructions: []of.Instruction{
					of.InstrWriteMetadata{Metadata: uint64(j) << 16, Mask: 0xffffffff0000},
					of.InstrGotoTable{TableID: 1}}}
		case 1:
			f = Flow{Table: 1, Priority: uint16(200 + j%7), Match: of.NewMatch(
				of.OXMVlanVID(uint16(j%4094+1)), of.OXMMetadataMasked(uint64(j/4094)<<32, 0xff00000000)),
				Instructions: []of.Instruction{apply(of.ActionPopVLAN{}, output(uint32(j%48+1)))}}
		case 2:
			f = Flow{Table: 2, Priority: 300, Match: of.NewMatch(of.OXMEthType(0x0800),
				of.OXMIPv4Src(ip4(testNet), net.CIDRMask(15, 32)),
				of.OXMIPv4Dst(ip4(testNet|uint32(j)), nil)),
				Instructions: []of.Instruction{apply(of.ActionPushVLAN{EtherType: 0x8100},
					of.ActionSetField{Field: of.OXMVlanVID(uint16(j%4094 + 1))}, output(3))}}
		case 3:
			act := output(4)
			if len(groups) > 0 {
				act = of.ActionGroup{GroupID: groups[j%len(groups)].ID}
			}
			f = Flow{Table: 3, Priority: 400, Match: of.NewMatch(of.OXMEthType(0x0800), of.OXMIPProto(6),
				of.OXMTCPSrc(uint16(j%65535+1)), of.OXMTCPDst(uint16(j/65535+80))),
				Instructions: []of.Instruction{apply(act)}}
		case 4:
			f = Flow{Table: 4, Priority: 500, Match: of.NewMatch(of.OXMEthType(0x0800), of.OXMIPProto(17),
				of.OXMIPv4Dst(ip4(testNet|uint32(j%256)<<8), net.CIDRMask(24, 32)),
				of.OXMUDPDst(uint16(j/256+1))),
				Instructions: []of.Instruction{apply(of.ActionSetField{Field: of.OXMEthDst(mac(j))},
					of.ActionSetField{Field: of.OXMIPv4Dst(ip4(testNet|uint32(j)), nil)}, output(uint32(j%10+1)))}}
		case 5:
			f = Flow{Table: 5, Priority: 600, Match: of.NewMatch(of.OXMTunnelID(uint64(j)+1),
				of.OXMReg(0, uint32(j&0xff), 0xff)),
				Instructions: []of.Instruction{
					of.InstrWriteMetadata{Metadata: uint64(j), Mask: 0xffffffff},
					of.InstrGotoTable{TableID: 6}}}
		case 6:
			f = Flow{Table: 6, Priority: 700, Match: of.NewMatch(of.OXMReg(1, uint32(j), 0xffffffff),
				of.OXMReg(2, 0x10, 0xf0), of.OXMMetadataMasked(uint64(j)<<4, 0xffff0)),
				Instructions: []of.Instruction{apply(of.ActionSetField{Field: of.OXMReg(3, uint32(j), 0xffffffff)},
					of.ActionOutput{Port: of.OFPPController, MaxLen: of.OFPCMLNoBuffer})}}
		case 7:
			dst := net.ParseIP("2001:db8::").To16()
			binary.BigEndian.PutUint32(dst[12:], uint32(j))
			f = Flow{Table: 7, Priority: 800, Match: of.NewMatch(of.OXMEthType(0x86dd),
				of.OXMIPv6Dst(dst, nil), of.OXMIPProto(6), of.OXMTCPFlags(0x02, 0x12)),
				Instructions: []of.Instruction{apply(of.ActionSetField{Field: of.OXMTunnelID(uint64(j))}, output(2))}}
		}
		f.Cookie = c
		fs = append(fs, f)
	}
	return fs
}
