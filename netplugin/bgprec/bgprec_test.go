package bgprec

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"go.uber.org/goleak"

	"github.com/contiv/netplugin/netplugin/bgp"
	"github.com/contiv/netplugin/netplugin/ovsdriver"
	"github.com/contiv/netplugin/netplugin/reconcile"
	"github.com/contiv/netplugin/state"
	"github.com/contiv/netplugin/utils/faulttest"
	"github.com/contiv/netplugin/utils/logtest"
	"github.com/contiv/netplugin/utils/runtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The side effects that once only logged a failure (issue 25 item 3) go
// through the work queue: each test injects N failures and sees the key
// converge.

// fakeDP is the VLAN bridge's agent: the BGP port, peer and routes it holds.
type fakeDP struct {
	*faulttest.Faults
	mu     sync.Mutex
	port   uint32
	peer   net.HardwareAddr
	routes map[string]bool
}

func (f *fakeDP) SetBgpPort(_ context.Context, port uint32, _ net.IP) error {
	if err := f.Call("SetBgpPort"); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.port = port
	return nil
}

func (f *fakeDP) SetBgpPeerMAC(_ context.Context, mac net.HardwareAddr) error {
	if err := f.Call("SetBgpPeerMAC"); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.peer = mac
	return nil
}

func (f *fakeDP) AddBgpRoute(_ context.Context, pfx *net.IPNet) error {
	if err := f.Call("AddBgpRoute"); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.routes[pfx.String()] = true
	return nil
}

func (f *fakeDP) RemoveBgpRoute(_ context.Context, pfx *net.IPNet) error {
	if err := f.Call("RemoveBgpRoute"); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.routes, pfx.String())
	return nil
}

func (f *fakeDP) FlushBgpRoutes(context.Context) error {
	if err := f.Call("FlushBgpRoutes"); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.routes = map[string]bool{}
	return nil
}

func (f *fakeDP) BgpRoutes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for r := range f.routes {
		out = append(out, r)
	}
	return out
}

// state reads the port, the peer MAC and whether route is installed.
func (f *fakeDP) state(route string) (uint32, string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.port, f.peer.String(), f.routes[route]
}

// fakePorts is OVSDB with or without inb01.
type fakePorts struct {
	*faulttest.Faults
	mu  sync.Mutex
	has bool
}

func (p *fakePorts) CreateEndpoint(context.Context, ovsdriver.EndpointSpec) (ovsdriver.EndpointPort, error) {
	if err := p.Call("CreateEndpoint"); err != nil {
		return ovsdriver.EndpointPort{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.has = true
	return ovsdriver.EndpointPort{PortName: PortName, OFPort: 9}, nil
}

func (p *fakePorts) DeleteEndpoint(context.Context, string, string) error {
	if err := p.Call("DeleteEndpoint"); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.has = false
	return nil
}

func (p *fakePorts) exists() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.has
}

// fakeSpeaker announces what it is asked to and hands its events to the test.
type fakeSpeaker struct {
	*faulttest.Faults
	ev  bgp.Events
	mu  sync.Mutex
	out map[netip.Addr]bool
}

func (s *fakeSpeaker) Announce(_ context.Context, a netip.Addr) error {
	if err := s.Call("Announce"); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.out[a] = true
	return nil
}

func (s *fakeSpeaker) Withdraw(_ context.Context, a netip.Addr) error {
	if err := s.Call("Withdraw"); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.out, a)
	return nil
}

func (s *fakeSpeaker) has(a netip.Addr) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out[a]
}

func (s *fakeSpeaker) Stop()                             { _ = s.Call("Stop") }
func (s *fakeSpeaker) State(context.Context) bgp.Inspect { return bgp.Inspect{} }

// fakeLink has the neighbor's MAC in its ARP table.
type fakeLink struct{ mac net.HardwareAddr }

func (fakeLink) Up(string, *net.IPNet) error                       { return nil }
func (l fakeLink) NeighborMAC(string, netip.Addr) net.HardwareAddr { return l.mac }

