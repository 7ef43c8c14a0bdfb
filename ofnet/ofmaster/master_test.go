package ofmaster_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/ofnet/ofmaster"
	"github.com/contiv/netplugin/ofnet/ofrpc"
)

const (
	hostA = "127.0.0.2"
	hostB = "127.0.0.3"
	hostC = "127.0.0.4"
	hostD = "127.0.0.5"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// AddNode sends AddMaster with the advertised address; the agent's
// RegisterNode back makes it a registered agent.
func TestAddNodeRegistersAgent(t *testing.T) {
	m := startMaster(t, ofmaster.Config{LocalIP: "127.0.0.1"})
	a := startAgent(t, hostA)
	if err := m.AddNode(ctxT(t), a.node); err != nil {
		t.Fatal(err)
	}
	calls, _, _ := a.snapshot()
	_, port, _ := net.SplitHostPort(m.addr)
	want := ofrpc.AgentAddMaster + " 127.0.0.1:" + port
	if got := methods(calls); len(got) != 1 || got[0] != want {
		t.Fatalf("agent got %v, want [%s]", got, want)
	}
	st := m.State()
	if _, ok := st.AgentDb[a.node.Addr()]; !ok || st.MyAddr != "127.0.0.1" || fmt.Sprint(st.MyPort) != port {
		t.Fatalf("state after AddNode: %+v", st)
	}
	// An agent that is not there: AddNode fails, nothing registered.
	gone := ofrpc.OfnetNode{HostAddr: hostB, HostPort: 1}
	if err := m.AddNode(ctxT(t), gone); err == nil {
		t.Fatal("AddNode to a missing agent succeeded")
	}
	if _, ok := m.State().AgentDb[gone.Addr()]; ok {
		t.Fatal("missing agent registered")
	}
}

// A registering agent gets every endpoint not originated at its host, then
// every rule; a second registration replays again.
func TestRegistrationReplay(t *testing.T) {
	m := startMaster(t, ofmaster.Config{})
	for _, e := range []ofrpc.OfnetEndpoint{ep(hostA, 1, 1), ep(hostB, 2, 1), ep(hostA, 3, 1), ep(hostC, 4, 1)} {
		m.mustRPC(t, ofrpc.MasterEndpointAdd, e)
	}
	for _, r := range []ofrpc.OfnetPolicyRule{rule("r2", 2), rule("r1", 1)} {
		if err := m.AddRule(ctxT(t), r); err != nil {
			t.Fatal(err)
		}
	}
	a1 := startAgent(t, hostA)
	m.register(t, a1)
	a1.sync(m.Master, 1)
	calls, eps, rules := a1.snapshot()
	want := []string{
		ofrpc.AgentEndpointAdd + " 198.18.10.2:default",
		ofrpc.AgentEndpointAdd + " 198.18.10.4:default",
		ofrpc.PolicyAddRule + " r1",
		ofrpc.PolicyAddRule + " r2",
	}
	if got := methods(calls); !slices.Equal(got, want) {
		t.Fatalf("replay to a host-A agent:\n got %v\nwant %v", got, want)
	}
	if len(eps) != 2 || len(rules) != 2 {
		t.Fatalf("agent holds %d endpoints, %d rules", len(eps), len(rules))
	}
	m.register(t, a1)
	a1.sync(m.Master, 2)
	calls, _, _ = a1.snapshot()
	if got := methods(calls); !slices.Equal(got, append(want, want...)) {
		t.Fatalf("second registration:\n got %v\nwant %v", got, append(want, want...))
	}
}

// Endpoints go to every agent of every other host, never back to either
// agent of the originating host.
func TestEndpointFanOutExcludesOriginator(t *testing.T) {
	m := startMaster(t, ofmaster.Config{})
	a1, a2, b1, c1 := startAgent(t, hostA), startAgent(t, hostA), startAgent(t, hostB), startAgent(t, hostC)
	for _, a := range []*fakeAgent{a1, a2, b1, c1} {
		m.join(t, a)
	}
	m.mustRPC(t, ofrpc.MasterEndpointAdd, ep(hostA, 1, 1))
	m.mustRPC(t, ofrpc.MasterEndpointAdd, ep(hostB, 2, 1))
	m.mustRPC(t, ofrpc.MasterEndpointDel, ep(hostA, 1, 1))
	want := map[*fakeAgent][]string{
		a1: {ofrpc.AgentEndpointAdd + " 198.18.10.2:default"},
		a2: {ofrpc.AgentEndpointAdd + " 198.18.10.2:default"},
		b1: {ofrpc.AgentEndpointAdd + " 198.18.10.1:default", ofrpc.AgentEndpointDel + " 198.18.10.1:default"},
		c1: {ofrpc.AgentEndpointAdd + " 198.18.10.1:default", ofrpc.AgentEndpointAdd + " 198.18.10.2:default",
			ofrpc.AgentEndpointDel + " 198.18.10.1:default"},
	}
	for a, w := range want {
		a.sync(m.Master, 7)
		calls, _, _ := a.snapshot()
		if got := methods(calls); !slices.Equal(got, w) {
			t.Errorf("agent %s:\n got %v\nwant %v", a.node.Addr(), got, w)
		}
	}
}

// The newest timestamp wins for adds and deletes.
func TestTimestampPrecedence(t *testing.T) {
	m := startMaster(t, ofmaster.Config{})
	b := startAgent(t, hostB)
	m.join(t, b)
	steps := []struct {
		method string
		ep     ofrpc.OfnetEndpoint
	}{
		{ofrpc.MasterEndpointAdd, ep(hostA, 1, 2)},
		{ofrpc.MasterEndpointAdd, ep(hostA, 1, 1)}, // older: ignored
		{ofrpc.MasterEndpointAdd, ep(hostA, 1, 2)}, // same: ignored
		{ofrpc.MasterEndpointAdd, ep(hostA, 1, 3)}, // newer: forwarded
		{ofrpc.MasterEndpointDel, ep(hostA, 1, 2)}, // stored is newer: ignored
		{ofrpc.MasterEndpointDel, ep(hostA, 1, 3)}, // forwarded
		{ofrpc.MasterEndpointDel, ep(hostA, 1, 4)}, // unknown now: ignored
		{ofrpc.MasterEndpointDel, ep(hostA, 9, 4)}, // never known: ignored
	}
	for _, s := range steps {
		m.mustRPC(t, s.method, s.ep)
	}
	b.sync(m.Master, 1)
	calls, eps, _ := b.snapshot()
	var got []string
	for _, c := range calls {
		if e, ok := c.Arg.(ofrpc.OfnetEndpoint); ok {
			got = append(got, fmt.Sprintf("%s %s@%d", c.Method, e.EndpointID, int(e.Timestamp.Sub(epoch)/time.Second)))
		}
	}
	want := []string{
		ofrpc.AgentEndpointAdd + " 198.18.10.1:default@2",
		ofrpc.AgentEndpointAdd + " 198.18.10.1:default@3",
		ofrpc.AgentEndpointDel + " 198.18.10.1:default@3",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("agent got\n %v\nwant %v", got, want)
	}
	if len(eps) != 0 || len(m.State().EndpointDb) != 0 {
		t.Fatalf("endpoint left: agent %v, master %v", eps, m.State().EndpointDb)
	}
}

func TestRuleAddDel(t *testing.T) {
	m := startMaster(t, ofmaster.Config{})
	b := startAgent(t, hostB)
	m.join(t, b)
	ctx := ctxT(t)
	r := rule("t1:g1:t1:p1:r1:inRx", 5)
	if err := m.AddRule(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := m.AddRule(ctx, r); err != nil {
		t.Fatalf("identical re-add: %v", err)
	}
	changed := r
	changed.Action = "deny"
	err := m.AddRule(ctx, changed)
	if !errors.Is(err, ofmaster.ErrRuleExists) || !strings.Contains(err.Error(), "Rule already exists") {
		t.Fatalf("different rule, same id: %v", err)
	}
	err = m.DelRule(ctx, ofrpc.OfnetPolicyRule{RuleId: "nope"})
	if !errors.Is(err, ofmaster.ErrRuleNotFound) || !strings.Contains(err.Error(), "Rule does not exist") {
		t.Fatalf("delete of an unknown rule: %v", err)
	}
	if err := m.AddRule(ctx, ofrpc.OfnetPolicyRule{}); !errors.Is(err, ofmaster.ErrInvalid) {
		t.Fatalf("rule without id: %v", err)
	}
	// Fail closed: a rule naming a group it has no id for is neither
	// stored nor sent (the agent's calls below are r's only).
	for _, action := range []string{"allow", "deny"} {
		bad := rule("t1:g1:t1:p1:r2:inRx", 6)
		bad.Action, bad.SrcEndpointGroup, bad.SrcEndpointGroupName = action, 0, "t1:g9"
		if err := m.AddRule(ctx, bad); !errors.Is(err, ofmaster.ErrInvalid) || !errors.Is(err, ofrpc.ErrGroupUnresolved) {
			t.Fatalf("%s rule with an unresolved group: %v", action, err)
		}
		if _, ok := m.Rule(bad.RuleId); ok {
			t.Fatalf("%s rule with an unresolved group stored", action)
		}
	}
	if got, ok := m.Rule(r.RuleId); !ok || got != r {
		t.Fatalf("Rule(%q) = %+v, %v", r.RuleId, got, ok)
	}
	// Delete by id only: the agent gets the stored rule.
	if err := m.DelRule(ctx, ofrpc.OfnetPolicyRule{RuleId: r.RuleId}); err != nil {
		t.Fatal(err)
	}
	b.sync(m.Master, 1)
	calls, _, rules := b.snapshot()
	if got := methods(calls); !slices.Equal(got, []string{ofrpc.PolicyAddRule + " " + r.RuleId, ofrpc.PolicyDelRule + " " + r.RuleId}) {
		t.Fatalf("agent got %v", got)
	}
	for _, c := range calls {
		if c.Method == ofrpc.PolicyDelRule && c.Arg != r {
			t.Fatalf("DelRule carried %+v, want the stored %+v", c.Arg, r)
		}
	}
	if len(rules) != 0 || len(m.State().PolicyDb) != 0 {
		t.Fatalf("rules left: agent %v, master %v", rules, m.State().PolicyDb)
	}
}

// An agent that hangs (accepts, never answers) or went away delays nobody
// else.
func TestStuckAgentDoesNotBlockOthers(t *testing.T) {
	m := startMaster(t, ofmaster.Config{CallTimeout: time.Minute})
	hung, err := net.Listen("tcp", hostD+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer hung.Close()
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := hung.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	gone := startAgent(t, hostC)
	b := startAgent(t, hostB)
	m.register(t, gone)
	m.register(t, b)
	m.mustRPC(t, ofrpc.MasterRegisterNode, ofrpc.OfnetNode{HostAddr: hostD, HostPort: uint16(hung.Addr().(*net.TCPAddr).Port)})
	gone.stop()
	const n = 50
	for i := 1; i <= n; i++ {
		m.mustRPC(t, ofrpc.MasterEndpointAdd, ep(hostA, i, 1))
	}
	if err := m.AddRule(ctxT(t), rule("r1", 1)); err != nil {
		t.Fatal(err)
	}
	b.waitFor("all endpoints and the rule", func(_ []call, eps map[string]ofrpc.OfnetEndpoint, rules map[string]ofrpc.OfnetPolicyRule) bool {
		return len(eps) == n && len(rules) == 1
	})
	st := m.State()
	hungKey := net.JoinHostPort(hostD, fmt.Sprint(hung.Addr().(*net.TCPAddr).Port))
	if st.AgentStats[hungKey].Queued == 0 {
		t.Fatalf("the hung agent's queue is empty: %+v", st.AgentStats[hungKey])
	}
}

// ClearNode deletes a host's endpoints and tells the other hosts.
func TestClearNode(t *testing.T) {
	m := startMaster(t, ofmaster.Config{})
	a1, b1, c1 := startAgent(t, hostA), startAgent(t, hostB), startAgent(t, hostC)
	for _, a := range []*fakeAgent{a1, b1, c1} {
		m.register(t, a)
	}
	m.mustRPC(t, ofrpc.MasterEndpointAdd, ep(hostA, 1, 1))
	m.mustRPC(t, ofrpc.MasterEndpointAdd, ep(hostA, 2, 1))
	m.mustRPC(t, ofrpc.MasterEndpointAdd, ep(hostB, 3, 1))
	if err := m.ClearNode(ctxT(t), hostA); err != nil {
		t.Fatal(err)
	}
	for _, a := range []*fakeAgent{b1, c1} {
		a.sync(m.Master, 1)
		_, eps, _ := a.snapshot()
		for id, e := range eps {
			if e.OriginatorIp.String() == hostA {
				t.Errorf("agent %s still has %s of the cleared host", a.node.Addr(), id)
			}
		}
	}
	a1.sync(m.Master, 1)
	calls, _, _ := a1.snapshot()
	if got := methods(calls); !slices.Equal(got, []string{ofrpc.AgentEndpointAdd + " 198.18.10.3:default"}) {
		t.Fatalf("the cleared host's agent got %v", got)
	}
	if db := m.State().EndpointDb; len(db) != 1 || db["198.18.10.3:default"].EndpointID == "" {
		t.Fatalf("master endpoints after ClearNode: %v", db)
	}
}

func TestUnRegisterNode(t *testing.T) {
	m := startMaster(t, ofmaster.Config{})
	a, b := startAgent(t, hostA), startAgent(t, hostB)
	m.register(t, a)
	m.register(t, b)
	m.mustRPC(t, ofrpc.MasterUnRegisterNode, a.node)
	m.mustRPC(t, ofrpc.MasterEndpointAdd, ep(hostC, 1, 1))
	b.sync(m.Master, 1)
	calls, _, _ := a.snapshot()
	if len(calls) != 0 {
		t.Fatalf("unregistered agent got %v", methods(calls))
	}
	if _, ok := m.State().AgentDb[a.node.Addr()]; ok {
		t.Fatal("agent still listed")
	}
	m.RemoveNode(b.node)
	m.RemoveNode(b.node) // twice: no-op
	if len(m.State().AgentDb) != 0 {
		t.Fatalf("agents left: %v", m.State().AgentDb)
	}
}

// A backlog beyond QueueLen is replaced by a replay: the agent still ends
// with the master's state.
func TestQueueOverflowReplays(t *testing.T) {
	m := startMaster(t, ofmaster.Config{QueueLen: 3})
	b := startAgent(t, hostB)
	gate := make(chan struct{})
	b.mu.Lock()
	b.gate = gate
	b.mu.Unlock()
	m.mustRPC(t, ofrpc.MasterEndpointAdd, ep(hostA, 100, 1)) // the replay's first call will block on the gate
	m.register(t, b)
	for i := 1; i <= 20; i++ {
		m.mustRPC(t, ofrpc.MasterEndpointAdd, ep(hostA, i, 1))
	}
	for i := 1; i <= 20; i += 2 {
		m.mustRPC(t, ofrpc.MasterEndpointDel, ep(hostA, i, 1))
	}
	b.mu.Lock()
	b.gate = nil
	b.mu.Unlock()
	close(gate)
	// (A GARP marker could itself be dropped by an overflow: wait for the
	// state instead.)
	want := m.State().EndpointDb
	if len(want) != 11 {
		t.Fatalf("master holds %d endpoints, want 11", len(want))
	}
	b.waitFor("the master's endpoints", func(_ []call, eps map[string]ofrpc.OfnetEndpoint, _ map[string]ofrpc.OfnetPolicyRule) bool {
		return sameEndpoints(eps, want)
	})
	if s := m.State().AgentStats[b.node.Addr()]; s.Resyncs < 2 {
		t.Fatalf("want a registration replay and an overflow replay, stats %+v", s)
	}
}

// An agent that was unreachable gets a full replay once it answers again.
func TestUnreachableAgentGetsReplay(t *testing.T) {
	m := startMaster(t, ofmaster.Config{})
	b := startAgent(t, hostB)
	m.register(t, b)
	m.mustRPC(t, ofrpc.MasterEndpointAdd, ep(hostA, 1, 1))
	b.sync(m.Master, 1)
	b.stop()
	m.mustRPC(t, ofrpc.MasterEndpointAdd, ep(hostA, 2, 1))
	if err := m.AddRule(ctxT(t), rule("r1", 1)); err != nil {
		t.Fatal(err)
	}
	// (A replay sends endpoints as EndpointAddBatch: any method counts.)
	waitState(t, m, "a failed call to the stopped agent", func(st ofmaster.State) bool {
		return failedCalls(st.AgentStats[b.node.Addr()]) > 0
	})
	b.restart(t)
	b.waitFor("the replayed state", func(_ []call, eps map[string]ofrpc.OfnetEndpoint, rules map[string]ofrpc.OfnetPolicyRule) bool {
		return len(eps) == 2 && len(rules) == 1
	})
	if s := m.State().AgentStats[b.node.Addr()]; failedCalls(s) == 0 || s.Resyncs < 2 {
		t.Fatalf("stats do not show the failure and the replay: %+v", s)
	}
}

func failedCalls(s ofmaster.AgentStats) uint64 {
	var n uint64
	for _, v := range s.Failed {
		n += v
	}
	return n
}

func TestRejectsBadArguments(t *testing.T) {
	m := startMaster(t, ofmaster.Config{})
	var re *ofrpc.RemoteError
	for _, c := range []struct {
		method string
		arg    any
	}{
		{ofrpc.MasterRegisterNode, ofrpc.OfnetNode{HostAddr: "", HostPort: 9002}},
		{ofrpc.MasterRegisterNode, ofrpc.OfnetNode{HostAddr: hostA}},
		{ofrpc.MasterEndpointAdd, ofrpc.OfnetEndpoint{OriginatorIp: net.ParseIP(hostA)}},
		{ofrpc.MasterEndpointAdd, ofrpc.OfnetEndpoint{EndpointID: "198.18.10.1:default"}},
		{ofrpc.MasterEndpointDel, ofrpc.OfnetEndpoint{}},
	} {
		if err := m.rpc(t, c.method, c.arg); !errors.As(err, &re) || !strings.Contains(re.Msg, "invalid argument") {
			t.Errorf("%s %+v: want an invalid-argument error, got %v", c.method, c.arg, err)
		}
	}
	if st := m.State(); len(st.AgentDb)+len(st.EndpointDb) != 0 {
		t.Fatalf("bad input changed the state: %+v", st)
	}
	if err := m.ClearNode(ctxT(t), ""); !errors.Is(err, ofmaster.ErrInvalid) {
		t.Fatalf("ClearNode(\"\"): %v", err)
	}
}

// The /debug/ofnet dump has the original's keys.
func TestStateJSON(t *testing.T) {
	m := startMaster(t, ofmaster.Config{LocalIP: "127.0.0.1", Port: 9001})
	b := startAgent(t, hostB)
	m.register(t, b)
	m.mustRPC(t, ofrpc.MasterEndpointAdd, ep(hostA, 1, 1))
	if err := m.AddRule(ctxT(t), rule("r1", 1)); err != nil {
		t.Fatal(err)
	}
	b.sync(m.Master, 1)
	raw, err := json.Marshal(m.State())
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range top {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"AgentDb", "AgentStats", "EndpointDb", "MyAddr", "MyPort", "PolicyDb"}; !slices.Equal(keys, want) {
		t.Fatalf("keys %v, want %v", keys, want)
	}
	var st ofmaster.State
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	if st.MyAddr != "127.0.0.1" || st.MyPort != 9001 || st.AgentDb[b.node.Addr()] != b.node ||
		st.PolicyDb["r1"] != rule("r1", 1) || st.EndpointDb["198.18.10.1:default"].Vni != 5000 {
		t.Fatalf("decoded dump: %+v", st)
	}
	if s := st.AgentStats[b.node.Addr()]; s.Sent[ofrpc.AgentEndpointAdd] != 1 || s.Sent[ofrpc.PolicyAddRule] != 1 {
		t.Fatalf("agent stats: %+v", s)
	}
}

// Serve stops senders stuck on a hung agent and closes its port.
func TestServeStops(t *testing.T) {
	m := startMaster(t, ofmaster.Config{})
	b := startAgent(t, hostB)
	m.register(t, b)
	m.stop(t)
	if c, err := net.Dial("tcp", m.addr); err == nil {
		c.Close()
		t.Fatal("master port still open")
	}
	if err := m.AddRule(ctxT(t), rule("r1", 1)); err != nil {
		t.Fatalf("AddRule after stop: %v", err)
	}
	if got := m.State().AgentDb; len(got) != 0 {
		t.Fatalf("agents after stop: %v", got)
	}
}

func sameEndpoints(a, b map[string]ofrpc.OfnetEndpoint) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || !reflect.DeepEqual(v.IpAddr.To16(), w.IpAddr.To16()) || !v.Timestamp.Equal(w.Timestamp) {
			return false
		}
	}
	return true
}

// waitState polls the master's state until cond holds (bounded).
func waitState(t *testing.T, m *runningMaster, what string, cond func(ofmaster.State) bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond(m.State()) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; state %+v", what, m.State())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A replay sends only what the master holds, so deletions dropped with an
// overflowing backlog must still reach an agent that got the deleted
// endpoints from an earlier replay (the cause of TestQueueOverflowReplays
// failing under load: its registration replay started late and carried
// endpoints deleted afterwards).
func TestOverflowKeepsDeletions(t *testing.T) {
	m := startMaster(t, ofmaster.Config{QueueLen: 3})
	b := startAgent(t, hostB)
	for i := 1; i <= 20; i++ {
		m.mustRPC(t, ofrpc.MasterEndpointAdd, ep(hostA, i, 1))
	}
	if err := m.AddRule(ctxT(t), rule("r1", 1)); err != nil {
		t.Fatal(err)
	}
	if err := m.AddRule(ctxT(t), rule("r2", 2)); err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	b.mu.Lock()
	b.gate = gate
	b.mu.Unlock()
	m.register(t, b) // its replay holds all 20 endpoints and blocks on the first
	waitState(t, m, "the replay to start", func(st ofmaster.State) bool {
		return st.AgentStats[b.node.Addr()].Queued == 0
	})
	for i := 1; i <= 20; i += 2 {
		m.mustRPC(t, ofrpc.MasterEndpointDel, ep(hostA, i, 1))
	}
	if err := m.DelRule(ctxT(t), rule("r1", 1)); err != nil {
		t.Fatal(err)
	}
	// Deleted and added again: the kept deletion goes first, the replay adds it back.
	m.mustRPC(t, ofrpc.MasterEndpointAdd, ep(hostA, 3, 2))
	if s := m.State().AgentStats[b.node.Addr()]; s.KeptDeletions == 0 {
		t.Fatalf("the overflow kept no deletion: %+v", s)
	}
	b.mu.Lock()
	b.gate = nil
	b.mu.Unlock()
	close(gate)
	want := m.State().EndpointDb
	if len(want) != 11 {
		t.Fatalf("master holds %d endpoints, want 11", len(want))
	}
	b.waitFor("the master's endpoints and rules", func(_ []call, eps map[string]ofrpc.OfnetEndpoint, rules map[string]ofrpc.OfnetPolicyRule) bool {
		_, r2 := rules["r2"]
		return sameEndpoints(eps, want) && len(rules) == 1 && r2
	})
	waitState(t, m, "the kept deletions to be sent", func(st ofmaster.State) bool {
		return st.AgentStats[b.node.Addr()].KeptDeletions == 0
	})
}

// An agent that keeps its state across a spell of unreachability (a
// network fault, not a restart) gets the deletions it missed.
func TestUnreachableAgentGetsDeletions(t *testing.T) {
	m := startMaster(t, ofmaster.Config{})
	b := startAgent(t, hostB)
	m.register(t, b)
	m.mustRPC(t, ofrpc.MasterEndpointAdd, ep(hostA, 1, 1))
	m.mustRPC(t, ofrpc.MasterEndpointAdd, ep(hostA, 2, 1))
	b.sync(m.Master, 1)
	b.stop()
	m.mustRPC(t, ofrpc.MasterEndpointDel, ep(hostA, 1, 1))
	waitState(t, m, "the failed deletion to be kept", func(st ofmaster.State) bool {
		s := st.AgentStats[b.node.Addr()]
		return s.Failed[ofrpc.AgentEndpointDel] > 0 && s.KeptDeletions == 1
	})
	b.restart(t)
	m.register(t, b)
	b.waitFor("the deletion", func(_ []call, eps map[string]ofrpc.OfnetEndpoint, _ map[string]ofrpc.OfnetPolicyRule) bool {
		_, ok := eps[ep(hostA, 2, 1).EndpointID]
		return len(eps) == 1 && ok
	})
}

// TestEndpointSync: an agent's complete set deletes (and withdraws from
// the other hosts) the endpoints it originated that the set leaves out;
// it keeps endpoints pushed after the set was taken, those of the host's
// other agent (another port) and those of agents that send no port.
func TestEndpointSync(t *testing.T) {
	m := startMaster(t, ofmaster.Config{})
	a1, b1 := startAgent(t, hostA), startAgent(t, hostB)
	for _, a := range []*fakeAgent{a1, b1} {
		m.register(t, a)
	}
	mine := func(n, ts int, port uint16) ofrpc.OfnetEndpoint {
		e := ep(hostA, n, ts)
		e.OriginatorPort = port
		return e
	}
	port := a1.node.HostPort
	m.mustRPC(t, ofrpc.MasterEndpointAdd, mine(1, 1, port))   // listed: kept
	m.mustRPC(t, ofrpc.MasterEndpointAdd, mine(2, 1, port))   // missed deletion: dropped
	m.mustRPC(t, ofrpc.MasterEndpointAdd, mine(3, 9, port))   // newer than the set: kept
	m.mustRPC(t, ofrpc.MasterEndpointAdd, mine(4, 1, port+1)) // the host's other agent: kept
	m.mustRPC(t, ofrpc.MasterEndpointAdd, mine(5, 1, 0))      // no port (upstream agent): kept
	m.mustRPC(t, ofrpc.MasterEndpointAdd, ep(hostB, 6, 1))    // another host: kept
	m.mustRPC(t, ofrpc.MasterEndpointSync, ofrpc.OfnetEndpointSync{Node: a1.node,
		EndpointIDs: []string{"198.18.10.1:default"}, Timestamp: epoch.Add(5 * time.Second)})

	db := m.State().EndpointDb
	var ids []string
	for id := range db {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	want := []string{"198.18.10.1:default", "198.18.10.3:default", "198.18.10.4:default", "198.18.10.5:default", "198.18.10.6:default"}
	if !slices.Equal(ids, want) {
		t.Fatalf("master endpoints after the sync: %v, want %v", ids, want)
	}
	b1.waitFor("the dropped endpoint's deletion", func(_ []call, eps map[string]ofrpc.OfnetEndpoint, _ map[string]ofrpc.OfnetPolicyRule) bool {
		_, ok := eps["198.18.10.2:default"]
		_, one := eps["198.18.10.1:default"]
		return !ok && one
	})
	if err := m.rpc(t, ofrpc.MasterEndpointSync, ofrpc.OfnetEndpointSync{Node: ofrpc.OfnetNode{HostAddr: hostA}}); err == nil {
		t.Fatal("a sync without the agent's port was taken")
	}
}
