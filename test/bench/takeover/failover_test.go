package takeover

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/contiv/netplugin/netmaster/server"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/objdbtest"
	"github.com/contiv/netplugin/ofnet/ofrpc"
	"github.com/contiv/netplugin/test/nmproc"
)

// BenchmarkFailover is issue 27 item 3: failover at cluster scale. It
// runs an etcd process, three netmasters (--leader-ttl 2 s, $TAKEOVER_TTL)
// on their own loopback addresses, $FAILOVER_ENDPOINTS endpoint records in
// the store (default 10 000, written as in BenchmarkTakeover) and
// $FAILOVER_AGENTS fake ofnet agents (default 16, in this process) that
// register in the store's "netplugin" service as netplugin does and, like
// ofnet's agent, answer AddMaster by registering with the master and
// pushing their share of the endpoints to it. Once the first leader's ofnet
// master holds every agent and endpoint, it kills the leader with SIGKILL
// and times, from the kill:
//
//   - write: the first write (a network create) answered by a survivor;
//   - agents: every agent registered with the new leader's ofnet master
//     (all agents follow the new leader);
//   - converged: the new ofnet master holds every endpoint again, has
//     nothing queued, waiting for a retry or being sent to any agent, and
//     every agent holds every endpoint of the other agents (the datapath
//     state is complete).
//
// The agents take OfnetAgent.EndpointAddBatch as ofnet's agent does; with
// $FAILOVER_NO_BATCH=1 they lack it, as an older agent (the master then
// sends one call per endpoint).
//
// With $BENCH_PROFILE_DIR set it saves the new leader's heap and goroutine
// profiles there at convergence. The goal is at most 2 × the lock TTL for
// the first two. It needs no OVS
// and no namespaces (loopback only), so no shared lock:
//
//	go test ./test/bench/takeover -run '^$' -bench Failover -benchtime 1x -timeout 20m
func BenchmarkFailover(b *testing.B) {
	n := envInt(b, "FAILOVER_ENDPOINTS", 10000)
	nAgents := envInt(b, "FAILOVER_AGENTS", 16)
	noBatch := envInt(b, "FAILOVER_NO_BATCH", 0) != 0
	ttl := time.Duration(envInt(b, "TAKEOVER_TTL", 2)) * time.Second
	parts := split(n)
	if len(parts) > maxNets {
		b.Fatalf("%d endpoints: at most %d fit in 198.18.0.0/15", n, maxNets*hostsPerNet)
	}
	etcdSrv := objdbtest.StartEtcdProcess(b)
	flags := []string{"--etcd-endpoints", etcdSrv.Endpoint, "--leader-ttl", ttl.String(), "--log-level", "info", "--insecure-rpc"}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	// Three netmasters, each on its own loopback address (their ofnet
	// masters all listen on port 9001 of that address).
	var nms []*nmproc.Proc
	for i := range 3 {
		nms = append(nms, nmproc.Start(b, freeAddrOn(b, fmt.Sprintf("127.0.2.%d", 11+i)), flags...))
	}
	leader := waitLeader(b, nms, 60*time.Second)
	for i := range parts {
		subnet, gw := netSubnet(i)
		if ok, msg := createNet(leader, fmt.Sprintf("big%d", i), subnet, gw); !ok {
			b.Fatalf("create network big%d: %s", i, msg)
		}
	}
	kv := openStore(b, etcdSrv.Endpoint)
	defer kv.Close()
	start := time.Now()
	first := 0
	for i, c := range parts {
		if err := fill(ctx, kv, fmt.Sprintf("big%d.default", i), first, c, 64); err != nil {
			b.Fatalf("fill: %v", err)
		}
		first += c
	}
	fmt.Printf("filled %d endpoints in %.1f s\n", n, time.Since(start).Seconds())

	// The agents; endpoint i belongs to agent i % nAgents.
	agents := make([]*fakeAgent, nAgents)
	for k := range agents {
		agents[k] = startFakeAgent(ctx, b, kv, k, nAgents, n, !noBatch)
	}
	if err := waitConverged(ctx, leader, agents, n, 10*time.Minute); err != nil {
		b.Fatalf("first leader: %v", err)
	}
	fmt.Printf("first leader %s holds %d agents and %d endpoints\n", leader.Addr, nAgents, n)

	// Kill it; time the survivors.
	leader.Kill()
	killed := time.Now()
	var rest []*nmproc.Proc
	for _, p := range nms {
		if p != leader {
			rest = append(rest, p)
		}
	}
	var answered time.Time
	for probe := 0; answered.IsZero(); probe++ {
		if time.Since(killed) > 5*time.Minute {
			b.Fatal("no survivor answered a write within 5 minutes")
		}
		for _, p := range rest {
			if ok, _ := createNet(p, fmt.Sprintf("probe%d", probe), fmt.Sprintf("198.19.%d.0/24", 192+probe%60), ""); ok {
				answered = time.Now()
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	newLeader := waitLeader(b, rest, time.Minute)
	var agentsAt, epsAt, traced time.Time
	trace := os.Getenv("FAILOVER_TRACE") != ""
	for {
		st, err := ofnetState(ctx, newLeader)
		now := time.Now()
		if trace && err == nil && now.Sub(traced) >= time.Second {
			traced = now
			queued, sending, retrying, held, resyncs := 0, 0, 0, 0, 0
			for _, a := range st.AgentStats {
				queued += a.Queued
				retrying += a.Retrying
				resyncs += a.Resyncs
				if a.Sending {
					sending++
				}
			}
			for _, a := range agents {
				held += a.holds()
			}
			fmt.Printf("%6.2f s: master %d agents %d endpoints; queued %d, sending %d, retrying %d, resyncs %d; agents hold %d\n",
				now.Sub(killed).Seconds(), len(st.AgentDb), len(st.EndpointDb), queued, sending, retrying, resyncs, held)
		}
		if err == nil {
			if agentsAt.IsZero() && len(st.AgentDb) >= nAgents {
				agentsAt = now
			}
			if !agentsAt.IsZero() && st.converged(agents, n) {
				epsAt = now
				break
			}
		}
		if now.Sub(killed) > 5*time.Minute {
			b.Fatalf("new leader %s did not converge within 5 minutes (agents at %v): %v", newLeader.Addr, agentsAt, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	saveProfiles(ctx, b, newLeader, "new-leader")
	var lastAdd time.Time
	for _, a := range agents {
		if t := a.lastAddMaster(); t.After(lastAdd) {
			lastAdd = t
		}
	}
	w, ag, ep, am := answered.Sub(killed), agentsAt.Sub(killed), epsAt.Sub(killed), lastAdd.Sub(killed)
	fmt.Printf("kill -9 of the leader (3 netmasters, %d endpoints, %d agents, TTL %v) -> write answered %.2f s, "+
		"last agent told of the new master %.2f s, all agents registered %.2f s, ofnet state converged %.2f s\n",
		n, nAgents, ttl, w.Seconds(), am.Seconds(), ag.Seconds(), ep.Seconds())
	line := func(name string, v float64) {
		fmt.Printf("BenchmarkFailover/%s/endpoints=%d/agents=%d\t1\t%.3f s\n", name, n, nAgents, v)
	}
	line("write", w.Seconds())
	line("agents-told", am.Seconds())
	line("agents-registered", ag.Seconds())
	line("converged", ep.Seconds())
	b.ReportMetric(w.Seconds(), "write-s")
	b.ReportMetric(ag.Seconds(), "agents-s")
	b.ReportMetric(ep.Seconds(), "converged-s")
	b.ReportMetric(ttl.Seconds(), "ttl-s")
}

// saveProfiles writes p's heap and goroutine profiles (GET /debug/pprof/,
// docs/operations.md "Profiles") as <name>.heap.pb.gz and
// <name>.goroutine.pb.gz into $BENCH_PROFILE_DIR, when it is set: the
// netmasters are separate processes, which -memprofile does not see.
func saveProfiles(ctx context.Context, b testing.TB, p *nmproc.Proc, name string) {
	dir := os.Getenv("BENCH_PROFILE_DIR")
	if dir == "" {
		return
	}
	for _, prof := range []string{"heap", "goroutine"} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL()+"/debug/pprof/"+prof, nil)
		if err != nil {
			b.Fatal(err)
		}
		resp, err := ofnetClient.Do(req)
		if err != nil {
			b.Logf("%s profile of %s: %v", prof, p.Addr, err)
			continue
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Logf("%s profile of %s: %s %v", prof, p.Addr, resp.Status, err)
			continue
		}
		path := filepath.Join(dir, name+"."+prof+".pb.gz")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			b.Fatalf("write %s: %v", path, err)
		}
		fmt.Printf("wrote %s\n", path)
	}
}

// freeAddrOn returns ip:port with a port free on ip.
func freeAddrOn(b testing.TB, ip string) string {
	b.Helper()
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		b.Fatalf("listen on %s: %v", ip, err)
	}
	defer l.Close()
	return l.Addr().String()
}

// waitLeader returns the one of ps that reports the leader role.
func waitLeader(b testing.TB, ps []*nmproc.Proc, within time.Duration) *nmproc.Proc {
	b.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		for _, p := range ps {
			if p.Role() == "leader" {
				return p
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.Fatalf("no leader among %d netmasters within %v", len(ps), within)
	return nil
}

// ofnetStateDoc is the part of GET /debug/ofnet the benchmark reads.
type ofnetStateDoc struct {
	AgentDb    map[string]json.RawMessage
	EndpointDb map[string]json.RawMessage
	AgentStats map[string]struct {
		Queued, Retrying, Resyncs int
		Sending                   bool
	}
}

// converged: every agent and endpoint known, nothing queued, waiting for
// a retry or being sent, and every agent holds every other agent's
// endpoints.
func (s ofnetStateDoc) converged(agents []*fakeAgent, eps int) bool {
	if len(s.AgentDb) < len(agents) || len(s.EndpointDb) < eps {
		return false
	}
	for _, a := range s.AgentStats {
		if a.Queued > 0 || a.Retrying > 0 || a.Sending {
			return false
		}
	}
	for _, a := range agents {
		if a.holds() != eps-len(a.eps) {
			return false
		}
	}
	return true
}

var ofnetClient = &http.Client{Timeout: 10 * time.Second}

func ofnetState(ctx context.Context, p *nmproc.Proc) (ofnetStateDoc, error) {
	var s ofnetStateDoc
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL()+"/debug/ofnet", nil)
	if err != nil {
		return s, err
	}
	resp, err := ofnetClient.Do(req)
	if err != nil {
		return s, fmt.Errorf("GET /debug/ofnet: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("GET /debug/ofnet: %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return s, fmt.Errorf("decode /debug/ofnet: %w", err)
	}
	return s, nil
}

// waitConverged waits until p's ofnet master holds the agents and
// endpoints and the agents hold them too.
func waitConverged(ctx context.Context, p *nmproc.Proc, agents []*fakeAgent, eps int, within time.Duration) error {
	deadline := time.Now().Add(within)
	var last ofnetStateDoc
	var err error
	for time.Now().Before(deadline) {
		if last, err = ofnetState(ctx, p); err == nil && last.converged(agents, eps) {
			return nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("not converged within %v: %d agents, %d endpoints (%v)", within, len(last.AgentDb), len(last.EndpointDb), err)
}

// fakeAgent stands in for one host's netplugin and ofnet agent.
type fakeAgent struct {
	node   ofrpc.OfnetNode
	pool   *ofrpc.Pool
	eps    []ofrpc.OfnetEndpoint
	mu     sync.Mutex
	lastAM time.Time
	held   map[string]bool // remote endpoints received and not deleted
}

func (a *fakeAgent) holds() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.held)
}

func (a *fakeAgent) lastAddMaster() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lastAM
}

// startFakeAgent serves agent k on 127.0.1.(k+1) and registers it; its
// endpoints are those i < n with i % of == k.
func startFakeAgent(ctx context.Context, b testing.TB, reg objdb.ServiceRegistry, k, of, n int, batch bool) *fakeAgent {
	b.Helper()
	ip := fmt.Sprintf("127.0.1.%d", k+1)
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		b.Fatalf("agent %d: %v", k, err)
	}
	a := &fakeAgent{node: ofrpc.OfnetNode{HostAddr: ip, HostPort: uint16(ln.Addr().(*net.TCPAddr).Port)},
		pool: ofrpc.NewPool(ofrpc.WithDialAttempts(3), ofrpc.WithDialInterval(100*time.Millisecond)),
		held: map[string]bool{}}
	ts := time.Now()
	for i := k; i < n; i += of {
		addr := net.IPv4(198, 18, byte(i>>8), byte(i))
		a.eps = append(a.eps, ofrpc.OfnetEndpoint{EndpointID: fmt.Sprintf("%s:default", addr), EndpointType: ofrpc.EndpointTypeInternal,
			IpAddr: addr, IpMask: net.IPv4(255, 255, 192, 0), Vrf: "default", MacAddrStr: fmt.Sprintf("02:02:%02x:%02x:%02x:%02x", 198, 18, byte(i>>8), byte(i)),
			Vlan: 1, Vni: 1, OriginatorIp: net.ParseIP(ip), Timestamp: ts})
	}
	sctx, scancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var svc any = &fakeAgentSvc{ctx: sctx, a: a}
		if batch {
			svc = &fakeBatchAgentSvc{fakeAgentSvc{ctx: sctx, a: a}}
		}
		ofrpc.Serve(sctx, ln, map[string]any{ofrpc.ServiceAgent: svc, ofrpc.ServicePolicy: &fakePolicySvc{}})
	}()
	info := objdb.ServiceInfo{ServiceName: server.ServiceNetplugin, HostAddr: ip, Port: int(a.node.HostPort), Hostname: fmt.Sprintf("host%d", k), TTL: 10}
	if err := reg.RegisterService(ctx, info); err != nil {
		b.Fatalf("register agent %d: %v", k, err)
	}
	b.Cleanup(func() {
		scancel()
		<-done
		a.pool.Close()
	})
	return a
}

type fakeAgentSvc struct {
	ctx context.Context
	a   *fakeAgent
}

// AddMaster registers with the master and pushes this agent's endpoints,
// asynchronously, as ofnet's agent does.
func (s *fakeAgentSvc) AddMaster(m ofrpc.OfnetNode, reply *bool) error {
	a := s.a
	a.mu.Lock()
	a.lastAM = time.Now()
	a.mu.Unlock()
	go func() {
		call := func(method string, arg any) error {
			ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
			defer cancel()
			var ok bool
			return a.pool.Call(ctx, m.Addr(), method, arg, &ok)
		}
		if call(ofrpc.MasterRegisterNode, a.node) != nil {
			return
		}
		for _, ep := range a.eps {
			if call(ofrpc.MasterEndpointAdd, ep) != nil {
				return
			}
		}
	}()
	*reply = true
	return nil
}

func (s *fakeAgentSvc) EndpointAdd(ep ofrpc.OfnetEndpoint, reply *bool) error {
	s.a.mu.Lock()
	s.a.held[ep.EndpointID] = true
	s.a.mu.Unlock()
	*reply = true
	return nil
}

func (s *fakeAgentSvc) EndpointDel(ep ofrpc.OfnetEndpoint, reply *bool) error {
	s.a.mu.Lock()
	delete(s.a.held, ep.EndpointID)
	s.a.mu.Unlock()
	*reply = true
	return nil
}

// fakeBatchAgentSvc also serves OfnetAgent.EndpointAddBatch.
type fakeBatchAgentSvc struct{ fakeAgentSvc }

// EndpointBatch and BatchReply have the JSON of ofrpc.OfnetEndpointBatch
// and ofrpc.OfnetBatchReply (docs/dataplane.md §6.2); net/rpc registers
// only methods whose argument and reply types are exported.
type EndpointBatch struct{ Endpoints []ofrpc.OfnetEndpoint }

type BatchReply struct {
	Failed []struct{ EndpointID, Error string }
}

func (s *fakeBatchAgentSvc) EndpointAddBatch(b EndpointBatch, reply *BatchReply) error {
	s.a.mu.Lock()
	for _, ep := range b.Endpoints {
		s.a.held[ep.EndpointID] = true
	}
	s.a.mu.Unlock()
	return nil
}

func (s *fakeAgentSvc) InjectGARPs(epg int, reply *bool) error {
	*reply = true
	return nil
}

func (s *fakeAgentSvc) DummyRpc(arg string, reply *bool) error {
	*reply = true
	return nil
}

type fakePolicySvc struct{}

func (fakePolicySvc) AddRule(r ofrpc.OfnetPolicyRule, reply *bool) error {
	*reply = true
	return nil
}

func (fakePolicySvc) DelRule(r ofrpc.OfnetPolicyRule, reply *bool) error {
	*reply = true
	return nil
}