// entries is the store's BGP entries.
type entries struct {
	mu sync.Mutex
	m  map[string]state.Bgp
}

func (e *entries) Get(id string) (state.Bgp, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	b, ok := e.m[id]
	return b, ok
}

func (e *entries) set(b *state.Bgp) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if b == nil {
		delete(e.m, "host1")
	} else {
		e.m["host1"] = *b
	}
}

// rig is a reconciler on fakes served by a real work queue.
type rig struct {
	*Reconciler
	dp      *fakeDP
	ports   *fakePorts
	sp      *fakeSpeaker
	entries *entries
	q       *reconcile.Queue

	mu       sync.Mutex
	local    map[netip.Addr]bool
	failures map[string]int
}

func newRig(t *testing.T) *rig {
	log := logtest.New(t, logrus.DebugLevel)
	g := &rig{dp: &fakeDP{Faults: faulttest.New(), routes: map[string]bool{}}, ports: &fakePorts{Faults: faulttest.New()},
		sp:      &fakeSpeaker{Faults: faulttest.New(), out: map[netip.Addr]bool{}},
		entries: &entries{m: map[string]state.Bgp{}}, local: map[netip.Addr]bool{}, failures: map[string]int{}}
	g.q = reconcile.New(log, time.Millisecond, 20*time.Millisecond)
	g.q.Failed = func(kind string) {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.failures[kind]++
	}
	g.Reconciler = New(Config{Host: "host1", Routing: true, Entries: g.entries, Local: g.localAddrs, Queue: g.q,
		Datapath: g.dp, Ports: g.ports, Link: fakeLink{mac: net.HardwareAddr{2, 0, 0, 0, 0, 9}}, Log: log,
		Start: func(_ context.Context, _ bgp.Config, ev bgp.Events, _ logrus.FieldLogger) (Speaker, error) {
			g.sp.ev = ev
			return g.sp, g.sp.Call("Start")
		}})
	g.Register()
	t.Cleanup(g.Shutdown) // after the queue stopped: cleanups run last first
	runtest.GoLoop(t, func(ctx context.Context) { g.q.Run(ctx, reconcile.Workers) })
	return g
}

func (g *rig) localAddrs() map[netip.Addr]bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[netip.Addr]bool{}
	for a := range g.local {
		out[a] = true
	}
	return out
}

func (g *rig) setLocal(a netip.Addr, on bool) {
	g.mu.Lock()
	if on {
		g.local[a] = true
	} else {
		delete(g.local, a)
	}
	g.mu.Unlock()
	g.Changed(a)
}

func (g *rig) failed(kind string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.failures[kind]
}

// runningRig is a rig whose speaker runs.
func runningRig(t *testing.T) *rig {
	g := newRig(t)
	g.configure(entry)
	faulttest.Eventually(t, "speaker running", g.Reconciler.running)
	return g
}

// configure sets (or removes, nil) this host's BGP entry.
func (g *rig) configure(b *state.Bgp) {
	g.entries.set(b)
	g.q.Enqueue(KindConfig, "host1")
}

var entry = &state.Bgp{Common: state.Common{ID: "host1"}, Hostname: "host1", RouterIP: "198.18.50.1/24",
	As: "65001", NeighborAs: "65002", Neighbor: "198.18.50.2"}

// A local VLAN endpoint's announcement fails 3 times and its withdrawal 2
// times; both converge.
func TestRouteRetriesUntilConverged(t *testing.T) {
	g := runningRig(t)
	g.sp.FailNext("Announce", 3)
	g.sp.FailNext("Withdraw", 2)
	a := netip.MustParseAddr("198.18.7.10")
	g.setLocal(a, true)
	faulttest.Eventually(t, "announced", func() bool { return g.sp.has(a) })
	wantCount(t, "failed announcements", g.failed(KindRoute), 3)
	g.setLocal(a, false)
	faulttest.Eventually(t, "withdrawn", func() bool { return !g.sp.has(a) && g.q.Len() == 0 })
	wantCount(t, "failed attempts in all", g.failed(KindRoute), 5)
	wantCount(t, "Announce calls", g.sp.Count("Announce"), 4)
}

