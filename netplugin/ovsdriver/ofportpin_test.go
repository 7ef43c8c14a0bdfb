package ovsdriver_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/contiv/netplugin/netplugin/ovsdriver"
)

// TestOFPortsSurviveVswitchdRestart: the OpenFlow port numbers of the
// ports netplugin created (endpoints, a VTEP) stay what they were when
// ovs-vswitchd restarts while ports were added in its absence (an attach
// during the restart). ovs-vswitchd remembers an interface's number only as
// a preference: after a restart it numbers the ports without a request in
// arbitrary order, from 1 up, and a port added meanwhile took the number of
// an existing one, which got another. netplugin's flows then named the
// wrong port, and the next endpoint given the old number replaced the
// existing endpoint in the agent (the soak's ovs-vswitchd-restart failure,
// docs/soak.md, "Findings"). The numbers are pinned with ofport_request.
func TestOFPortsSurviveVswitchdRestart(t *testing.T) {
	e := newEnv(t)
	d := e.driver(t, nil)
	ensureBridge(t, e, d, ovsdriver.VxlanBridge)
	want := map[string]uint32{}
	vtep, err := d.EnsureVTEP(e.ctx, ovsdriver.VxlanBridge, "198.18.0.2", 0)
	if err != nil {
		t.Fatal(err)
	}
	want["vxif1981802"] = vtep
	for i := range 6 {
		p, err := d.CreateEndpoint(e.ctx, ovsdriver.EndpointSpec{EndpointID: fmt.Sprintf("ep%d", i), Bridge: ovsdriver.VxlanBridge, Tag: 10})
		if err != nil {
			t.Fatal(err)
		}
		want[p.PortName] = p.OFPort
	}
	e.ovs.KillVswitchd(t)
	var added []string
	for i := range 6 {
		name, peer := fmt.Sprintf("late%d", i), fmt.Sprintf("latep%d", i)
		e.addVeth(t, name, peer, 0)
		e.vsctl(t, "--no-wait", "add-port", ovsdriver.VxlanBridge, name)
		added = append(added, name)
	}
	e.ovs.StartVswitchd(t)
	for _, name := range added {
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if n, err := strconv.Atoi(e.vsctl(t, "get", "Interface", name, "ofport")); err == nil && n > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s has no ofport after the restart", name)
			}
		}
	}
	for name, n := range want {
		if got := e.vsctl(t, "get", "Interface", name, "ofport"); got != strconv.Itoa(int(n)) {
			t.Errorf("%s: ofport %s after the restart, %d before", name, got, n)
		}
	}
}
