package master_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/contiv/netplugin/netmaster/master"
	"github.com/contiv/netplugin/netmaster/master/mastertest"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/objdbtest"
	"github.com/contiv/netplugin/ofnet/ofmaster"
	"github.com/contiv/netplugin/ofnet/ofrpc"
	"github.com/contiv/netplugin/state"
)

// ofAgent is an in-test ofnet agent: it records the calls it gets and
// registers back with a master that sends it AddMaster, as a real agent.
type ofAgent struct {
	t    *testing.T
	id   ofrpc.OfnetNode // identity it registers with (its VTEP IP)
	pool *ofrpc.Pool

	mu    sync.Mutex
	calls []string // "Method id"
	eps   map[string]ofrpc.OfnetEndpoint
	rules map[string]ofrpc.OfnetPolicyRule
	stops []context.CancelFunc
	dones []chan error
}

// startOfAgent serves an agent on each of ips (one port, free on all) and
// registers it with the first.
func startOfAgent(t *testing.T, ips ...string) *ofAgent {
	t.Helper()
	a := &ofAgent{t: t, pool: ofrpc.NewPool(ofrpc.WithDialAttempts(3), ofrpc.WithDialInterval(20*time.Millisecond)),
		eps: map[string]ofrpc.OfnetEndpoint{}, rules: map[string]ofrpc.OfnetPolicyRule{}}
	t.Cleanup(func() {
		for _, stop := range a.stops {
			stop()
		}
		for _, d := range a.dones {
			<-d
		}
		a.pool.Close()
	})
	port := 0
	for attempt := 0; ; attempt++ {
		lns, err := mastertest.ListenAll(ips, port)
		if err == nil {
			for _, ln := range lns {
				a.serve(ln)
			}
			a.id = ofrpc.OfnetNode{HostAddr: ips[0], HostPort: uint16(lns[0].Addr().(*net.TCPAddr).Port)}
			return a
		}
		if attempt == 20 {
			t.Fatalf("listen on %v: %v", ips, err)
		}
	}
}

func (a *ofAgent) serve(ln net.Listener) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	a.stops, a.dones = append(a.stops, cancel), append(a.dones, done)
	go func() {
		done <- ofrpc.Serve(ctx, ln, map[string]any{ofrpc.ServiceAgent: &ofAgentSvc{a}, ofrpc.ServicePolicy: &ofPolicySvc{a}})
	}()
}

func (a *ofAgent) record(s string) {
	a.mu.Lock()
	a.calls = append(a.calls, s)
	a.mu.Unlock()
}

func (a *ofAgent) count(s string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, c := range a.calls {
		if c == s {
			n++
		}
	}
	return n
}

// waitCall waits until the agent got call s at least n times.
func (a *ofAgent) waitCall(s string, n int) {
	a.t.Helper()
	waitUntil(a.t, fmt.Sprintf("%s ×%d at agent %s", s, n, a.id.Addr()), func() bool { return a.count(s) >= n }, func() string {
		a.mu.Lock()
		defer a.mu.Unlock()
		return fmt.Sprint(a.calls)
	})
}

