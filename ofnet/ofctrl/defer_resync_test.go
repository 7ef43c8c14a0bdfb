package ofctrl

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	of "github.com/contiv/netplugin/ofnet/openflow13"
)

// TestDeferFirstResync: a second controller (a restarted owner) with DeferFirstResync
// takes over a bridge that holds flows and groups from the first one. On its first
// connection nothing is deleted and the recorded flows are pushed; installing the
// groups the switch already has sends no ADD that OVS refuses (GROUP_EXISTS): an
// unchanged one is taken over as it is, a changed one modified; the owner's Resync
// then removes the stale flows and groups; after ovs-vswitchd restarts the full
// resync runs again.
func TestDeferFirstResync(t *testing.T) {
	e := startEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	old := testFlows(20, 0x3000000, nil)
	if err := e.sw.InstallFlows(ctx, old...); err != nil {
		t.Fatal(err)
	}
	group := func(id uint32, port uint32) Group {
		return Group{ID: id, Type: of.GroupTypeAll, Buckets: []of.Bucket{of.NewBucket(of.ActionOutput{Port: port})}}
	}
	if err := e.sw.InstallGroups(ctx, group(77, 1), group(78, 1), group(79, 1)); err != nil {
		t.Fatal(err)
	}

	// The "restarted" owner records half of the old flows plus a new one before its
	// switch connects.
	ln := e.ovs.ListenTCP(t)
	connected := make(chan *Switch, 4)
	disconnected := make(chan uint64, 4)
	ctrl2, err := New(Config{Listener: ln, Logger: quietLogger(t), DeferFirstResync: true,
		OnConnect:    func(sw *Switch) { connected <- sw },
		OnDisconnect: func(id uint64) { disconnected <- id }})
	if err != nil {
		t.Fatal(err)
	}
	sw2 := ctrl2.Switch(e.dpid)
	keep := old[:10]
	fresh := Flow{Table: 9, Priority: 7, Cookie: 0x42, Match: of.NewMatch(of.OXMInPort(5))}
	if err := sw2.InstallFlows(ctx, append(append([]Flow(nil), keep...), fresh)...); err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := ctrl2.Run(ctx2); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	defer func() { cancel2(); wg.Wait() }()
	if out, err := e.ovs.Vsctl("set-controller", e.bridge, "tcp:"+ln.Addr().String()); err != nil {
		t.Fatalf("set-controller: %v: %s", err, out)
	}
	select {
	case <-connected:
	case <-ctx.Done():
		t.Fatal("bridge did not connect to the second controller")
	}
	dumped, err := sw2.DumpFlows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(dumped) != len(old)+1 {
		t.Fatalf("after deferred first connect: %d flows on the switch, want %d (old ones kept, new one pushed)", len(dumped), len(old)+1)
	}
	if gs, err := sw2.DumpGroups(ctx); err != nil || len(gs) != 3 {
		t.Fatalf("after deferred first connect: groups %v, %v; want the old groups kept", gs, err)
	}
	// The owner replays groups 77 (unchanged) and 78 (changed); 79 is stale.
	if err := sw2.InstallGroups(ctx, group(77, 1), group(78, 2)); err != nil {
		t.Fatalf("install the groups the switch has: %v", err)
	}
	if n := strings.Count(e.ovs.Logs(), "GROUP_EXISTS"); n != 0 {
		t.Errorf("OVS refused %d group ADDs of the restarted owner", n)
	}
	if got, want := e.ofctlGroups(t), renderGroups([]Group{group(77, 1), group(78, 2), group(79, 1)}); !slices.Equal(got, want) {
		t.Errorf("groups after the replay:\n%s", diffLines(want, got))
	}

	res, err := sw2.Resync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := (ResyncResult{FlowsDeleted: 10, GroupsDeleted: 1}); res != want {
		t.Fatalf("owner's Resync = %v, want %v", res, want)
	}
	if res, err := sw2.Resync(ctx); err != nil || res.Changed() {
		t.Fatalf("second Resync = %v, %v; want no changes", res, err)
	}
	if got, want := e.ofctlGroups(t), renderGroups([]Group{group(77, 1), group(78, 2)}); !slices.Equal(got, want) {
		t.Errorf("groups after the owner's Resync:\n%s", diffLines(want, got))
	}

	// A later reconnect is a full resync: a stray flow added while disconnected goes.
	e.ovs.RestartVswitchd(t)
	select {
	case <-disconnected:
	case <-ctx.Done():
		t.Fatal("no disconnect after restarting ovs-vswitchd")
	}
	select {
	case <-connected:
	case <-ctx.Done():
		t.Fatal("no reconnect after restarting ovs-vswitchd")
	}
	got, err := sw2.DumpFlows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(keep)+1 {
		t.Fatalf("after ovs-vswitchd restart: %d flows, want the %d recorded", len(got), len(keep)+1)
	}
}
