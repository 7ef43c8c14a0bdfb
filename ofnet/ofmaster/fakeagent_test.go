package ofmaster_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/ofnet/ofmaster"
	"github.com/contiv/netplugin/ofnet/ofrpc"
)

// call is one RPC a fake agent received.
type call struct {
	Method string
	Arg    any
}

// fakeAgent is an in-test ofnet agent: it serves OfnetAgent and
// PolicyAgent, records every call, keeps endpoints and rules the way a
// real agent does (timestamp de-dup, rule identity) and answers AddMaster
// by registering with the master, as the real agent does.
type fakeAgent struct {
	t    *testing.T
	node ofrpc.OfnetNode
	pool *ofrpc.Pool

	mu      sync.Mutex
	calls   []call
	eps     map[string]ofrpc.OfnetEndpoint
	rules   map[string]ofrpc.OfnetPolicyRule
	gate    chan struct{} // when set, EndpointAdd waits for it to close
	changed chan struct{}
	// refuse makes the agent's methods fail for an endpoint or rule id
	// this many more times (as a real agent whose switch is down).
	refuse map[string]int
	// batches records the size of each EndpointAddBatch call; the
	// method exists only when batch is set (batchAgentSvc).
	batch   bool
	batches []int

	cancel context.CancelFunc
	done   chan error
}

// startBatchAgent is startAgent for an agent with EndpointAddBatch.
func startBatchAgent(t *testing.T, ip string) *fakeAgent {
	return startAgentOpt(t, ip, true)
}

// startAgent serves a fake agent (without EndpointAddBatch, as an older
// agent) on ip (a loopback address) and a free port; it is stopped at
// cleanup.
func startAgent(t *testing.T, ip string) *fakeAgent {
	return startAgentOpt(t, ip, false)
}

func startAgentOpt(t *testing.T, ip string, batch bool) *fakeAgent {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatalf("listen on %s: %v", ip, err)
	}
	a := &fakeAgent{t: t, node: ofrpc.OfnetNode{HostAddr: ip, HostPort: uint16(ln.Addr().(*net.TCPAddr).Port)},
		pool: ofrpc.NewPool(ofrpc.WithDialAttempts(2), ofrpc.WithDialInterval(10*time.Millisecond)),
		eps:  map[string]ofrpc.OfnetEndpoint{}, rules: map[string]ofrpc.OfnetPolicyRule{},
		changed: make(chan struct{}, 1), refuse: map[string]int{}, batch: batch}
	a.serve(ln)
	t.Cleanup(func() {
		a.stop()
		a.pool.Close()
	})
	return a
}

func (a *fakeAgent) serve(ln net.Listener) {
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel, a.done = cancel, make(chan error, 1)
	var svc any = &agentSvc{a}
	if a.batch {
		svc = &batchAgentSvc{agentSvc{a}}
	}
	go func() {
		a.done <- ofrpc.Serve(ctx, ln, map[string]any{
			ofrpc.ServiceAgent:  svc,
			ofrpc.ServicePolicy: &policySvc{a},
		})
	}()
}

// stop shuts the agent's server down (idempotent).
func (a *fakeAgent) stop() {
	if a.cancel == nil {
		return
	}
	a.cancel()
	a.cancel = nil
	a.mu.Lock()
	if a.gate != nil {
		close(a.gate)
		a.gate = nil
	}
	a.mu.Unlock()
	if err := <-a.done; err != nil {
		a.t.Errorf("agent %s: Serve: %v", a.node.Addr(), err)
	}
}

// restart serves again on the same address.
func (a *fakeAgent) restart(t *testing.T) {
	ln, err := net.Listen("tcp", a.node.Addr())
	if err != nil {
		t.Fatalf("listen again on %s: %v", a.node.Addr(), err)
	}
	a.serve(ln)
}

func (a *fakeAgent) record(method string, arg any) {
	a.calls = append(a.calls, call{method, arg})
	select {
	case a.changed <- struct{}{}:
	default:
	}
}

// snapshot returns copies of what the agent has received.
func (a *fakeAgent) snapshot() ([]call, map[string]ofrpc.OfnetEndpoint, map[string]ofrpc.OfnetPolicyRule) {
	a.mu.Lock()
	defer a.mu.Unlock()
	eps := map[string]ofrpc.OfnetEndpoint{}
	for k, v := range a.eps {
		eps[k] = v
	}
	rules := map[string]ofrpc.OfnetPolicyRule{}
	for k, v := range a.rules {
		rules[k] = v
	}
	return append([]call(nil), a.calls...), eps, rules
}

// waitFor waits (bounded) until cond holds on the agent's state.
func (a *fakeAgent) waitFor(what string, cond func(calls []call, eps map[string]ofrpc.OfnetEndpoint, rules map[string]ofrpc.OfnetPolicyRule) bool) {
	a.t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		calls, eps, rules := a.snapshot()
		if cond(calls, eps, rules) {
			return
		}
		select {
		case <-a.changed:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			a.t.Fatalf("agent %s: timed out waiting for %s; calls:\n%s", a.node.Addr(), what, dumpCalls(calls))
		}
	}
}

