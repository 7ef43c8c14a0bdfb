package daemon

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contiv/netplugin/netplugin/follow"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/contivmodel/modeltest"
	"github.com/contiv/netplugin/netplugin/nameserver"
	"github.com/contiv/netplugin/netplugin/reconcile"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/state"
	"github.com/contiv/netplugin/utils/faulttest"
	"github.com/contiv/netplugin/utils/logtest"
)

// testDaemon is a Daemon on fakes (or on what the test gives it), its
// reconcilers served until the test ends.
type testDaemon struct {
	*Daemon
	vx, vl datapath
	drv    switchDriver

	mu       sync.Mutex
	failures map[string]int // failed reconciles by kind
	cancel   context.CancelFunc
	done     chan struct{}
}

// testLog is silent unless the test runs with -v.
func testLog(t testing.TB) logrus.FieldLogger { return logtest.New(t, logrus.DebugLevel) }

// newTestDaemon builds a daemon on the given datapaths and driver with a
// fast backoff (1 ms to 20 ms) and no resync unless resync > 0.
func newTestDaemon(t testing.TB, vx, vl datapath, drv switchDriver, resync time.Duration) *testDaemon {
	t.Helper()
	log := testLog(t)
	d := &Daemon{cfg: Config{HostLabel: "host1", VtepIP: "198.18.0.1", VxlanPort: 4789, OVSDatapath: "system"},
		log: log, st: state.New(modeltest.NewMemKV()), drv: drv, vx: vx, vl: vl,
		pmtuPeers: make(chan string, 64), names: nameserver.New()}
	td := &testDaemon{Daemon: d, vx: vx, vl: vl, drv: drv, failures: map[string]int{}}
	d.rec = reconcile.New(log, time.Millisecond, 20*time.Millisecond)
	d.rec.Resync = resync
	d.rec.Failed = func(kind string) {
		td.mu.Lock()
		td.failures[kind]++
		td.mu.Unlock()
	}
	d.eps = d.newAttachService()
	d.newReconcilers()
	d.want.peers = &follow.Services{Name: "netplugin.vtep"}
	d.vtep.SetLive(d.want.peers)
	return td
}

// start serves the queue with its workers until stop or the test's end.
func (td *testDaemon) start(t testing.TB) {
	ctx, cancel := context.WithCancel(context.Background())
	td.cancel, td.done = cancel, make(chan struct{})
	go func() {
		defer close(td.done)
		td.rec.Run(ctx, reconcile.Workers)
	}()
	t.Cleanup(td.stop)
}

// stop cancels the workers and waits for them.
func (td *testDaemon) stop() {
	if td.cancel == nil {
		return
	}
	td.cancel()
	<-td.done
}

func (td *testDaemon) failed(kind string) int {
	td.mu.Lock()
	defer td.mu.Unlock()
	return td.failures[kind]
}

func vxlanNet(id string, vlan, vni int) state.Network {
	return state.Network{Common: state.Common{ID: id}, Tenant: "t1", NetworkName: strings.Split(id, ".")[0],
		PktTagType: "vxlan", PktTag: vlan, ExtPktTag: vni, Gateway: "198.18.10.1", SubnetLen: 24}
}

func (td *testDaemon) putNetwork(nw state.Network) {
	td.want.nets.Apply(context.Background(), nw.ID, &nw)
}

func (td *testDaemon) delNetwork(id string) {
	td.want.nets.Apply(context.Background(), id, nil)
}

func TestReconcileNetworkPut(t *testing.T) {
	for _, tc := range []struct {
		name     string
		failures int
	}{
		{"first try", 0},
		{"flow install fails 3 times", 3},
		{"flow install fails 8 times", 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vx, vl := newFakeDatapath(), newFakeDatapath()
			td := newTestDaemon(t, vx, vl, newFakeDriver(), 0)
			vx.FailNext("AddNetwork", tc.failures)
			td.start(t)
			td.putNetwork(vxlanNet("n1.t1", 100, 5000))
			faulttest.Eventually(t, "network n1 in the datapath", func() bool { return vx.hasNetwork(100) })
			td.stop()
			if got := vx.Count("AddNetwork"); got != tc.failures+1 {
				t.Errorf("AddNetwork called %d times, want %d", got, tc.failures+1)
			}
			if got := td.failed(kindNetwork); got != tc.failures {
				t.Errorf("%d failures counted, want %d", got, tc.failures)
			}
			if vl.hasNetwork(100) {
				t.Error("a VXLAN network reached the VLAN bridge")
			}
			if _, ok := td.nets.KnownNetwork("n1.t1"); !ok {
				t.Error("network not known to the attach path")
			}
		})
	}
}