// A learned route's install fails 3 times and its removal twice; both
// converge (they were only logged before).
func TestLearnedRouteRetriesUntilConverged(t *testing.T) {
	g := runningRig(t)
	g.dp.FailNext("AddBgpRoute", 3)
	g.dp.FailNext("RemoveBgpRoute", 2)
	pfx := netip.MustParsePrefix("198.19.0.0/16")
	g.sp.ev.Route(pfx, true)
	faulttest.Eventually(t, "route installed", func() bool { _, _, ok := g.dp.state("198.19.0.0/16"); return ok })
	g.sp.ev.Route(pfx, false)
	faulttest.Eventually(t, "route removed", func() bool { _, _, ok := g.dp.state("198.19.0.0/16"); return !ok && g.q.Len() == 0 })
	wantCount(t, "failed attempts", g.failed(KindLearned), 5)
	wantCount(t, "AddBgpRoute calls", g.dp.Count("AddBgpRoute"), 4)
}

// Setting the neighbor's MAC fails 4 times and converges (it was only
// logged before).
func TestPeerMACRetriesUntilConverged(t *testing.T) {
	g := runningRig(t)
	g.dp.FailNext("SetBgpPeerMAC", 4)
	g.sp.ev.Session(true)
	faulttest.Eventually(t, "peer MAC set", func() bool { _, mac, _ := g.dp.state(""); return mac == "02:00:00:00:00:09" })
	wantCount(t, "failed attempts", g.failed(KindPeer), 4)
}

// Removing the configuration stops the speaker; flushing its routes fails
// twice, clearing the peer once, clearing the datapath's port twice and
// deleting inb01 three times: the key is retried until all are done.
func TestStopCleanupRetriesUntilConverged(t *testing.T) {
	g := runningRig(t)
	g.sp.ev.Route(netip.MustParsePrefix("198.19.0.0/16"), true)
	g.sp.ev.Session(true)
	faulttest.Eventually(t, "route and peer", func() bool { _, mac, ok := g.dp.state("198.19.0.0/16"); return ok && mac != "" })
	g.dp.FailNext("FlushBgpRoutes", 2)
	g.dp.FailNext("SetBgpPeerMAC", 1)
	g.dp.FailNext("SetBgpPort", 2)
	g.ports.FailNext("DeleteEndpoint", 3)
	g.configure(nil)
	faulttest.Eventually(t, "cleaned up", func() bool {
		port, mac, route := g.dp.state("198.19.0.0/16")
		return port == 0 && mac == "" && !route && !g.ports.exists() && g.q.Len() == 0
	})
	if g.Reconciler.running() {
		t.Error("speaker still running")
	}
	wantCount(t, "failed attempts (the longest step)", g.failed(KindConfig), 3)
	wantCount(t, "FlushBgpRoutes calls (a done step is not repeated)", g.dp.Count("FlushBgpRoutes"), 3)
}

// A speaker that fails to start has its port taken apart, and the start is
// retried until it runs.
func TestStartRetriedAfterFailure(t *testing.T) {
	g := newRig(t)
	g.sp.FailNext("Start", 2)
	g.configure(entry)
	faulttest.Eventually(t, "speaker running", g.Reconciler.running)
	wantCount(t, "inb01 deletions after failed starts", g.ports.Count("DeleteEndpoint"), 2)
	if port, _, _ := g.dp.state(""); port != 9 || !g.ports.exists() {
		t.Errorf("port %d, inb01 %v after the start converged", port, g.ports.exists())
	}
}

// wantCount fails the test unless the count of what is want.
func wantCount(t *testing.T, what string, got, want int) {
	t.Helper()
	if got != want {
		t.Errorf("%s: %d, want %d", what, got, want)
	}
}
