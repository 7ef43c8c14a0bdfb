package remotesweep

import (
	"context"
	"maps"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/ofnet/ofrpc"
	"github.com/contiv/netplugin/state"
	"github.com/contiv/netplugin/utils/faulttest"
	"github.com/contiv/netplugin/utils/logtest"
)

// fakeAgent holds the remote endpoints masters sent; a removal takes a
// version no older than the one held, as the agent does.
type fakeAgent struct {
	mu      sync.Mutex
	remotes map[string]ofrpc.OfnetEndpoint // by endpoint id
}

func newFakeAgent() *fakeAgent { return &fakeAgent{remotes: map[string]ofrpc.OfnetEndpoint{}} }

func (a *fakeAgent) RemoteEndpoints() []ofrpc.OfnetEndpoint {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Collect(maps.Values(a.remotes))
}

func (a *fakeAgent) RemoveRemoteEndpoint(_ context.Context, ep ofrpc.OfnetEndpoint) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if old, ok := a.remotes[ep.EndpointID]; ok && !old.Timestamp.After(ep.Timestamp) {
		delete(a.remotes, ep.EndpointID)
	}
	return nil
}

func (a *fakeAgent) hasRemote(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.remotes[id]
	return ok
}

func (a *fakeAgent) putRemote(r ofrpc.OfnetEndpoint) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.remotes[r.EndpointID] = r
}

// fakeRecords is the store's endpoint records and the follower's cache of
// them at once (the cache follows at once).
type fakeRecords struct {
	mu   sync.Mutex
	recs map[string]state.Endpoint
}

func (f *fakeRecords) ReadAll(context.Context) ([]state.Endpoint, int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Collect(maps.Values(f.recs)), 1, nil
}

func (f *fakeRecords) IDs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Collect(maps.Keys(f.recs))
}

func (f *fakeRecords) Get(id string) (state.Endpoint, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ep, ok := f.recs[id]
	return ep, ok
}

func (f *fakeRecords) put(ep state.Endpoint) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recs[ep.ID] = ep
}

// del removes a record and returns it (the follower's deletion).
func (f *fakeRecords) del(id string) state.Endpoint {
	f.mu.Lock()
	defer f.mu.Unlock()
	ep := f.recs[id]
	delete(f.recs, id)
	return ep
}

// newTestSweeper sweeps the remote endpoints of vx and an empty second
// agent on host1, with the defaults' knobs.
func newTestSweeper(t *testing.T, vx *fakeAgent) (*Sweeper, *fakeRecords) {
	recs := &fakeRecords{recs: map[string]state.Endpoint{}}
	agents := []Agent{vx, newFakeAgent()}
	return New(Config{HostLabel: "host1", Agents: func() []Agent { return agents }, Records: recs, Cached: recs,
		Periodic: func(context.Context, []state.Endpoint) {}, Interval: time.Minute, Grace: 5 * time.Second,
		KickGap: 10 * time.Second, Log: logtest.New(t, logrus.DebugLevel)}), recs
}

// A remote endpoint whose deletion never reached the agent goes on the
// second sweep that finds no record for it; one the store holds stays, and
// a version first seen unbacked is given one more sweep.
func TestDropStaleRemotes(t *testing.T) {
	vx := newFakeAgent()
	s, _ := newTestSweeper(t, vx)
	ctx := context.Background()
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	remote := func(id, ip, vrf string) ofrpc.OfnetEndpoint {
		return ofrpc.OfnetEndpoint{EndpointID: id, IpAddr: net.ParseIP(ip), Vrf: vrf, Timestamp: t0}
	}
	vx.remotes["198.19.1.5:blue"] = remote("198.19.1.5:blue", "198.19.1.5", "blue") // record exists
	vx.remotes["198.19.1.6:blue"] = remote("198.19.1.6:blue", "198.19.1.6", "blue") // deleted in the store
	vx.remotes["198.19.1.7:red"] = remote("198.19.1.7:red", "198.19.1.7", "red")    // same address, other tenant's record
	all := []state.Endpoint{
		{Common: state.Common{ID: "web.blue-a"}, NetID: "web.blue", IPAddress: "198.19.1.5"},
		{Common: state.Common{ID: "web.blue-b"}, NetID: "web.blue", IPAddress: "198.19.1.7"},
	}
	if n, err := s.dropStale(ctx, all, time.Now()); err != nil || n != 0 {
		t.Fatalf("first sweep removed %d (%v), want 0: an unbacked remote gets one more sweep", n, err)
	}
	// The stale one is re-sent by a master with a newer version in between:
	// that version starts its own count.
	newer := remote("198.19.1.7:red", "198.19.1.7", "red")
	newer.Timestamp = t0.Add(time.Second)
	vx.remotes["198.19.1.7:red"] = newer
	if n, err := s.dropStale(ctx, all, time.Now()); err != nil || n != 1 {
		t.Fatalf("second sweep removed %d (%v), want 1", n, err)
	}
	if _, ok := vx.remotes["198.19.1.6:blue"]; ok {
		t.Error("the remote the store no longer holds stayed")
	}
	if _, ok := vx.remotes["198.19.1.5:blue"]; !ok {
		t.Error("a remote the store holds was removed")
	}
	if _, ok := vx.remotes["198.19.1.7:red"]; !ok {
		t.Error("a newer version was removed on its first unbacked sweep")
	}
	if n, _ := s.dropStale(ctx, all, time.Now()); n != 1 {
		t.Errorf("third sweep removed %d, want the newer unbacked version (1)", n)
	}
	// A store listing that failed removes nothing: sweepLoop skips the sweep.
}