func TestReconcileDeleteAfterFailedPut(t *testing.T) {
	vx := newFakeDatapath()
	td := newTestDaemon(t, vx, newFakeDatapath(), newFakeDriver(), 0)
	vx.FailNext("AddNetwork", -1)
	td.start(t)
	td.putNetwork(vxlanNet("n1.t1", 100, 5000))
	faulttest.Eventually(t, "two failed attempts", func() bool { return vx.Count("AddNetwork") >= 2 })
	td.delNetwork("n1.t1")
	faulttest.Eventually(t, "network forgotten", func() bool {
		_, known := td.nets.KnownNetwork("n1.t1")
		return !known && td.rec.Len() == 0
	})
	// Once deleted, the key converges: no more attempts.
	n := vx.Count("AddNetwork")
	time.Sleep(100 * time.Millisecond)
	if got := vx.Count("AddNetwork"); got != n {
		t.Errorf("AddNetwork still retried after the delete: %d → %d calls", n, got)
	}
	if vx.hasNetwork(100) || vx.Count("RemoveNetwork") != 0 {
		t.Errorf("network in datapath %v, RemoveNetwork calls %d", vx.hasNetwork(100), vx.Count("RemoveNetwork"))
	}
}

func TestReconcileNetworkDeleteRetried(t *testing.T) {
	vx := newFakeDatapath()
	td := newTestDaemon(t, vx, newFakeDatapath(), newFakeDriver(), 0)
	td.start(t)
	td.putNetwork(vxlanNet("n1.t1", 100, 5000))
	faulttest.Eventually(t, "network added", func() bool { return vx.hasNetwork(100) })
	vx.FailNext("RemoveNetwork", 4)
	td.delNetwork("n1.t1")
	faulttest.Eventually(t, "network removed", func() bool { return !vx.hasNetwork(100) })
	if got := vx.Count("RemoveNetwork"); got != 5 {
		t.Errorf("RemoveNetwork called %d times, want 5", got)
	}
}

func TestReconcileNetworkRecreatedWithOtherSegment(t *testing.T) {
	vx := newFakeDatapath()
	td := newTestDaemon(t, vx, newFakeDatapath(), newFakeDriver(), 0)
	td.start(t)
	td.putNetwork(vxlanNet("n1.t1", 100, 5000))
	faulttest.Eventually(t, "network added", func() bool { return vx.hasNetwork(100) })
	td.putNetwork(vxlanNet("n1.t1", 101, 5001))
	faulttest.Eventually(t, "segment moved", func() bool { return vx.hasNetwork(101) && !vx.hasNetwork(100) })
}

// localEndpointFor adds a local endpoint of network nw on a fake port.
func (td *testDaemon) localEndpointFor(t *testing.T, id, group string, nw state.Network) *localEndpoint {
	t.Helper()
	ep := state.Endpoint{Common: state.Common{ID: id}, NetID: nw.ID, EndpointGroupKey: group, HomingHost: "host1",
		IPAddress: "198.18.10.5", MacAddress: "02:02:c6:12:0a:05", EndpointID: "c1"}
	le, err := td.addLocal(context.Background(), ep, nw)
	if err != nil {
		t.Fatal(err)
	}
	td.want.eps.Apply(context.Background(), id, &ep)
	return le
}

func TestReconcileEndpointRemovalRetried(t *testing.T) {
	vx, drv := newFakeDatapath(), newFakeDriver()
	td := newTestDaemon(t, vx, newFakeDatapath(), drv, 0)
	td.start(t)
	nw := vxlanNet("n1.t1", 100, 5000)
	td.putNetwork(nw)
	le := td.localEndpointFor(t, "n1.t1-c1", "", nw)
	if !drv.hasPort(le.Port.PortName) {
		t.Fatal("no port")
	}
	drv.FailNext("DeleteEndpoint", 3)
	// netmaster deletes the endpoint behind netplugin's back.
	td.want.eps.Apply(context.Background(), "n1.t1-c1", nil)
	faulttest.Eventually(t, "port and flows gone", func() bool {
		td.Daemon.mu.Lock()
		local := td.eps.Has("n1.t1-c1")
		td.Daemon.mu.Unlock()
		return !local && !drv.hasPort(le.Port.PortName)
	})
	if got := drv.Count("DeleteEndpoint"); got != 4 {
		t.Errorf("DeleteEndpoint called %d times, want 4", got)
	}
	if got := td.failed(kindEndpoint); got != 3 {
		t.Errorf("%d endpoint failures counted, want 3", got)
	}
	vx.mu.Lock()
	_, flows := vx.locals[le.Port.OFPort]
	vx.mu.Unlock()
	if flows {
		t.Error("the endpoint's flows are still in the datapath")
	}
}

