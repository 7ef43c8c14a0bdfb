package daemon

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/contiv/netplugin/ofnet/ofrpc"
	"github.com/contiv/netplugin/state"
	"github.com/contiv/netplugin/utils/faulttest"
)

// A remote endpoint whose deletion never reached the agent goes on the
// second sweep that finds no record for it; one the store holds stays, and
// a version first seen unbacked is given one more sweep.
func TestDropStaleRemotes(t *testing.T) {
	vx := newFakeDatapath()
	td := newTestDaemon(t, vx, newFakeDatapath(), newFakeDriver(), 0)
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
	if n, err := td.dropStaleRemotes(ctx, all, time.Now()); err != nil || n != 0 {
		t.Fatalf("first sweep removed %d (%v), want 0: an unbacked remote gets one more sweep", n, err)
	}
	// The stale one is re-sent by a master with a newer version in between:
	// that version starts its own count.
	newer := remote("198.19.1.7:red", "198.19.1.7", "red")
	newer.Timestamp = t0.Add(time.Second)
	vx.remotes["198.19.1.7:red"] = newer
	if n, err := td.dropStaleRemotes(ctx, all, time.Now()); err != nil || n != 1 {
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
	if n, _ := td.dropStaleRemotes(ctx, all, time.Now()); n != 1 {
		t.Errorf("third sweep removed %d, want the newer unbacked version (1)", n)
	}
	// A store listing that failed removes nothing: sweepLoop skips the sweep.
}

// fakeRemote is a remote endpoint as a master sends it.
func fakeRemote(ip, vrf string, ts time.Time) ofrpc.OfnetEndpoint {
	return ofrpc.OfnetEndpoint{EndpointID: ip + ":" + vrf, IpAddr: net.ParseIP(ip), Vrf: vrf, Timestamp: ts}
}

func (a *fakeDatapath) hasRemote(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.remotes[id]
	return ok
}

func (a *fakeDatapath) putRemote(r ofrpc.OfnetEndpoint) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.remotes[r.EndpointID] = r
}

// TestDeletedRecordsRemoteRemovedEarly: a remote endpoint still held after
// the store watch reported its record deleted goes with an early sweep,
// long before the periodic ones (an hour here); one whose address a
// re-created record holds, and one whose record stays, are not touched.
func TestDeletedRecordsRemoteRemovedEarly(t *testing.T) {
	vx := newFakeDatapath()
	td := newTestDaemon(t, vx, newFakeDatapath(), newFakeDriver(), 0)
	td.cfg.SweepInterval, td.cfg.RemoteDelGrace, td.cfg.SweepKickGap = time.Hour, 50*time.Millisecond, 20*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	t0 := time.Now()
	rec := func(id, ip string) state.Endpoint {
		return state.Endpoint{Common: state.Common{ID: id}, NetID: "web.blue", IPAddress: ip, HomingHost: "host2"}
	}
	put := func(ep state.Endpoint) {
		t.Helper()
		if _, err := td.st.Endpoints.Write(ctx, ep); err != nil {
			t.Fatal(err)
		}
		td.want.eps.Apply(ctx, ep.ID, &ep)
	}
	del := func(id string) {
		t.Helper()
		if err := td.st.Endpoints.Clear(ctx, id); err != nil {
			t.Fatal(err)
		}
		td.want.eps.Apply(ctx, id, nil)
	}
	put(rec("web.blue-a", "198.19.1.5"))
	put(rec("web.blue-b", "198.19.1.6"))
	put(rec("web.blue-c", "198.19.1.7"))
	for _, ip := range []string{"198.19.1.5", "198.19.1.6", "198.19.1.7"} {
		vx.putRemote(fakeRemote(ip, "blue", t0))
	}
	var wg sync.WaitGroup
	for _, run := range []func(context.Context){td.sweepLoop, td.remoteDelLoop} {
		wg.Add(1)
		go func() { defer wg.Done(); run(ctx) }()
	}
	defer func() { cancel(); wg.Wait() }()

	// b's deletion never reaches the agent; c is deleted and its address
	// given to d at once, whose version the agent holds.
	del("web.blue-b")
	del("web.blue-c")
	put(rec("web.blue-d", "198.19.1.7"))
	vx.putRemote(fakeRemote("198.19.1.7", "blue", t0.Add(time.Second)))
	faulttest.Eventually(t, "the deleted record's remote endpoint removed", func() bool { return !vx.hasRemote("198.19.1.6:blue") })
	if took := time.Since(t0); took > 5*time.Second {
		t.Errorf("removed after %v", took)
	}
	time.Sleep(200 * time.Millisecond) // further early sweeps would have run by now
	for _, id := range []string{"198.19.1.5:blue", "198.19.1.7:blue"} {
		if !vx.hasRemote(id) {
			t.Errorf("%s removed: its address has a record", id)
		}
	}
}

// A mark made after a sweep's listing began is not settled by it: the
// version marked may have come with a record the listing missed.
func TestMarkAfterListingNotHonoured(t *testing.T) {
	vx := newFakeDatapath()
	td := newTestDaemon(t, vx, newFakeDatapath(), newFakeDriver(), 0)
	ctx := context.Background()
	r := fakeRemote("198.19.1.6", "blue", time.Now())
	vx.putRemote(r)
	before := time.Now()
	td.remoteDel.mu.Lock()
	td.remoteDel.initLocked()
	td.remoteDel.marks[staleRemoteID(0, r)] = time.Now()
	td.remoteDel.mu.Unlock()
	if n, err := td.dropStaleRemotes(ctx, nil, before); err != nil || n != 0 {
		t.Fatalf("a listing older than the mark removed %d (%v), want 0", n, err)
	}
	td.unbackedRemotes = nil // only the mark counts below
	if n, err := td.dropStaleRemotes(ctx, nil, time.Now()); err != nil || n != 1 {
		t.Fatalf("a listing after the mark removed %d (%v), want 1", n, err)
	}
}