func (a *ofAgent) ruleIDs() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var ids []string
	for id := range a.rules {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (a *ofAgent) rule(id string) ofrpc.OfnetPolicyRule {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.rules[id]
}

// push reports a local endpoint to the master, as an agent does.
func (a *ofAgent) push(master ofrpc.OfnetNode, method string, ep ofrpc.OfnetEndpoint) {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ok bool
	if err := a.pool.Call(ctx, master.Addr(), method, ep, &ok); err != nil {
		a.t.Fatalf("%s to the master: %v", method, err)
	}
}

type ofAgentSvc struct{ a *ofAgent }

func (s *ofAgentSvc) AddMaster(n ofrpc.OfnetNode, reply *bool) error {
	s.a.record(ofrpc.AgentAddMaster)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.a.pool.Call(ctx, n.Addr(), ofrpc.MasterRegisterNode, s.a.id, reply)
}

func (s *ofAgentSvc) EndpointAdd(ep ofrpc.OfnetEndpoint, reply *bool) error {
	s.a.mu.Lock()
	s.a.eps[ep.EndpointID] = ep
	s.a.mu.Unlock()
	s.a.record(ofrpc.AgentEndpointAdd + " " + ep.EndpointID)
	return nil
}

func (s *ofAgentSvc) EndpointDel(ep ofrpc.OfnetEndpoint, reply *bool) error {
	s.a.mu.Lock()
	delete(s.a.eps, ep.EndpointID)
	s.a.mu.Unlock()
	s.a.record(ofrpc.AgentEndpointDel + " " + ep.EndpointID)
	return nil
}

func (s *ofAgentSvc) InjectGARPs(epg int, reply *bool) error { return nil }

type ofPolicySvc struct{ a *ofAgent }

func (s *ofPolicySvc) AddRule(r ofrpc.OfnetPolicyRule, reply *bool) error {
	s.a.mu.Lock()
	s.a.rules[r.RuleId] = r
	s.a.mu.Unlock()
	s.a.record(ofrpc.PolicyAddRule + " " + r.RuleId)
	return nil
}

func (s *ofPolicySvc) DelRule(r ofrpc.OfnetPolicyRule, reply *bool) error {
	s.a.mu.Lock()
	delete(s.a.rules, r.RuleId)
	s.a.mu.Unlock()
	s.a.record(ofrpc.PolicyDelRule + " " + r.RuleId)
	return nil
}

func waitUntil(t testing.TB, what string, cond func() bool, dump func() string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; have %s", what, dump())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func ofnetCfg(clear time.Duration) master.Config {
	c := mastertest.DefaultConfig()
	c.OfnetIP, c.OfnetPort, c.OfnetClearDelay = "127.0.0.1", 0, clear
	return c
}

// ofnetState reads GET /debug/ofnet.
func (e *env) ofnetState() ofmaster.State {
	e.T.Helper()
	code, body, hdr := mastertest.DoReq(e.T, e.Srv.URL, "GET", "/debug/ofnet", "")
	if code != http.StatusOK || hdr.Get("Content-Type") != "application/json" {
		e.T.Fatalf("/debug/ofnet: %d %s %q", code, hdr.Get("Content-Type"), body)
	}
	var st ofmaster.State
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		e.T.Fatalf("/debug/ofnet: %v in %s", err, body)
	}
	return st
}

// masterNode is the ofnet master's address, once it serves.
func (e *env) masterNode() ofrpc.OfnetNode {
	e.T.Helper()
	var st ofmaster.State
	waitUntil(e.T, "the ofnet master to serve", func() bool { st = e.ofnetState(); return st.MyPort != 0 }, func() string { return "" })
	return ofrpc.OfnetNode{HostAddr: st.MyAddr, HostPort: st.MyPort}
}

func testEndpoint(ip, origin string) ofrpc.OfnetEndpoint {
	return ofrpc.OfnetEndpoint{EndpointID: ip + ":default", EndpointType: ofrpc.EndpointTypeInternal,
		IpAddr: net.ParseIP(ip), IpMask: net.ParseIP("255.255.255.255"), Vrf: "default", Vlan: 10,
		OriginatorIp: net.ParseIP(origin), Timestamp: time.Now()}
}

