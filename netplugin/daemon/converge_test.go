package daemon

import (
	"context"
	"net/netip"
	"sync"
	"testing"

	"github.com/contiv/netplugin/netplugin/ovsdriver"
	"github.com/contiv/netplugin/state"
)

// The side effects that once only logged a failure (issue 25 item 3) go
// through the reconcile queue: each test injects N failures and sees the
// key converge (host access: netplugin/hostaccess).

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