func TestReconcileGroupQoS(t *testing.T) {
	vx, drv := newFakeDatapath(), newFakeDriver()
	td := newTestDaemon(t, vx, newFakeDatapath(), drv, 0)
	td.start(t)
	nw := vxlanNet("n1.t1", 100, 5000)
	td.putNetwork(nw)
	g := state.EndpointGroup{Common: state.Common{ID: "web:t1"}, GroupName: "web", TenantName: "t1", NetworkName: "n1"}
	td.want.groups.Apply(context.Background(), g.ID, &g)
	faulttest.Eventually(t, "group known", func() bool {
		_, ok := td.nets.Group(g.ID)
		return ok
	})
	le := td.localEndpointFor(t, "n1.t1-c1", g.ID, nw)
	drv.FailNext("UpdatePolicing", 2)
	vx.FailNext("UpdateLocalEndpoint", 2)
	g.Bandwidth, g.Burst, g.DSCP = "10Mbps", 100, 10
	td.want.groups.Apply(context.Background(), g.ID, &g)
	faulttest.Eventually(t, "QoS applied", func() bool {
		drv.mu.Lock()
		pol := drv.policing[le.Port.PortName]
		drv.mu.Unlock()
		vx.mu.Lock()
		dscp := vx.locals[le.Port.OFPort].Dscp
		vx.mu.Unlock()
		return pol == "10Mbps/100" && dscp == 10
	})
	faulttest.Eventually(t, "queue idle", func() bool { return td.rec.Len() == 0 })
	if got := td.failed(kindGroup); got != 4 {
		t.Errorf("%d group failures counted, want 4", got)
	}
}

func TestReconcileServiceAndProviders(t *testing.T) {
	vx, vl := newFakeDatapath(), newFakeDatapath()
	td := newTestDaemon(t, vx, vl, newFakeDriver(), 0)
	td.start(t)
	vl.FailNext("AddSvcSpec", 2)
	vx.FailNext("SvcProviderUpdate", 2)
	s := state.ServiceLB{Common: state.Common{ID: "web:t1"}, ServiceName: "web", Tenant: "t1", IPAddress: "198.19.3.100",
		Ports: []string{"80:8080:tcp"}}
	td.want.svcs.Apply(context.Background(), s.ID, &s)
	p := state.SvcProvider{Common: state.Common{ID: "web:t1"}, ServiceName: "web:t1", Providers: []string{"198.18.10.5"}}
	td.want.provs.Apply(context.Background(), p.ID, &p)
	has := func(a *fakeDatapath) bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		_, svc := a.services["web:t1"]
		return svc && len(a.providers["web:t1"]) == 1
	}
	faulttest.Eventually(t, "service and providers in both datapaths", func() bool { return has(vx) && has(vl) })
	td.want.svcs.Apply(context.Background(), s.ID, nil)
	td.want.provs.Apply(context.Background(), p.ID, nil)
	gone := func(a *fakeDatapath) bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		_, svc := a.services["web:t1"]
		return !svc && len(a.providers["web:t1"]) == 0
	}
	faulttest.Eventually(t, "service gone", func() bool { return gone(vx) && gone(vl) })
}

func TestReconcileMalformedServiceNotRetried(t *testing.T) {
	vx := newFakeDatapath()
	td := newTestDaemon(t, vx, newFakeDatapath(), newFakeDriver(), 0)
	td.start(t)
	s := state.ServiceLB{Common: state.Common{ID: "web:t1"}, Tenant: "t1", IPAddress: "198.19.3.100", Ports: []string{"80"}}
	td.want.svcs.Apply(context.Background(), s.ID, &s)
	faulttest.Eventually(t, "queue idle", func() bool { return td.rec.Len() == 0 })
	time.Sleep(50 * time.Millisecond)
	if vx.Count("AddSvcSpec") != 0 || td.failed(kindService) != 0 {
		t.Errorf("malformed service reached the datapath (%d) or was retried (%d)", vx.Count("AddSvcSpec"), td.failed(kindService))
	}
}

