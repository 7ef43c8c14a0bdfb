package ofctrl

import (
	"context"
	"sync"
	"testing"
	"time"

	of "github.com/contiv/netplugin/ofnet/openflow13"
)

// TestDeferFirstResync: a second controller (a restarted owner) with DeferFirstResync
// takes over a bridge that holds flows and a group from the first one. On its first
// connection nothing is deleted and the recorded flows are pushed; the owner's Resync
// then removes the stale ones; after ovs-vswitchd restarts the full resync runs again.
func TestDeferFirstResync(t *testing.T) {
	e := startEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	old := testFlows(20, 0x3000000, nil)
	if err := e.sw.InstallFlows(ctx, old...); err != nil {
		t.Fatal(err)
	}
	if err := e.sw.InstallGroups(ctx, Group{ID: 77, Type: of.GroupTypeAll,
		Buckets: []of.Bucket{of.NewBucket(of.ActionOutput{Port: 1})}}); err != nil {
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
	if gs, err := sw2.DumpGroups(ctx); err != nil || len(gs) != 1 {
		t.Fatalf("after deferred first connect: groups %v, %v; want the old group kept", gs, err)
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