// fakeRemote is a remote endpoint as a master sends it.
func fakeRemote(ip, vrf string, ts time.Time) ofrpc.OfnetEndpoint {
	return ofrpc.OfnetEndpoint{EndpointID: ip + ":" + vrf, IpAddr: net.ParseIP(ip), Vrf: vrf, Timestamp: ts}
}

// TestDeletedRecordsRemoteRemovedEarly: a remote endpoint still held after
// the store watch reported its record deleted goes with an early sweep,
// before the next periodic one (an hour here), which alone runs Periodic;
// one whose address a re-created record holds, and one whose record stays,
// are not touched.
func TestDeletedRecordsRemoteRemovedEarly(t *testing.T) {
	vx := newFakeAgent()
	s, recs := newTestSweeper(t, vx)
	s.cfg.Interval, s.cfg.Grace, s.cfg.KickGap = time.Hour, 50*time.Millisecond, 20*time.Millisecond
	var periodic atomic.Int32
	s.cfg.Periodic = func(context.Context, []state.Endpoint) { periodic.Add(1) }
	ctx, cancel := context.WithCancel(context.Background())
	t0 := time.Now()
	rec := func(id, ip string) state.Endpoint {
		return state.Endpoint{Common: state.Common{ID: id}, NetID: "web.blue", IPAddress: ip, HomingHost: "host2"}
	}
	put := recs.put
	del := func(id string) { s.NoteDeleted(recs.del(id)) }
	put(rec("web.blue-a", "198.19.1.5"))
	put(rec("web.blue-b", "198.19.1.6"))
	put(rec("web.blue-c", "198.19.1.7"))
	for _, ip := range []string{"198.19.1.5", "198.19.1.6", "198.19.1.7"} {
		vx.putRemote(fakeRemote(ip, "blue", t0))
	}
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	faulttest.Eventually(t, "the first periodic sweep", func() bool { return periodic.Load() == 1 })

	// b's deletion never reaches the agent; c is deleted and its address
	// given to d at once, whose version the agent holds.
	del("web.blue-b")
	del("web.blue-c")
	put(rec("web.blue-d", "198.19.1.7"))
	vx.putRemote(fakeRemote("198.19.1.7", "blue", t0.Add(time.Second)))
	faulttest.Eventually(t, "the deleted record's remote endpoint removed", func() bool { return !vx.hasRemote("198.19.1.6:blue") })
	time.Sleep(200 * time.Millisecond) // further early sweeps would have run by now
	if n := periodic.Load(); n != 1 {
		t.Errorf("%d periodic sweeps, want only the first: the early sweeps run no Periodic", n)
	}
	for _, id := range []string{"198.19.1.5:blue", "198.19.1.7:blue"} {
		if !vx.hasRemote(id) {
			t.Errorf("%s removed: its address has a record", id)
		}
	}
}

// A mark made after a sweep's listing began is not settled by it: the
// version marked may have come with a record the listing missed.
func TestMarkAfterListingNotHonoured(t *testing.T) {
	vx := newFakeAgent()
	s, _ := newTestSweeper(t, vx)
	ctx := context.Background()
	r := fakeRemote("198.19.1.6", "blue", time.Now())
	vx.putRemote(r)
	before := time.Now()
	s.mu.Lock()
	s.marks[staleRemoteID(0, r)] = time.Now()
	s.mu.Unlock()
	if n, err := s.dropStale(ctx, nil, before); err != nil || n != 0 {
		t.Fatalf("a listing older than the mark removed %d (%v), want 0", n, err)
	}
	s.unbacked = nil // only the mark counts below
	if n, err := s.dropStale(ctx, nil, time.Now()); err != nil || n != 1 {
		t.Fatalf("a listing after the mark removed %d (%v), want 1", n, err)
	}
}
