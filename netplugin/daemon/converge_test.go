package daemon

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"testing"

	"github.com/contiv/netplugin/netplugin/hostnat"
	"github.com/contiv/netplugin/netplugin/ovsdriver"
	"github.com/contiv/netplugin/state"
)

// The side effects that once ran a single time and only logged a failure
// (issue 25 item 3) go through the reconcile queue: each test here injects
// N failures and sees the key converge.

// fakeIPTables keeps one masquerade rule and fails the next N calls of an
// operation ("-A", "-D").
type fakeIPTables struct {
	mu   sync.Mutex
	fail map[string]int
	rule bool
}

func (f *fakeIPTables) run(_ context.Context, _ string, args ...string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	op := args[4] // -w 5 -t nat <op> <rule...>
	if f.fail[op] > 0 {
		f.fail[op]--
		return []byte("iptables: Resource temporarily unavailable."), errInjected
	}
	switch op {
	case "-C":
		if !f.rule {
			return []byte("iptables: Bad rule."), errors.New("exit status 1")
		}
	case "-A":
		f.rule = true
	case "-D":
		f.rule = false
	}
	return nil, nil
}

func (f *fakeIPTables) has() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rule
}

func (td *testDaemon) hostAccessState() string {
	td.Daemon.mu.Lock()
	defer td.Daemon.mu.Unlock()
	return td.applied.hostAccess
}

// Host access on: the host port fails 3 times, the datapath 2, the NAT
// rule 2; the key converges with all three in place after 7 failures.
func TestHostAccessRetriesUntilOn(t *testing.T) {
	vx, drv := newFakeDatapath(), newFakeDriver()
	td := newTestDaemon(t, vx, newFakeDatapath(), drv, 0)
	td.cfg.HostAccess = true
	td.glob = state.GlobConfig{ID: "global", FwdMode: "routing", PvtSubnet: "172.19.0.0/16"}
	ipt := &fakeIPTables{fail: map[string]int{"-A": 2}}
	td.natOpts = hostnat.Config{Backend: hostnat.BackendIPTables, Run: ipt.run}
	drv.failNext("EnsureHostPort", 3)
	vx.failNext("SetHostAccess", 2)
	td.start(t)
	td.rec.Enqueue(kindHostAccess, td.cfg.HostLabel)
	eventually(t, "host access on", func() bool { return td.hostAccessState() == hostAccessOn })
	if !ipt.has() {
		t.Error("no masquerade rule")
	}
	if got := td.failed(kindHostAccess); got != 7 {
		t.Errorf("%d failed attempts, want 7", got)
	}
	if got := vx.count("SetHostAccess"); got != 5 {
		t.Errorf("SetHostAccess called %d times, want 5 (2 failures, then every later attempt)", got)
	}
	// Converged: a resync of the key does nothing more.
	n := drv.count("EnsureHostPort")
	td.rec.Enqueue(kindHostAccess, td.cfg.HostLabel)
	eventually(t, "queue idle", func() bool { return td.rec.Len() == 0 })
	td.stop()
	if got := drv.count("EnsureHostPort"); got != n {
		t.Errorf("a converged key ran again: EnsureHostPort %d → %d", n, got)
	}
	td.cleanupHostAccess()
	if ipt.has() {
		t.Error("the masquerade rule survived the shutdown")
	}
}

