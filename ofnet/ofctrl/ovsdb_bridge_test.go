package ofctrl

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contiv/netplugin/ofnet/ovsdb"
	"github.com/contiv/netplugin/test/ovstest"
)

// The bridge is created through our own OVSDB client with our controller
// as its controller: the switch connects and the handshake completes with
// the bridge's datapath ID.
func TestBridgeCreatedThroughOVSDBConnects(t *testing.T) {
	o := ovstest.Start(t)
	ln := o.ListenTCP(t)
	connected := make(chan uint64, 4)
	ctrl, err := New(Config{Listener: ln, Logger: quietLogger(t),
		OnConnect: func(sw *Switch) {
			select {
			case connected <- sw.DatapathID():
			default:
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	runCtx, stop := context.WithCancel(ctx)
	go func() {
		defer wg.Done()
		if err := ctrl.Run(runCtx); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	defer func() { stop(); wg.Wait() }()

	db, err := ovsdb.Dial(ctx, "unix:"+o.DBSock)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	spec := ovsdb.BridgeSpec{Name: "contivVxlanBridge", DatapathType: "netdev", FailMode: "secure",
		Protocols: []string{"OpenFlow13"}, Controllers: []string{"tcp:" + ln.Addr().String()}}
	if err := db.CreateBridge(ctx, spec); err != nil {
		t.Fatalf("create bridge through OVSDB: %v", err)
	}
	if err := db.WaitApplied(ctx); err != nil {
		t.Fatalf("wait for ovs-vswitchd to apply the bridge: %v", err)
	}
	out, err := o.Vsctl("get", "bridge", spec.Name, "datapath_id")
	if err != nil {
		t.Fatalf("get datapath_id: %v: %s", err, out)
	}
	want, err := strconv.ParseUint(strings.Trim(strings.TrimSpace(out), `"`), 16, 64)
	if err != nil {
		t.Fatalf("parse datapath_id %q: %v", out, err)
	}
	select {
	case got := <-connected:
		if got != want {
			t.Fatalf("switch connected with datapath ID %016x, bridge has %016x", got, want)
		}
	case <-ctx.Done():
		t.Fatal("switch did not connect to our controller")
	}
	if !ctrl.Switch(want).Connected() {
		t.Fatal("switch not reported connected after the handshake")
	}
	// Creating it again is a no-op, and the controller stays connected.
	if err := db.CreateBridge(ctx, spec); err != nil {
		t.Fatalf("create bridge again: %v", err)
	}
	if !ctrl.Switch(want).Connected() {
		t.Fatal("idempotent re-create disturbed the controller connection")
	}
}