// The leader's ofnet master tells netplugin agents about itself, relays
// endpoints between hosts, pushes the policy rules written through the
// REST model, and dumps its tables on /debug/ofnet.
func TestOfnetAgentsEndpointsAndRules(t *testing.T) {
	e := newEnvCfg(t, ofnetCfg(time.Hour))
	self := e.masterNode()

	b := startOfAgent(t, "127.0.0.3")
	e.RegisterNetplugin("127.0.0.3", b.id.HostPort, "hostb")
	b.waitCall(ofrpc.AgentAddMaster, 1)
	waitUntil(t, "agent B registered", func() bool { _, ok := e.ofnetState().AgentDb[b.id.Addr()]; return ok }, func() string { return "" })
	epB := testEndpoint("198.18.20.2", "127.0.0.3")
	b.push(self, ofrpc.MasterEndpointAdd, epB)

	// A rule through the REST model reaches the registered agent.
	e.CreateNet("default", "net", "vlan", "198.18.20.0/24", "", 0)
	e.OK("POST", "/api/v1/policys/default:p1/", `{"tenantName":"default","policyName":"p1"}`)
	e.CreateEPG("default", "g1", "net", `"policies":["p1"]`)
	e.OK("POST", mastertest.RulePath("default", "p1", "1"), mastertest.RuleBody("default", "p1", "1", "in", `"protocol":"tcp","port":80`))
	ruleIDs := e.StateKeys("state/policyRule/")
	if len(ruleIDs) != 2 {
		t.Fatalf("rule states: %v", ruleIDs)
	}
	for _, id := range ruleIDs {
		b.waitCall(ofrpc.PolicyAddRule+" "+id, 1)
	}
	if got := b.ruleIDs(); !slices.Equal(got, ruleIDs) {
		t.Fatalf("agent B rules %v, want %v", got, ruleIDs)
	}
	for _, id := range ruleIDs {
		if got, want := b.rule(id), e.PolicyRule(id); got != ofrpc.OfnetPolicyRule(want) {
			t.Fatalf("rule %s: agent has %+v, store %+v", id, got, want)
		}
	}

	// A host registering later gets the stored endpoints and rules.
	a := startOfAgent(t, "127.0.0.2")
	e.RegisterNetplugin("127.0.0.2", a.id.HostPort, "hosta")
	a.waitCall(ofrpc.AgentEndpointAdd+" "+epB.EndpointID, 1)
	for _, id := range ruleIDs {
		a.waitCall(ofrpc.PolicyAddRule+" "+id, 1)
	}
	if n := b.count(ofrpc.AgentEndpointAdd + " " + epB.EndpointID); n != 0 {
		t.Fatalf("the originating host got its own endpoint back %d times", n)
	}

	st := e.ofnetState()
	if st.MyAddr != "127.0.0.1" || len(st.AgentDb) != 2 || st.AgentDb[a.id.Addr()] != a.id || st.AgentDb[b.id.Addr()] != b.id {
		t.Fatalf("/debug/ofnet agents: %+v", st.AgentDb)
	}
	if got := st.EndpointDb[epB.EndpointID]; len(st.EndpointDb) != 1 || !got.OriginatorIp.Equal(epB.OriginatorIp) {
		t.Fatalf("/debug/ofnet endpoints: %+v", st.EndpointDb)
	}
	var pol []string
	for id := range st.PolicyDb {
		pol = append(pol, id)
	}
	slices.Sort(pol)
	if !slices.Equal(pol, ruleIDs) {
		t.Fatalf("/debug/ofnet rules %v, want %v", pol, ruleIDs)
	}

	// Deleting the rule withdraws it from every agent.
	e.OK("DELETE", mastertest.RulePath("default", "p1", "1"), "")
	for _, ag := range []*ofAgent{a, b} {
		for _, id := range ruleIDs {
			ag.waitCall(ofrpc.PolicyDelRule+" "+id, 1)
		}
		if got := ag.ruleIDs(); len(got) != 0 {
			t.Fatalf("agent %s still has rules %v", ag.id.Addr(), got)
		}
	}
	if st := e.ofnetState(); len(st.PolicyDb) != 0 {
		t.Fatalf("master still has rules %v", st.PolicyDb)
	}
}

// Rules already in the store are restored into a new term's master; a
// changed rule is replaced (DelRule then AddRule); a deleted one withdrawn.
func TestOfnetRestoresAndFollowsRuleState(t *testing.T) {
	root := e0Root(t)
	st := state.New(root.st)
	ctx := mastertest.Ctx(t, 30*time.Second)
	r1 := state.PolicyRule{OfnetPolicyRule: state.OfnetPolicyRule{RuleId: "t:g:t:p:r1:inRx", Priority: 3, DstEndpointGroup: 7, Action: "allow"}}
	if _, err := st.PolicyRules.Write(ctx, r1); err != nil {
		t.Fatal(err)
	}
	e := root.start(ofnetCfg(time.Hour))
	ag := startOfAgent(t, "127.0.0.2")
	e.RegisterNetplugin("127.0.0.2", ag.id.HostPort, "h")
	ag.waitCall(ofrpc.PolicyAddRule+" "+r1.RuleId, 1)

	r1b := r1
	r1b.Action = "deny"
	if _, err := st.PolicyRules.Write(ctx, r1b); err != nil {
		t.Fatal(err)
	}
	ag.waitCall(ofrpc.PolicyDelRule+" "+r1.RuleId, 1)
	ag.waitCall(ofrpc.PolicyAddRule+" "+r1.RuleId, 2)
	if got := ag.rule(r1.RuleId); got.Action != "deny" {
		t.Fatalf("agent holds %+v after the change", ag.rule(r1.RuleId))
	}
	// Unchanged rewrite: nothing sent.
	if _, err := st.PolicyRules.Write(ctx, r1b); err != nil {
		t.Fatal(err)
	}
	if err := st.PolicyRules.Clear(ctx, r1.RuleId); err != nil {
		t.Fatal(err)
	}
	ag.waitCall(ofrpc.PolicyDelRule+" "+r1.RuleId, 2)
	if n := ag.count(ofrpc.PolicyAddRule + " " + r1.RuleId); n != 2 {
		t.Fatalf("AddRule sent %d times, want 2", n)
	}
	if st := e.ofnetState(); len(st.PolicyDb) != 0 {
		t.Fatalf("master rules after delete: %v", st.PolicyDb)
	}
}

