package ovsdriver_test

import (
	"errors"
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

// TestPinOFPortsOfOlderPorts: ports without an ofport_request (made by an
// older netplugin, which did not pin, or by hand) are pinned to the number
// they have by PinOFPorts, which netplugin runs at start, so a later
// ovs-vswitchd restart with ports added in its absence renumbers none of
// them (docs/dataplane.md §1.3). A port not numbered yet makes it fail
// with ErrOFPortUnassigned, to be called again.
func TestPinOFPortsOfOlderPorts(t *testing.T) {
	e := newEnv(t)
	d := e.driver(t, nil)
	ensureBridge(t, e, d, ovsdriver.VxlanBridge)
	var names []string
	vtep, err := d.EnsureVTEP(e.ctx, ovsdriver.VxlanBridge, "198.18.0.2", 0)
	if err != nil {
		t.Fatal(err)
	}
	names = append(names, "vxif1981802")
	for i := range 3 {
		p, err := d.CreateEndpoint(e.ctx, ovsdriver.EndpointSpec{EndpointID: fmt.Sprintf("ep%d", i), Bridge: ovsdriver.VxlanBridge, Tag: 10})
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, p.PortName)
	}
	// What an older netplugin left: the same ports without a request, and
	// ports someone added by hand.
	for _, name := range names {
		e.vsctl(t, "clear", "Interface", name, "ofport_request")
	}
	for i := range 3 {
		name := fmt.Sprintf("old%d", i)
		e.addVeth(t, name, fmt.Sprintf("oldp%d", i), 0)
		e.vsctl(t, "add-port", ovsdriver.VxlanBridge, name)
		names = append(names, name)
	}
	want := map[string]string{}
	for _, name := range names {
		want[name] = waitOFPort(t, e, name)
		if req := e.vsctl(t, "get", "Interface", name, "ofport_request"); req != "[]" {
			t.Fatalf("%s: ofport_request %s before the pinning, want none", name, req)
		}
	}
	if want["vxif1981802"] != strconv.Itoa(int(vtep)) {
		t.Fatalf("VTEP ofport %s, EnsureVTEP said %d", want["vxif1981802"], vtep)
	}

	n, err := d.PinOFPorts(e.ctx, ovsdriver.VxlanBridge)
	if err != nil || n != len(names) {
		t.Fatalf("PinOFPorts: %d, %v; want %d, nil", n, err, len(names))
	}
	for name, num := range want {
		if req := e.vsctl(t, "get", "Interface", name, "ofport_request"); req != num {
			t.Errorf("%s: ofport_request %s, want its ofport %s", name, req, num)
		}
	}
	if n, err := d.PinOFPorts(e.ctx, ovsdriver.VxlanBridge); err != nil || n != 0 {
		t.Errorf("second PinOFPorts: %d, %v; want 0, nil", n, err)
	}
	if n, err := d.PinOFPorts(e.ctx, "noSuchBridge"); err != nil || n != 0 {
		t.Errorf("PinOFPorts of a missing bridge: %d, %v; want 0, nil", n, err)
	}

	e.ovs.KillVswitchd(t)
	var added []string
	for i := range 6 {
		name := fmt.Sprintf("late%d", i)
		e.addVeth(t, name, fmt.Sprintf("latep%d", i), 0)
		e.vsctl(t, "--no-wait", "add-port", ovsdriver.VxlanBridge, name)
		added = append(added, name)
	}
	if _, err := d.PinOFPorts(e.ctx, ovsdriver.VxlanBridge); !errors.Is(err, ovsdriver.ErrOFPortUnassigned) {
		t.Errorf("PinOFPorts with unnumbered ports: %v, want ErrOFPortUnassigned", err)
	}
	e.ovs.StartVswitchd(t)
	for _, name := range added {
		waitOFPort(t, e, name)
	}
	for name, num := range want {
		if got := e.vsctl(t, "get", "Interface", name, "ofport"); got != num {
			t.Errorf("%s: ofport %s after the restart, %s before", name, got, num)
		}
	}
}

// waitOFPort waits up to 20 s for ovs-vswitchd to number interface name
// and returns the number.
func waitOFPort(t *testing.T, e *env, name string) string {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		s := e.vsctl(t, "get", "Interface", name, "ofport")
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s has no ofport", name)
		}
	}
}