// Host access off: a rule a previous run left is removed even when its
// deletion fails twice; host access asked for in bridge mode is reported
// and not retried.
func TestHostAccessOffAndIgnored(t *testing.T) {
	drv := newFakeDriver()
	td := newTestDaemon(t, newFakeDatapath(), newFakeDatapath(), drv, 0)
	td.glob = state.GlobConfig{ID: "global", FwdMode: "routing", PvtSubnet: "172.19.0.0/16"}
	ipt := &fakeIPTables{fail: map[string]int{"-D": 2}, rule: true}
	td.natOpts = hostnat.Config{Backend: hostnat.BackendIPTables, Run: ipt.run}
	td.start(t)
	td.rec.Enqueue(kindHostAccess, td.cfg.HostLabel)
	eventually(t, "host access off", func() bool { return td.hostAccessState() == hostAccessOff })
	if ipt.has() || td.failed(kindHostAccess) != 2 {
		t.Errorf("left-over rule present %v after %d failures, want removed after 2", ipt.has(), td.failed(kindHostAccess))
	}

	vx := newFakeDatapath()
	td2 := newTestDaemon(t, vx, newFakeDatapath(), newFakeDriver(), 0)
	td2.cfg.HostAccess = true
	td2.glob = state.GlobConfig{ID: "global", FwdMode: "bridge", PvtSubnet: "172.19.0.0/16"}
	td2.start(t)
	td2.rec.Enqueue(kindHostAccess, td2.cfg.HostLabel)
	eventually(t, "host access ignored", func() bool { return td2.hostAccessState() == hostAccessIgnored })
	if vx.count("SetHostAccess") != 0 || td2.failed(kindHostAccess) != 0 {
		t.Errorf("bridge mode: SetHostAccess %d, failures %d, want none", vx.count("SetHostAccess"), td2.failed(kindHostAccess))
	}
}

// fakeAnnouncer is a BGP speaker whose next N announcements or withdrawals
// fail.
type fakeAnnouncer struct {
	*faults
	mu  sync.Mutex
	out map[netip.Addr]bool
}

func (f *fakeAnnouncer) Announce(_ context.Context, a netip.Addr) error {
	if err := f.call("Announce"); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.out[a] = true
	return nil
}

func (f *fakeAnnouncer) Withdraw(_ context.Context, a netip.Addr) error {
	if err := f.call("Withdraw"); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.out, a)
	return nil
}

func (f *fakeAnnouncer) has(a netip.Addr) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.out[a]
}

// A local VLAN endpoint's announcement fails 3 times and its withdrawal 2
// times; both converge.
func TestBgpRouteRetriesUntilConverged(t *testing.T) {
	td := newTestDaemon(t, newFakeDatapath(), newFakeDatapath(), newFakeDriver(), 0)
	sp := &fakeAnnouncer{faults: newFaults(), out: map[netip.Addr]bool{}}
	td.bgp.routes, td.bgp.announced = sp, map[netip.Addr]bool{}
	sp.failNext("Announce", 3)
	sp.failNext("Withdraw", 2)
	le := &localEndpoint{bridge: ovsdriver.VlanBridge, ep: state.Endpoint{Common: state.Common{ID: "v1.t1-c1"}, IPAddress: "198.18.7.10"}}
	a := netip.MustParseAddr("198.18.7.10")
	td.start(t)

	td.Daemon.mu.Lock()
	td.locals[le.ep.ID] = le
	td.Daemon.mu.Unlock()
	td.bgpEndpoint(le)
	eventually(t, "announced", func() bool { return sp.has(a) })
	if got := td.failed(kindBgpRoute); got != 3 {
		t.Errorf("%d failed announcements, want 3", got)
	}
	if keys := td.bgpRouteKeys(); len(keys) != 1 || keys[0] != "bgproute/198.18.7.10" {
		t.Errorf("resync keys %v", keys)
	}

	td.Daemon.mu.Lock()
	delete(td.locals, le.ep.ID)
	td.Daemon.mu.Unlock()
	td.bgpEndpoint(le)
	eventually(t, "withdrawn", func() bool { return !sp.has(a) && td.rec.Len() == 0 })
	if got := td.failed(kindBgpRoute); got != 5 {
		t.Errorf("%d failed attempts in all, want 5", got)
	}
	if got := sp.count("Announce"); got != 4 {
		t.Errorf("Announce called %d times, want 4", got)
	}
	td.Daemon.mu.Lock()
	td.locals["vx"] = &localEndpoint{bridge: ovsdriver.VxlanBridge, ep: state.Endpoint{Common: state.Common{ID: "vx"}, IPAddress: "198.18.8.1"}}
	td.Daemon.mu.Unlock()
	if keys := td.bgpRouteKeys(); len(keys) != 0 {
		t.Errorf("resync keys %v, want none (VXLAN endpoints are not announced)", keys)
	}
}