// sync sends a GARP marker through the master and waits until this agent
// got it: everything queued for the agent before it has been delivered.
func (a *fakeAgent) sync(m *ofmaster.Master, marker int) {
	a.t.Helper()
	m.InjectGARPs(context.Background(), marker)
	a.waitFor(fmt.Sprintf("marker %d", marker), func(calls []call, _ map[string]ofrpc.OfnetEndpoint, _ map[string]ofrpc.OfnetPolicyRule) bool {
		for _, c := range calls {
			if c.Method == ofrpc.AgentInjectGARPs && c.Arg == marker {
				return true
			}
		}
		return false
	})
}

// methods lists the calls' methods and ids, without markers.
func methods(calls []call) []string {
	var out []string
	for _, c := range calls {
		switch v := c.Arg.(type) {
		case ofrpc.OfnetEndpoint:
			out = append(out, c.Method+" "+v.EndpointID)
		case ofrpc.OfnetPolicyRule:
			out = append(out, c.Method+" "+v.RuleId)
		case ofrpc.OfnetNode:
			out = append(out, c.Method+" "+v.Addr())
		case int:
			// GARP markers
		default:
			out = append(out, c.Method)
		}
	}
	return out
}

func dumpCalls(calls []call) string {
	s := ""
	for _, c := range calls {
		s += fmt.Sprintf("  %s %+v\n", c.Method, c.Arg)
	}
	return s
}

type agentSvc struct{ a *fakeAgent }

func (s *agentSvc) AddMaster(n ofrpc.OfnetNode, reply *bool) error {
	a := s.a
	a.mu.Lock()
	a.record(ofrpc.AgentAddMaster, n)
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ok bool
	if err := a.pool.Call(ctx, n.Addr(), ofrpc.MasterRegisterNode, a.node, &ok); err != nil {
		return fmt.Errorf("register with %s: %w", n.Addr(), err)
	}
	*reply = true
	return nil
}

// refusedLocked reports (and counts down) a refusal for id.
func (a *fakeAgent) refusedLocked(id string) error {
	if a.refuse[id] <= 0 {
		return nil
	}
	a.refuse[id]--
	return fmt.Errorf("switch not connected (%s)", id)
}

