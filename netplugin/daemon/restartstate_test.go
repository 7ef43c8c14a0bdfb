package daemon

import (
	"context"
	"testing"

	"github.com/contiv/netplugin/netplugin/ovsdriver"
	"github.com/contiv/netplugin/utils/faulttest"
)

// TestFinishRestartRetriesUntilConverged: removing a previous run's stale
// flows fails three times on the VXLAN agent; the queue retries until it
// is done, once, on both agents.
func TestFinishRestartRetriesUntilConverged(t *testing.T) {
	vx, vl := newFakeDatapath(), newFakeDatapath()
	td := newTestDaemon(t, vx, vl, newFakeDriver(), 0)
	td.mastersSeen = make(chan struct{})
	close(td.mastersSeen)
	vx.FailNext("FinishRestart", 3)
	td.start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	td.finishRestart(ctx)
	faulttest.Eventually(t, "stale flows removed on both bridges", func() bool {
		td.Daemon.mu.Lock()
		defer td.Daemon.mu.Unlock()
		r := td.restart.state()
		return r.done[ovsdriver.VxlanBridge] && r.done[ovsdriver.VlanBridge]
	})
	if n := vx.Count("FinishRestart"); n != 4 {
		t.Errorf("VXLAN agent FinishRestart called %d times, want 4 (3 failures, 1 success)", n)
	}
	if n := vl.Count("FinishRestart"); n != 1 {
		t.Errorf("VLAN agent FinishRestart called %d times, want 1", n)
	}
	if td.failed(kindFinishRestart) != 3 {
		t.Errorf("failed finishrestart reconciles: %d, want 3", td.failed(kindFinishRestart))
	}
}

// TestVrfIDsRetryUntilConverged: the VRF ids' write to OVSDB fails four
// times; ids handed out meanwhile are not lost: the retry writes the
// latest.
func TestVrfIDsRetryUntilConverged(t *testing.T) {
	drv := newFakeDriver()
	td := newTestDaemon(t, newFakeDatapath(), newFakeDatapath(), drv, 0)
	drv.FailNext("SetBridgeExternalID", 4)
	td.start(t)
	ctx := context.Background()
	td.saveVrfIDs(ctx, ovsdriver.VxlanBridge, map[string]uint8{"t1": 1})
	td.saveVrfIDs(ctx, ovsdriver.VxlanBridge, map[string]uint8{"t1": 1, "t2": 2})
	faulttest.Eventually(t, "the latest VRF ids in OVSDB", func() bool {
		return drv.externalID(ovsdriver.VxlanBridge, vrfIDsKey) == `{"t1":1,"t2":2}`
	})
	if td.failed(kindVrfIDs) == 0 {
		t.Error("no failed vrfids reconcile: the failures were not retried through the queue")
	}
}

// TestOFPortPinRetriedUntilDone: pinning a bridge's existing ports
// (ofportpin/<bridge>, queued at start) fails three times, e.g. while a
// port has no number yet; the queue retries until it is done.
func TestOFPortPinRetriedUntilDone(t *testing.T) {
	drv := newFakeDriver()
	td := newTestDaemon(t, newFakeDatapath(), newFakeDatapath(), drv, 0)
	drv.FailNext("PinOFPorts", 3)
	td.start(t)
	td.rec.Enqueue(kindOFPortPin, ovsdriver.VxlanBridge)
	faulttest.Eventually(t, "the ports pinned", func() bool { return drv.Count("PinOFPorts") == 4 })
	if td.failed(kindOFPortPin) != 3 {
		t.Errorf("failed ofportpin reconciles: %d, want 3", td.failed(kindOFPortPin))
	}
}