func TestReconcileVtep(t *testing.T) {
	vx, drv := newFakeDatapath(), newFakeDriver()
	td := newTestDaemon(t, vx, newFakeDatapath(), drv, 0)
	td.start(t)
	drv.FailNext("EnsureVTEP", 3) // the OVSDB transaction fails
	peer := objdb.ServiceInfo{ServiceName: "netplugin.vtep", HostAddr: "198.18.0.2", Port: 4789}
	peers := td.want.peers
	peers.Set(peer, true)
	td.vtepEvent(context.Background(), peer)
	faulttest.Eventually(t, "tunnel in OVS and the datapath", func() bool {
		_, inOVS := drv.vtep("198.18.0.2")
		vx.mu.Lock()
		_, inDP := vx.vteps["198.18.0.2"]
		vx.mu.Unlock()
		return inOVS && inDP
	})
	peers.Set(peer, false)
	drv.FailNext("DeleteVTEP", 2)
	td.vtepEvent(context.Background(), peer)
	faulttest.Eventually(t, "tunnel removed", func() bool {
		_, inOVS := drv.vtep("198.18.0.2")
		vx.mu.Lock()
		_, inDP := vx.vteps["198.18.0.2"]
		vx.mu.Unlock()
		return !inOVS && !inDP
	})
	// The own VTEP never gets a tunnel.
	td.vtepEvent(context.Background(), objdb.ServiceInfo{HostAddr: "198.18.0.1"})
	faulttest.Eventually(t, "queue idle", func() bool { return td.rec.Len() == 0 })
	if _, ok := drv.vtep("198.18.0.1"); ok {
		t.Error("tunnel to this host's own VTEP")
	}
}

func TestReconcileGlobalArpMode(t *testing.T) {
	vx, vl := newFakeDatapath(), newFakeDatapath()
	td := newTestDaemon(t, vx, vl, newFakeDriver(), 0)
	td.applied.arpMode = "proxy"
	td.start(t)
	vl.FailNext("SetArpMode", 2)
	g := state.GlobConfig{ID: "global", ArpMode: "flood"}
	td.want.glob.Apply(context.Background(), "global", &g)
	faulttest.Eventually(t, "flood on both bridges", func() bool {
		vx.mu.Lock()
		a := vx.arpMode
		vx.mu.Unlock()
		vl.mu.Lock()
		b := vl.arpMode
		vl.mu.Unlock()
		return a == "flood" && b == "flood"
	})
}

// Cancelling the context stops the workers, even with a key that keeps
// failing: no attempt after run returned.
func TestReconcileStopsOnCancel(t *testing.T) {
	vx := newFakeDatapath()
	td := newTestDaemon(t, vx, newFakeDatapath(), newFakeDriver(), 0)
	vx.FailNext("AddNetwork", -1)
	td.start(t)
	td.putNetwork(vxlanNet("n1.t1", 100, 5000))
	faulttest.Eventually(t, "failing attempts", func() bool { return vx.Count("AddNetwork") >= 3 })
	stopped := make(chan struct{})
	go func() { td.stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("workers did not stop")
	}
	n := vx.Count("AddNetwork")
	time.Sleep(100 * time.Millisecond)
	if got := vx.Count("AddNetwork"); got != n {
		t.Errorf("attempts after stop: %d → %d", n, got)
	}
	if !td.rec.ShuttingDown() {
		t.Error("queue not shut down")
	}
}

// A key that keeps failing is retried with a growing delay, not in a busy
// loop: with delays 1, 2, 4... capped at 20 ms, 300 ms hold about 20
// attempts; a busy loop would make thousands.
func TestReconcileNoBusyLoop(t *testing.T) {
	vx := newFakeDatapath()
	td := newTestDaemon(t, vx, newFakeDatapath(), newFakeDriver(), 0)
	vx.FailNext("AddNetwork", -1)
	td.start(t)
	td.putNetwork(vxlanNet("n1.t1", 100, 5000))
	time.Sleep(300 * time.Millisecond)
	td.stop()
	n := vx.Count("AddNetwork")
	if n < 3 || n > 100 {
		t.Errorf("%d attempts in 300 ms, want a few dozen at most and several at least", n)
	}
	if got := td.rec.Retries("network/n1.t1"); got < n-1 {
		t.Errorf("the rate limiter saw %d requeues for %d failures", got, n)
	}
}

// drain reconciles what waits now in the caller's goroutine (the replay),
// leaving failed keys for the workers.
func TestReconcileDrain(t *testing.T) {
	vx := newFakeDatapath()
	td := newTestDaemon(t, vx, newFakeDatapath(), newFakeDriver(), 0)
	vx.FailNext("AddNetwork", 1)
	td.putNetwork(vxlanNet("n1.t1", 100, 5000))
	td.putNetwork(vxlanNet("n2.t1", 200, 5001))
	td.rec.Drain(context.Background())
	if vx.Count("AddNetwork") != 2 {
		t.Fatalf("drain made %d attempts, want 2", vx.Count("AddNetwork"))
	}
	if vx.hasNetwork(100) == vx.hasNetwork(200) {
		t.Fatal("want exactly one network added by the drain")
	}
	td.start(t)
	faulttest.Eventually(t, "failed one retried by the workers", func() bool { return vx.hasNetwork(100) && vx.hasNetwork(200) })
}

