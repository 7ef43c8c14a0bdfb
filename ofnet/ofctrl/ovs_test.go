package ofctrl

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	of "github.com/contiv/netplugin/ofnet/openflow13"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestHandshake: the bridge connects and the datapath ID from the features reply matches
// ovs-vsctl's (checked in startEnv); the switch starts empty and in sync.
func TestHandshake(t *testing.T) {
	e := startEnv(t)
	if !e.sw.Connected() {
		t.Fatal("switch not connected after OnConnect")
	}
	if got := e.ctrl.Switches(); len(got) != 1 || got[0].DatapathID() != e.dpid {
		t.Fatalf("Switches() = %v, want one switch %016x", got, e.dpid)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := e.sw.Resync(ctx)
	if err != nil || res.Changed() {
		t.Fatalf("Resync on an empty bridge = %v, %v; want no changes", res, err)
	}
	if err := e.sw.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestInstallDumpAgree installs 10 000 flows and groups of every type and checks our
// flow-stats dump and ovs-ofctl's dumps against the record; then modifies and deletes.
func TestInstallDumpAgree(t *testing.T) {
	e := startEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	groups := testGroups(25) // 100 groups, 25 of each type
	if err := e.sw.InstallGroups(ctx, groups...); err != nil {
		t.Fatal(err)
	}
	flows := testFlows(10000, 0x1000000, groups)
	start := time.Now()
	if err := e.sw.InstallFlows(ctx, flows...); err != nil {
		t.Fatal(err)
	}
	t.Logf("installed %d flows in %v", len(flows), time.Since(start))
	if n := len(e.sw.Flows()); n != len(flows) {
		t.Fatalf("recorded %d flows, want %d", n, len(flows))
	}
	dumped, err := e.sw.DumpFlows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(dumped) != len(flows) {
		t.Fatalf("DumpFlows returned %d flows, want %d", len(dumped), len(flows))
	}
	checkDumpAgrees(t, ctx, e.sw)
	e.checkOfctlAgrees(t)
	dg, err := e.sw.DumpGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(dg) != len(groups) {
		t.Fatalf("DumpGroups returned %d groups, want %d", len(dg), len(groups))
	}
	if res, err := e.sw.Resync(ctx); err != nil || res.Changed() {
		t.Fatalf("Resync after install = %v, %v; want no changes (normalisation mismatch?)", res, err)
	}

	// Re-installing identical flows is a no-op; modify one strictly, re-cookie another.
	if err := e.sw.InstallFlows(ctx, flows[:100]...); err != nil {
		t.Fatal(err)
	}
	mod := flows[2]
	mod.Instructions = []of.Instruction{apply(output(9))}
	if err := e.sw.ModifyFlow(ctx, mod); err != nil {
		t.Fatal(err)
	}
	recook := flows[3]
	recook.Cookie = 0xfeed
	if err := e.sw.ModifyFlow(ctx, recook); err != nil {
		t.Fatal(err)
	}
	absent := flows[4]
	absent.Priority = 1
	if err := e.sw.ModifyFlow(ctx, absent); !errors.Is(err, ErrNotRecorded) {
		t.Fatalf("ModifyFlow of an unrecorded flow: %v, want ErrNotRecorded", err)
	}
	// Strict delete: the flow in table 0 with in_port=1 only, not others.
	if err := e.sw.DeleteFlows(ctx, Flow{Table: flows[0].Table, Priority: flows[0].Priority, Match: flows[0].Match}); err != nil {
		t.Fatal(err)
	}
	// Delete by cookie: the 8 flows with cookies 0x1000010..0x1000017.
	if err := e.sw.DeleteFlowsByCookie(ctx, 0x1000010, ^uint64(7)); err != nil {
		t.Fatal(err)
	}
	if err := e.sw.DeleteGroups(ctx, groups[len(groups)-1].ID); err != nil {
		t.Fatal(err)
	}
	// Group 100 is used by the table-3 flows with j%100 == 99: OVS removed them with it.
	if n, want := len(e.sw.Flows()), len(flows)-1-8-len(flows)/8/len(groups); n != want {
		t.Fatalf("recorded %d flows after deletes, want %d", n, want)
	}
	checkDumpAgrees(t, ctx, e.sw)
	e.checkOfctlAgrees(t)

	// A flow OVS rejects (goto_table backwards) fails the whole call and changes nothing.
	before := len(e.sw.Flows())
	good := Flow{Table: 9, Priority: 9, Match: of.NewMatch(of.OXMInPort(9)), Instructions: []of.Instruction{apply(output(1))}}
	bad := Flow{Table: 9, Priority: 10, Match: of.NewMatch(of.OXMInPort(9)), Instructions: []of.Instruction{of.InstrGotoTable{TableID: 1}}}
	err = e.sw.InstallFlows(ctx, good, bad)
	var fe *FlowError
	var em *of.ErrorMsg
	if !errors.As(err, &fe) || len(fe.Failed) != 1 || fe.Failed[0].Flow.Priority != 10 || !errors.As(err, &em) {
		t.Fatalf("install of a bad flow: %v; want a FlowError naming it", err)
	}
	t.Logf("rejected as expected: %v", err)
	if n := len(e.sw.Flows()); n != before {
		t.Fatalf("record changed by a failed install: %d flows, want %d", n, before)
	}
	checkDumpAgrees(t, ctx, e.sw)
}

// TestPacketRoundTrip: a PACKET_OUT through the pipeline (output:TABLE, in_port
// CONTROLLER) comes back as a PACKET_IN carrying in_port, the metadata written in table 0
// and the frame bytes.
func TestPacketRoundTrip(t *testing.T) {
	e := startEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dst := ip4(testNet | 2)
	flows := []Flow{
		{Table: 0, Priority: 100, Cookie: 0x51, Match: of.NewMatch(of.OXMInPort(of.OFPPController),
			of.OXMEthType(0x0800), of.OXMIPv4Dst(dst, nil)),
			Instructions: []of.Instruction{of.InstrWriteMetadata{Metadata: 0xabcd00, Mask: 0xffff00},
				of.InstrGotoTable{TableID: 1}}},
		{Table: 1, Priority: 100, Cookie: 0x52, Match: of.NewMatch(of.OXMMetadataMasked(0xabcd00, 0xffff00)),
			Instructions: []of.Instruction{apply(of.ActionOutput{Port: of.OFPPController, MaxLen: of.OFPCMLNoBuffer})}},
	}
	if err := e.sw.InstallFlows(ctx, flows...); err != nil {
		t.Fatal(err)
	}
	frame := udpFrame(ip4(testNet|1), dst, []byte("ofctrl round trip"))
	po := of.NewPacketOut(frame, of.ActionOutput{Port: of.OFPPTable})
	po.InPort = of.OFPPController
	if err := e.sw.PacketOut(ctx, po); err != nil {
		t.Fatal(err)
	}
	select {
	case pi := <-e.pins:
		if port, ok := pi.Match.InPort(); !ok || port != of.OFPPController {
			t.Errorf("packet-in in_port = %#x (%v), want CONTROLLER", port, ok)
		}
		md, ok := pi.Match.Basic(of.OXMFieldMetadata)
		if !ok || md.Uint() != 0xabcd00 {
			t.Errorf("packet-in metadata = %#x (%v), want 0xabcd00", md.Uint(), ok)
		}
		if pi.TableID != 1 || pi.Cookie != 0x52 || pi.Reason != of.PacketInReasonAction {
			t.Errorf("packet-in table %d cookie %#x reason %d, want 1, 0x52, ACTION", pi.TableID, pi.Cookie, pi.Reason)
		}
		if !bytes.Equal(pi.Data, frame) {
			t.Errorf("packet-in data differs:\n got  %x\n want %x", pi.Data, frame)
		}
	case <-ctx.Done():
		t.Fatal("no packet-in")
	}
}

// udpFrame builds an Ethernet/IPv4/UDP frame (valid IPv4 checksum, UDP checksum 0).
func udpFrame(src, dst net.IP, payload []byte) []byte {
	b := append([]byte{}, mac(2)...)
	b = append(b, mac(1)...)
	b = binary.BigEndian.AppendUint16(b, 0x0800)
	ip := make([]byte, 20)
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(ip[2:], uint16(20+8+len(payload)))
	copy(ip[12:], src.To4())
	copy(ip[16:], dst.To4())
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	binary.BigEndian.PutUint16(ip[10:], ^uint16(sum))
	b = append(b, ip...)
	b = binary.BigEndian.AppendUint16(b, 40000)
	b = binary.BigEndian.AppendUint16(b, 9)
	b = binary.BigEndian.AppendUint16(b, uint16(8+len(payload)))
	b = binary.BigEndian.AppendUint16(b, 0)
	b = append(b, payload...)
	for len(b) < 60 {
		b = append(b, 0)
	}
	return b
}

// TestRestartAndResync: after ovs-vswitchd restarts the switch reconnects and gets
// exactly the recorded state back; flows removed and added behind the controller's back
// are repaired by Resync.
func TestRestartAndResync(t *testing.T) {
	e := startEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	groups := testGroups(2)
	if err := e.sw.InstallGroups(ctx, groups...); err != nil {
		t.Fatal(err)
	}
	if err := e.sw.InstallFlows(ctx, testFlows(2000, 0x2000000, groups)...); err != nil {
		t.Fatal(err)
	}
	e.checkOfctlAgrees(t)

	e.ovs.RestartVswitchd(t)
	select {
	case <-e.disconnects:
	case <-ctx.Done():
		t.Fatal("no disconnect after restarting ovs-vswitchd")
	}
	e.waitConnect(t, 30*time.Second)
	e.checkOfctlAgrees(t)
	checkDumpAgrees(t, ctx, e.sw)

	// Behind the controller's back: strict-delete one recorded flow, add a stray one.
	victim := e.sw.Flows()[17]
	spec := strings.Replace(victim.Key().String(), ", ", ",", 1)
	if out, err := e.ovs.Ofctl("-O", "OpenFlow13", "--strict", "del-flows", e.bridge, spec); err != nil {
		t.Fatalf("del-flows --strict %s: %v: %s", spec, err, out)
	}
	stray := "table=9,priority=5,ip,nw_dst=198.18.9.9,actions=drop"
	if out, err := e.ovs.Ofctl("-O", "OpenFlow13", "add-flow", e.bridge, stray); err != nil {
		t.Fatalf("add-flow %s: %v: %s", stray, err, out)
	}
	if out, err := e.ovs.Ofctl("-O", "OpenFlow13", "add-group", e.bridge, "group_id=999,type=all,bucket=output:1"); err != nil {
		t.Fatalf("add-group: %v: %s", err, out)
	}
	got := e.ofctlFlows(t)
	if len(got) != len(e.sw.Flows()) { // one missing, one extra
		t.Fatalf("after tampering: %d flows, want %d", len(got), len(e.sw.Flows()))
	}
	res, err := e.sw.Resync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := ResyncResult{FlowsAdded: 1, FlowsDeleted: 1, GroupsDeleted: 1}
	if res != want {
		t.Errorf("Resync = %v, want %v", res, want)
	}
	e.checkOfctlAgrees(t)
	if res, err := e.sw.Resync(ctx); err != nil || res.Changed() {
		t.Fatalf("second Resync = %v, %v; want no changes", res, err)
	}
}

// TestOfflineInstall: flows installed while the switch is disconnected are recorded and
// pushed when it connects.
func TestOfflineInstall(t *testing.T) {
	e := startEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e.ovs.KillVswitchd(t)
	select {
	case <-e.disconnects:
	case <-ctx.Done():
		t.Fatal("no disconnect after killing ovs-vswitchd")
	}
	if e.sw.Connected() {
		t.Fatal("switch still connected")
	}
	groups := testGroups(1)
	if err := e.sw.InstallGroups(ctx, groups...); err != nil {
		t.Fatal(err)
	}
	if err := e.sw.InstallFlows(ctx, testFlows(64, 0x3000000, groups)...); err != nil {
		t.Fatal(err)
	}
	if _, err := e.sw.DumpFlows(ctx); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("DumpFlows while disconnected: %v, want ErrNotConnected", err)
	}
	e.ovs.StartVswitchd(t)
	e.waitConnect(t, 30*time.Second)
	e.checkOfctlAgrees(t)
}

// TestDeadPeer: a stopped ovs-vswitchd is detected within EchoInterval+DeadTimeout,
// and after it continues the switch reconnects and is resynchronised.
func TestDeadPeer(t *testing.T) {
	const echo, dead = time.Second, 2 * time.Second
	e := startEnv(t, func(c *Config) { c.EchoInterval, c.DeadTimeout = echo, dead })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := e.sw.InstallFlows(ctx, testFlows(256, 0x4000000, nil)[:5]...); err != nil {
		t.Fatal(err)
	}
	pidb, err := os.ReadFile(e.ovs.Dir + "/ovs-vswitchd.pid")
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(pidb)))
	if err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				t.Errorf("SIGCONT: %v", err)
			}
		}
	}
	defer resume()
	limit := echo + dead
	select {
	case <-e.disconnects:
		took := time.Since(stopped)
		t.Logf("dead peer detected after %v", took)
		if took > limit+500*time.Millisecond {
			t.Errorf("detection took %v, want ≤ %v (+0.5 s slack for scheduling)", took, limit)
		}
	case <-time.After(3 * limit):
		t.Fatal("stopped switch not detected")
	}
	if e.sw.Connected() {
		t.Fatal("switch still marked connected")
	}
	// Change the record while the switch is away; the reconnect must push it.
	if err := e.sw.DeleteFlows(ctx, e.sw.Flows()[0]); err != nil {
		t.Fatal(err)
	}
	resume()
	e.waitConnect(t, 30*time.Second)
	e.checkOfctlAgrees(t)
}