func (s *agentSvc) EndpointAdd(ep ofrpc.OfnetEndpoint, reply *bool) error {
	a := s.a
	a.mu.Lock()
	gate := a.gate
	a.mu.Unlock()
	if gate != nil {
		<-gate
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.record(ofrpc.AgentEndpointAdd, ep)
	if err := a.refusedLocked(ep.EndpointID); err != nil {
		return err
	}
	a.addLocked(ep)
	*reply = true
	return nil
}

func (a *fakeAgent) addLocked(ep ofrpc.OfnetEndpoint) {
	if old, ok := a.eps[ep.EndpointID]; !ok || old.Timestamp.Before(ep.Timestamp) {
		a.eps[ep.EndpointID] = ep
	}
}

func (s *agentSvc) EndpointDel(ep ofrpc.OfnetEndpoint, reply *bool) error {
	a := s.a
	a.mu.Lock()
	defer a.mu.Unlock()
	a.record(ofrpc.AgentEndpointDel, ep)
	if err := a.refusedLocked(ep.EndpointID); err != nil {
		return err
	}
	delete(a.eps, ep.EndpointID)
	*reply = true
	return nil
}

// batchAgentSvc is an agent with EndpointAddBatch.
type batchAgentSvc struct{ agentSvc }

// EndpointAddBatch records each endpoint as an EndpointAdd call (so call
// sequences compare with those of an agent without batches) and the
// batch's size.
func (s *batchAgentSvc) EndpointAddBatch(b ofrpc.OfnetEndpointBatch, reply *ofrpc.OfnetBatchReply) error {
	a := s.a
	a.mu.Lock()
	gate := a.gate
	a.mu.Unlock()
	if gate != nil {
		<-gate
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.batches = append(a.batches, len(b.Endpoints))
	for _, ep := range b.Endpoints {
		a.record(ofrpc.AgentEndpointAdd, ep)
		if err := a.refusedLocked(ep.EndpointID); err != nil {
			reply.Failed = append(reply.Failed, ofrpc.OfnetBatchFailure{EndpointID: ep.EndpointID, Error: err.Error()})
			continue
		}
		a.addLocked(ep)
	}
	return nil
}

func (s *agentSvc) InjectGARPs(epg int, reply *bool) error {
	a := s.a
	a.mu.Lock()
	defer a.mu.Unlock()
	a.record(ofrpc.AgentInjectGARPs, epg)
	*reply = true
	return nil
}

func (s *agentSvc) DummyRpc(arg string, reply *bool) error {
	*reply = true
	return nil
}

type policySvc struct{ a *fakeAgent }

func (s *policySvc) AddRule(r ofrpc.OfnetPolicyRule, reply *bool) error {
	a := s.a
	a.mu.Lock()
	defer a.mu.Unlock()
	a.record(ofrpc.PolicyAddRule, r)
	if err := a.refusedLocked(r.RuleId); err != nil {
		return err
	}
	if old, ok := a.rules[r.RuleId]; ok && old != r {
		return errors.New("Rule already exists")
	}
	a.rules[r.RuleId] = r
	*reply = true
	return nil
}

func (s *policySvc) DelRule(r ofrpc.OfnetPolicyRule, reply *bool) error {
	a := s.a
	a.mu.Lock()
	defer a.mu.Unlock()
	a.record(ofrpc.PolicyDelRule, r)
	if err := a.refusedLocked(r.RuleId); err != nil {
		return err
	}
	if _, ok := a.rules[r.RuleId]; !ok {
		return errors.New("Rule does not exist")
	}
	delete(a.rules, r.RuleId)
	*reply = true
	return nil
}

// runningMaster is a master serving on loopback.
type runningMaster struct {
	*ofmaster.Master
	addr       string
	pool       *ofrpc.Pool // the test's client to the master (what agents push with)
	cancel     context.CancelFunc
	done       chan error
	registered int // registrations so far (their sync markers)
}

func quietLog() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

func startMaster(t *testing.T, cfg ofmaster.Config) *runningMaster {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Logger == nil {
		cfg.Logger = quietLog()
	}
	if cfg.Pool == nil {
		p := ofrpc.NewPool(ofrpc.WithDialAttempts(2), ofrpc.WithDialInterval(10*time.Millisecond))
		t.Cleanup(func() { p.Close() })
		cfg.Pool = p
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &runningMaster{Master: ofmaster.New(cfg), addr: ln.Addr().String(), pool: ofrpc.NewPool(),
		cancel: cancel, done: make(chan error, 1)}
	go func() { m.done <- m.Serve(ctx, ln) }()
	t.Cleanup(func() {
		m.stop(t)
		m.pool.Close()
	})
	waitState(t, m, "Serve to start", func(st ofmaster.State) bool { return st.MyPort != 0 })
	return m
}

func (m *runningMaster) stop(t *testing.T) {
	if m.cancel == nil {
		return
	}
	m.cancel()
	m.cancel = nil
	select {
	case err := <-m.done:
		if err != nil {
			t.Errorf("master Serve: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("master Serve did not return after its context ended")
	}
}

// rpc calls the master as an agent would.
func (m *runningMaster) rpc(t *testing.T, method string, arg any) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ok bool
	return m.pool.Call(ctx, m.addr, method, arg, &ok)
}

func (m *runningMaster) mustRPC(t *testing.T, method string, arg any) {
	t.Helper()
	if err := m.rpc(t, method, arg); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
}

// register registers the agent directly (as the agent does after AddMaster).
func (m *runningMaster) register(t *testing.T, a *fakeAgent) {
	t.Helper()
	m.mustRPC(t, ofrpc.MasterRegisterNode, a.node)
}

// join registers a and waits until the replay of that registration reached
// it. A call queued before the replay is sent is also in the replay, so a
// test asserting the exact calls of its later steps waits for the replay
// first (the duplicate is harmless to a real agent: adds are idempotent).
func (m *runningMaster) join(t *testing.T, a *fakeAgent) {
	t.Helper()
	m.register(t, a)
	m.registered++
	a.sync(m.Master, registerMarker+m.registered)
}

// registerMarker starts the GARP markers register uses; tests use small ones.
const registerMarker = 1 << 20

var epoch = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

// ep is endpoint n of the host at origin, with timestamp epoch+ts seconds.
func ep(origin string, n int, ts int) ofrpc.OfnetEndpoint {
	ip := net.IPv4(198, 18, 10, byte(n)).To4()
	return ofrpc.OfnetEndpoint{
		EndpointID: ip.String() + ":default", EndpointType: ofrpc.EndpointTypeInternal, EndpointGroup: 3,
		IpAddr: ip, IpMask: net.IPv4(255, 255, 255, 255).To4(), Vrf: "default",
		MacAddrStr: fmt.Sprintf("02:02:c6:12:0a:%02x", n), Vlan: 100, Vni: 5000,
		OriginatorIp: net.ParseIP(origin).To4(), Timestamp: epoch.Add(time.Duration(ts) * time.Second),
	}
}

func rule(id string, prio int) ofrpc.OfnetPolicyRule {
	return ofrpc.OfnetPolicyRule{RuleId: id, Priority: prio, DstEndpointGroup: 3, IpProtocol: 6, DstPort: 80, Action: "allow"}
}