// The global settings the reconciler follows can change while the inspect
// handlers and the BGP reconciler read the forwarding mode (run with -race).
func TestReconcileGlobalConcurrentReaders(t *testing.T) {
	td := newTestDaemon(t, newFakeDatapath(), newFakeDatapath(), newFakeDriver(), 0)
	td.glob = state.GlobConfig{ID: "global", FwdMode: "bridge", PvtSubnet: "172.19.0.0/16"}
	td.applied.arpMode = "proxy"
	td.start(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			if td.vlanRouting() {
				t.Error("VLAN bridge routes in bridge mode")
				return
			}
			rec := httptest.NewRecorder()
			td.inspectBgp(rec, httptest.NewRequest(http.MethodGet, "/inspect/bgp", nil))
			if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "forwarding mode bridge") {
				t.Errorf("/inspect/bgp: %d %q", rec.Code, rec.Body.String())
				return
			}
		}
	}()
	for i := range 50 {
		g := state.GlobConfig{ID: "global", FwdMode: "bridge", PvtSubnet: "172.19.0.0/16", ArpMode: []string{"flood", "proxy"}[i%2]}
		td.want.glob.Apply(context.Background(), "global", &g)
		time.Sleep(time.Millisecond)
	}
	faulttest.Eventually(t, "queue idle", func() bool { return td.rec.Len() == 0 })
	cancel()
	wg.Wait()
}

// A peer whose netplugin.vtep entry expired (its agent is down) keeps its
// tunnel while the store holds its endpoints or its node record; it is
// removed once both are gone (docs/architecture.md, "Headless dataplane").
func TestVtepFollowsMembershipNotLiveness(t *testing.T) {
	vx, drv := newFakeDatapath(), newFakeDriver()
	td := newTestDaemon(t, vx, newFakeDatapath(), drv, 0)
	td.start(t)
	ctx := context.Background()
	const ip = "198.18.0.2"
	tunnel := func() bool {
		_, inOVS := drv.vtep(ip)
		vx.mu.Lock()
		_, inDP := vx.vteps[ip]
		vx.mu.Unlock()
		return inOVS && inDP
	}
	settle := func() {
		faulttest.Eventually(t, "queue idle", func() bool { return td.rec.Len() == 0 })
		time.Sleep(50 * time.Millisecond)
	}
	peer := objdb.ServiceInfo{ServiceName: "netplugin.vtep", HostAddr: ip, Port: 4789, Hostname: "host2"}
	peers := td.want.peers
	setLive := func(live bool) {
		peers.Set(peer, live)
		td.vtepEvent(ctx, peer)
	}
	ep := state.Endpoint{Common: state.Common{ID: "net1-ep1"}, HomingHost: "host2", VtepIP: ip}
	node := state.Node{Common: state.Common{ID: "host2"}, Hostname: "host2", VtepIP: ip}

	setLive(true)
	td.want.eps.Apply(ctx, ep.ID, &ep)
	td.want.nodes.Apply(ctx, node.ID, &node)
	faulttest.Eventually(t, "tunnel to the live peer", tunnel)

	setLive(false) // the agent stops: its lease runs out
	settle()
	if !tunnel() {
		t.Fatal("tunnel removed when the peer's agent stopped, although its endpoints and node record are in the store")
	}
	td.want.eps.Apply(ctx, ep.ID, nil)
	settle()
	if !tunnel() {
		t.Fatal("tunnel removed while the peer's node record exists")
	}
	td.want.eps.Apply(ctx, ep.ID, &ep)
	td.want.nodes.Apply(ctx, node.ID, nil)
	settle()
	if !tunnel() {
		t.Fatal("tunnel removed while the peer's endpoints are in the store")
	}
	td.want.eps.Apply(ctx, ep.ID, nil) // host GC: endpoints and record gone
	faulttest.Eventually(t, "tunnel removed once the peer left the cluster", func() bool {
		_, inOVS := drv.vtep(ip)
		return !inOVS
	})
	// A node record alone brings the tunnel up (a peer that restarts
	// without registering yet) and the periodic resync keeps it.
	td.want.nodes.Apply(ctx, node.ID, &node)
	faulttest.Eventually(t, "tunnel to a member without a live agent", tunnel)
	for _, k := range td.allKeys() {
		if k == kindVtep+"/"+ip {
			return
		}
	}
	t.Errorf("resync keys miss the member's tunnel: %v", td.allKeys())
}
