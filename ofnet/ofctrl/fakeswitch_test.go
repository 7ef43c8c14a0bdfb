package ofctrl

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	of "github.com/contiv/netplugin/ofnet/openflow13"
	"github.com/contiv/netplugin/utils/runtest"
)

// fakeSwitch is a tiny in-memory OpenFlow 1.3 switch for protocol tests that need no
// OVS: it keeps a flow table (add / strict delete / delete by cookie), answers flow and
// group dumps in parts of two entries with the MORE flag, barriers and echoes, and
// rejects flows with priority 666.
type fakeSwitch struct {
	t    testing.TB
	dpid uint64
	nc   net.Conn

	mu       sync.Mutex
	flows    map[FlowKey]of.FlowStats
	silent   bool // stop answering anything
	echoSeen chan *of.EchoReply
	done     chan struct{}
}

func dialFake(t testing.TB, addr string, dpid uint64, helloVersion uint8) *fakeSwitch {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fs := &fakeSwitch{t: t, dpid: dpid, nc: nc, flows: map[FlowKey]of.FlowStats{},
		echoSeen: make(chan *of.EchoReply, 4), done: make(chan struct{})}
	h := of.NewHello(helloVersion)
	h.Version = helloVersion
	if err := of.WriteMessage(nc, h); err != nil {
		t.Fatal(err)
	}
	go fs.serve()
	t.Cleanup(func() { nc.Close(); <-fs.done })
	return fs
}

func (fs *fakeSwitch) send(m of.Message) {
	if err := of.WriteMessage(fs.nc, m); err != nil && !errors.Is(err, net.ErrClosed) {
		fs.t.Logf("fake switch write: %v", err)
	}
}

func (fs *fakeSwitch) serve() {
	defer close(fs.done)
	br := bufio.NewReader(fs.nc)
	for {
		msg, err := of.ReadMessage(br)
		if err != nil {
			return
		}
		fs.mu.Lock()
		silent := fs.silent
		fs.mu.Unlock()
		if silent {
			continue
		}
		switch m := msg.(type) {
		case *of.FeaturesRequest:
			r := &of.FeaturesReply{DatapathID: fs.dpid, NTables: 254}
			r.Xid = m.Xid
			fs.send(r)
		case *of.EchoRequest:
			fs.send(of.NewEchoReply(m))
		case *of.EchoReply:
			select {
			case fs.echoSeen <- m:
			default:
			}
		case *of.BarrierRequest:
			r := &of.BarrierReply{}
			r.Xid = m.Xid
			fs.send(r)
		case *of.FlowMod:
			fs.flowMod(m)
		case *of.GroupMod:
		case *of.MultipartRequest:
			fs.multipart(m)
		}
	}
}

func (fs *fakeSwitch) flowMod(m *of.FlowMod) {
	f := Flow{Table: m.TableID, Priority: m.Priority, Cookie: m.Cookie, Match: m.Match, Instructions: m.Instructions}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	switch m.Command {
	case of.FlowAdd:
		if m.Priority == 666 {
			raw, _ := m.MarshalBinary()
			em := &of.ErrorMsg{ErrType: of.ErrTypeBadMatch, Code: 4, Data: raw[:64]}
			em.Xid = m.Xid
			fs.send(em)
			return
		}
		fs.flows[f.Key()] = of.FlowStats{TableID: m.TableID, Priority: m.Priority, Cookie: m.Cookie,
			Match: m.Match, Instructions: m.Instructions}
	case of.FlowDeleteStrict:
		delete(fs.flows, f.Key())
	case of.FlowDelete:
		for k, s := range fs.flows {
			if s.Cookie&m.CookieMask == m.Cookie&m.CookieMask {
				delete(fs.flows, k)
			}
		}
	}
}

