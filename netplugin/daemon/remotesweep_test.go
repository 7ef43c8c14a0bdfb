package daemon

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/contiv/netplugin/ofnet/ofrpc"
	"github.com/contiv/netplugin/state"
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
	if n, err := td.dropStaleRemotes(ctx, all); err != nil || n != 0 {
		t.Fatalf("first sweep removed %d (%v), want 0: an unbacked remote gets one more sweep", n, err)
	}
	// The stale one is re-sent by a master with a newer version in between:
	// that version starts its own count.
	newer := remote("198.19.1.7:red", "198.19.1.7", "red")
	newer.Timestamp = t0.Add(time.Second)
	vx.remotes["198.19.1.7:red"] = newer
	if n, err := td.dropStaleRemotes(ctx, all); err != nil || n != 1 {
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
	if n, _ := td.dropStaleRemotes(ctx, all); n != 1 {
		t.Errorf("third sweep removed %d, want the newer unbacked version (1)", n)
	}
	// A store listing that failed removes nothing: sweepLoop skips the sweep.
}