// A departed host is dropped from the agent table at once and its
// endpoints withdrawn from the other hosts after the clear delay, under
// its VTEP identity even when its control IP differs (docs/daemons.md §10 row
// 10); a host that comes back in time keeps its endpoints.
func TestOfnetDepartedHost(t *testing.T) {
	const delay = 2 * time.Second
	e := newEnvCfg(t, ofnetCfg(delay))
	self := e.masterNode()

	a := startOfAgent(t, "127.0.0.2")
	e.RegisterNetplugin("127.0.0.2", a.id.HostPort, "hosta")
	// Host C: control IP .4, VTEP .5; its agent answers on both and
	// registers as .5.
	c := startOfAgent(t, "127.0.0.5", "127.0.0.4")
	e.Register(objdb.ServiceInfo{ServiceName: "netplugin.vtep", Role: "netplugin", TTL: 10, HostAddr: "127.0.0.5", Port: 4789, Hostname: "hostc"})
	cInfo := e.RegisterNetplugin("127.0.0.4", c.id.HostPort, "hostc")
	for _, ag := range []*ofAgent{a, c} {
		ag.waitCall(ofrpc.AgentAddMaster, 1)
	}
	waitUntil(t, "both agents registered", func() bool { return len(e.ofnetState().AgentDb) == 2 }, func() string { return fmt.Sprint(e.ofnetState().AgentDb) })
	if _, ok := e.ofnetState().AgentDb["127.0.0.5:"+fmt.Sprint(c.id.HostPort)]; !ok {
		t.Fatalf("host C not registered under its VTEP IP: %v", e.ofnetState().AgentDb)
	}
	epC := testEndpoint("198.18.30.5", "127.0.0.5")
	c.push(self, ofrpc.MasterEndpointAdd, epC)
	a.waitCall(ofrpc.AgentEndpointAdd+" "+epC.EndpointID, 1)

	// Away and back before the delay: nothing withdrawn.
	e.Deregister(cInfo)
	waitUntil(t, "host C dropped", func() bool { return len(e.ofnetState().AgentDb) == 1 }, func() string { return fmt.Sprint(e.ofnetState().AgentDb) })
	e.Register(cInfo)
	c.waitCall(ofrpc.AgentAddMaster, 2)
	time.Sleep(delay + time.Second)
	if _, ok := e.ofnetState().EndpointDb[epC.EndpointID]; !ok || a.count(ofrpc.AgentEndpointDel+" "+epC.EndpointID) != 0 {
		t.Fatal("endpoint of a host that came back in time was withdrawn")
	}

	// Away for good: withdrawn after the delay.
	e.Deregister(cInfo)
	a.waitCall(ofrpc.AgentEndpointDel+" "+epC.EndpointID, 1)
	if st := e.ofnetState(); len(st.EndpointDb) != 0 || len(st.AgentDb) != 1 {
		t.Fatalf("after host C left: endpoints %v, agents %v", st.EndpointDb, st.AgentDb)
	}
}

// The ofnet master lives only as long as the leadership term.
func TestOfnetStopsWithLeadership(t *testing.T) {
	e := newEnvCfg(t, ofnetCfg(time.Hour))
	self := e.masterNode()
	conn, err := net.Dial("tcp", self.Addr())
	if err != nil {
		t.Fatalf("ofnet master not listening: %v", err)
	}
	conn.Close()
	e.Stop()
	waitUntil(t, "the ofnet port to close", func() bool {
		c, err := net.Dial("tcp", self.Addr())
		if err == nil {
			c.Close()
		}
		return err != nil
	}, func() string { return self.Addr() })
}

// Without an ofnet address there is no ofnet master and no debug route.
func TestOfnetDisabled(t *testing.T) {
	e := newEnv(t)
	if code, _ := e.Do("GET", "/debug/ofnet", ""); code != http.StatusNotFound {
		t.Fatalf("/debug/ofnet without ofnet master: %d", code)
	}
}

// rootEnv is a fresh store root whose leadership term starts later.
type rootEnv struct {
	t  *testing.T
	st objdb.Store
	rt string
}

func e0Root(t *testing.T) *rootEnv {
	root := objdbtest.UniqueRoot(t)
	return &rootEnv{t: t, st: mastertest.OpenStore(t, etcdEndpoint, root), rt: root}
}

func (r *rootEnv) start(cfg master.Config) *env {
	r.t.Helper()
	return &env{mastertest.StartOn(r.t, r.rt, r.st, cfg)}
}