func (fs *fakeSwitch) multipart(m *of.MultipartRequest) {
	fs.mu.Lock()
	var all []of.FlowStats
	for _, s := range fs.flows {
		all = append(all, s)
	}
	fs.mu.Unlock()
	reply := func(flags uint16, flows []of.FlowStats) {
		r := &of.MultipartReply{MPType: m.MPType, Flags: flags, Flows: flows}
		r.Xid = m.Xid
		fs.send(r)
	}
	if m.MPType != of.MultipartFlow {
		reply(0, nil)
		return
	}
	for len(all) > 2 {
		reply(of.MultipartFlagMore, all[:2])
		all = all[2:]
	}
	reply(0, all)
}

func (fs *fakeSwitch) setSilent() {
	fs.mu.Lock()
	fs.silent = true
	fs.mu.Unlock()
}

func (fs *fakeSwitch) count() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return len(fs.flows)
}

// startCtrl runs a controller on a loopback listener for fake-switch tests.
func startCtrl(t testing.TB, cfg Config) (*Controller, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listener = ln
	if cfg.Logger == nil {
		cfg.Logger = quietLogger(t)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	runtest.Go(t, "Run", c.Run)
	return c, ln.Addr().String()
}

func TestFakeSwitchResyncAndErrors(t *testing.T) {
	connected := make(chan uint64, 4)
	c, addr := startCtrl(t, Config{EchoInterval: time.Second, DeadTimeout: time.Second,
		OnConnect: func(sw *Switch) { connected <- sw.DatapathID() }})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// Recorded before the switch ever connected: pushed on connect.
	sw := c.Switch(42)
	flows := testFlows(9, 0x100, nil)
	if err := sw.InstallFlows(ctx, flows...); err != nil {
		t.Fatal(err)
	}
	fs := dialFake(t, addr, 42, of.Version)
	select {
	case id := <-connected:
		if id != 42 {
			t.Fatalf("connected dpid %d", id)
		}
	case <-ctx.Done():
		t.Fatal("no connect")
	}
	if fs.count() != 9 {
		t.Fatalf("fake switch has %d flows after connect, want 9", fs.count())
	}
	// Dump across five multipart parts.
	d, err := sw.DumpFlows(ctx)
	if err != nil || len(d) != 9 {
		t.Fatalf("DumpFlows: %d flows, %v; want 9", len(d), err)
	}
	// Errors correlate by xid to the rejected flow; the accepted one is rolled back.
	bad := Flow{Table: 1, Priority: 666, Match: of.NewMatch(of.OXMInPort(1))}
	ok := Flow{Table: 1, Priority: 1, Match: of.NewMatch(of.OXMInPort(1))}
	err = sw.InstallFlows(ctx, ok, bad)
	var fe *FlowError
	if !errors.As(err, &fe) || len(fe.Failed) != 1 || fe.Failed[0].Flow.Priority != 666 {
		t.Fatalf("InstallFlows with a rejected flow: %v", err)
	}
	if fs.count() != 9 || len(sw.Flows()) != 9 {
		t.Fatalf("after rollback: switch %d flows, record %d; want 9, 9", fs.count(), len(sw.Flows()))
	}
	// Resync repairs a flow lost on the switch.
	fs.mu.Lock()
	delete(fs.flows, flows[0].Key())
	st := fs.flows[flows[1].Key()]
	st.Cookie = 0xbad
	fs.flows[flows[1].Key()] = st
	fs.flows[Flow{Table: 200, Priority: 1}.Key()] = of.FlowStats{TableID: 200, Priority: 1}
	fs.mu.Unlock()
	res, err := sw.Resync(ctx)
	if err != nil || res != (ResyncResult{FlowsAdded: 1, FlowsReplaced: 1, FlowsDeleted: 1}) {
		t.Fatalf("Resync = %v, %v; want one flow added, one replaced, one deleted", res, err)
	}
	if res, err := sw.Resync(ctx); err != nil || res.Changed() {
		t.Fatalf("second Resync = %v, %v; want no changes", res, err)
	}
}

func TestFakeSwitchEchoAndDeadPeer(t *testing.T) {
	disc := make(chan time.Time, 4)
	connected := make(chan struct{}, 4)
	const echo, dead = 300 * time.Millisecond, 600 * time.Millisecond
	c, addr := startCtrl(t, Config{EchoInterval: echo, DeadTimeout: dead,
		OnConnect:    func(*Switch) { connected <- struct{}{} },
		OnDisconnect: func(uint64) { disc <- time.Now() }})
	fs := dialFake(t, addr, 7, of.Version)
	select {
	case <-connected:
	case <-time.After(5 * time.Second):
		t.Fatal("no connect")
	}
	// The controller echoes our request's xid and payload.
	req := &of.EchoRequest{Data: []byte("ping")}
	req.Xid = 0xabc
	fs.send(req)
	select {
	case rep := <-fs.echoSeen:
		if rep.Xid != 0xabc || !bytes.Equal(rep.Data, []byte("ping")) {
			t.Fatalf("echo reply xid %#x data %q", rep.Xid, rep.Data)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("no echo reply")
	}
	// Idle but answering: stays connected over several echo intervals.
	time.Sleep(4 * echo)
	if !c.Switch(7).Connected() {
		t.Fatal("live switch disconnected")
	}
	fs.setSilent()
	stopped := time.Now()
	select {
	case at := <-disc:
		if took := at.Sub(stopped); took > echo+dead+500*time.Millisecond {
			t.Errorf("dead peer detected after %v, want ≤ %v (+0.5 s slack for scheduling)", took, echo+dead)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("silent switch not detected")
	}
}

func TestFakeSwitchRejectsOldVersion(t *testing.T) {
	connected := make(chan struct{}, 1)
	_, addr := startCtrl(t, Config{OnConnect: func(*Switch) { connected <- struct{}{} }})
	fs := dialFake(t, addr, 9, 1) // OpenFlow 1.0 only
	select {
	case <-fs.done: // controller closed the connection
	case <-connected:
		t.Fatal("OpenFlow 1.0 switch accepted")
	case <-time.After(5 * time.Second):
		t.Fatal("OpenFlow 1.0 switch not closed")
	}
}

func TestFlowKeyCanonical(t *testing.T) {
	a := Flow{Table: 2, Priority: 5, Match: of.NewMatch(
		of.OXMEthType(0x0800),
		of.OXMIPv4Dst(net.IPv4(198, 18, 1, 77), net.CIDRMask(24, 32)), // host bits set
		of.OXMMetadataMasked(0x12, 0xffffffffffffffff),                // all-ones mask
		of.OXMReg(3, 0, 0), // zero mask: no constraint
	)}
	b := Flow{Table: 2, Priority: 5, Match: of.Match{Fields: []of.OXM{
		of.OXMMetadata(0x12),
		of.OXMIPv4Dst(net.IPv4(198, 18, 1, 0), net.CIDRMask(24, 32)),
		of.OXMEthType(0x0800),
	}}}
	if a.Key() != b.Key() {
		t.Fatalf("equivalent matches have different keys:\n %s\n %s", a.Key(), b.Key())
	}
	c := b
	c.Priority = 6
	if c.Key() == b.Key() {
		t.Fatal("priority not part of the key")
	}
	// tcp_flags as OVS returns it in OF1.3 (ONF experimenter OXM) is the same field.
	basic := of.OXMTCPFlags(0x02, 0x12)
	exp := basic
	exp.Class, exp.Experimenter = of.OXMClassExperimenter, of.ONFExperimenterID
	m1 := Flow{Match: of.NewMatch(of.OXMEthType(0x0800), of.OXMIPProto(6), basic)}
	m2 := Flow{Match: of.NewMatch(of.OXMEthType(0x0800), of.OXMIPProto(6), exp)}
	if m1.Key() != m2.Key() {
		t.Fatal("basic and ONF tcp_flags keys differ")
	}
	want := "table=2, priority=5,ip,metadata=0x12,nw_dst=198.18.1.0/24"
	if got := a.Key().String(); got != want {
		t.Errorf("Key().String() = %q, want %q", got, want)
	}
	// Instruction order and empty apply-actions do not change content.
	i1 := []of.Instruction{of.InstrGotoTable{TableID: 3}, apply(), of.InstrWriteMetadata{Metadata: 1, Mask: 1}}
	i2 := []of.Instruction{of.InstrWriteMetadata{Metadata: 1, Mask: 1}, of.InstrGotoTable{TableID: 3}}
	if canonicalInstructions(i1) != canonicalInstructions(i2) {
		t.Error("instruction order changes content")
	}
}

func TestUnencodableFlowNotRecorded(t *testing.T) {
	c, err := New(Config{Logger: quietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	sw := c.Switch(1)
	huge := of.NewOXM(of.OXMClassOpenFlowBasic, of.OXMFieldMetadata, make([]byte, 300), nil)
	err = sw.InstallFlows(context.Background(), Flow{Table: 1, Priority: 1, Match: of.NewMatch(huge)})
	if err == nil || len(sw.Flows()) != 0 {
		t.Fatalf("unencodable flow: err %v, %d recorded; want an error and nothing recorded", err, len(sw.Flows()))
	}
	badIns := []of.Instruction{apply(of.ActionSetField{Field: huge})}
	err = sw.InstallFlows(context.Background(), Flow{Table: 1, Priority: 1, Instructions: badIns})
	if err == nil || len(sw.Flows()) != 0 {
		t.Fatalf("unencodable instructions: err %v, %d recorded; want an error and nothing recorded", err, len(sw.Flows()))
	}
}

// TestResyncKeepsUnrecorded: flows Config.KeepUnrecorded names (learned flows) stay
// through Resync; other unrecorded flows are deleted as before.
func TestResyncKeepsUnrecorded(t *testing.T) {
	connected := make(chan struct{}, 4)
	learned := Flow{Table: 14, Priority: 100, Cookie: 0x0c00000000000007, Match: of.NewMatch(of.OXMInPort(5))}
	c, addr := startCtrl(t, Config{EchoInterval: time.Second, DeadTimeout: time.Second,
		OnConnect:      func(*Switch) { connected <- struct{}{} },
		KeepUnrecorded: func(f Flow) bool { return f.Table == 14 && f.Cookie>>56 == 0x0c }})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sw := c.Switch(43)
	if err := sw.InstallFlows(ctx, testFlows(2, 0x100, nil)...); err != nil {
		t.Fatal(err)
	}
	fs := dialFake(t, addr, 43, of.Version)
	select {
	case <-connected:
	case <-ctx.Done():
		t.Fatal("no connect")
	}
	stray := Flow{Table: 14, Priority: 100, Cookie: 0x0900000000000007, Match: of.NewMatch(of.OXMInPort(6))}
	fs.mu.Lock()
	fs.flows[learned.Key()] = of.FlowStats{TableID: 14, Priority: 100, Cookie: learned.Cookie, Match: learned.Match}
	fs.flows[stray.Key()] = of.FlowStats{TableID: 14, Priority: 100, Cookie: stray.Cookie, Match: stray.Match}
	fs.mu.Unlock()
	res, err := sw.Resync(ctx)
	if err != nil || res != (ResyncResult{FlowsDeleted: 1}) {
		t.Fatalf("Resync = %v, %v; want the stray flow deleted and nothing else", res, err)
	}
	fs.mu.Lock()
	_, kept := fs.flows[learned.Key()]
	_, strayLeft := fs.flows[stray.Key()]
	fs.mu.Unlock()
	if !kept || strayLeft {
		t.Errorf("after Resync: learned flow kept %v, stray flow left %v; want true, false", kept, strayLeft)
	}
}
