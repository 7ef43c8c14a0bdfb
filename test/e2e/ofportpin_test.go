package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/test/testbed"
)

const pinBridge = "contivVxlanBridge"

// TestOlderPortsPinnedAtStart: the ports of a bridge that an older
// netplugin made carry no ofport_request (that version did not pin). The
// netplugin that starts on them pins each to the number it has, so an
// ovs-vswitchd restart with ports added in its absence renumbers none of
// them and the containers keep talking (docs/dataplane.md §1.3; the soak's
// ovs-vswitchd-restart finding, docs/soak.md).
func TestOlderPortsPinnedAtStart(t *testing.T) {
	tb := testbed.New(t, testbed.Config{Hosts: 2, NetMode: "vlan", FwdMode: "bridge"})
	netctl(t, tb, "net", "create", "--encap", "vxlan", "--subnet", "198.19.8.0/24", "--gateway", "198.19.8.254", "pin")
	h := tb.Hosts[0]
	a := attachNew(t, h, "pa", "default", "pin", "")
	b := attachNew(t, h, "pb", "default", "pin", "")
	c := attachNew(t, tb.Hosts[1], "pc", "default", "pin", "")
	for _, p := range [][2]*ctr{{a, c}, {c, b}} {
		if err := pingOK(p[0], p[1], 20*time.Second); err != nil {
			t.Fatal(err)
		}
	}

	// What an older netplugin leaves: the same ports, no requests.
	h.StopNetplugin(t)
	ifaces := pinIfaces(t, h)
	before := map[string]string{}
	for _, name := range ifaces {
		vsctlOK(t, h, "clear", "Interface", name, "ofport_request")
		before[name] = vsctlOK(t, h, "get", "Interface", name, "ofport")
	}
	t.Logf("ports of %s before: %v", pinBridge, before)
	h.StartNetplugin(t)
	tb.WaitNetplugins(t, len(tb.Hosts), 30*time.Second)
	deadline := time.Now().Add(30 * time.Second)
	for _, name := range ifaces {
		for {
			req := vsctlOK(t, h, "get", "Interface", name, "ofport_request")
			if req == before[name] {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: ofport_request %s 30 s after netplugin's start, want its ofport %s", name, req, before[name])
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	// ovs-vswitchd restarts with ports added while it was down.
	h.OVS.KillVswitchd(t)
	var added []string
	for i := range 4 {
		name, peer := fmt.Sprintf("pinlate%d", i), fmt.Sprintf("pinlatep%d", i)
		if out, err := h.Exec("ip", "link", "add", name, "type", "veth", "peer", "name", peer); err != nil {
			t.Fatalf("add veth %s: %v: %s", name, err, out)
		}
		t.Cleanup(func() {
			h.Vsctl("--if-exists", "del-port", pinBridge, name)
			h.Exec("ip", "link", "del", name)
		})
		if _, err := h.Exec("ip", "link", "set", name, "up"); err != nil {
			t.Fatal(err)
		}
		vsctlOK(t, h, "--no-wait", "add-port", pinBridge, name)
		added = append(added, name)
	}
	h.OVS.StartVswitchd(t)
	deadline = time.Now().Add(30 * time.Second)
	for _, name := range added {
		for {
			if n, err := strconv.Atoi(vsctlOK(t, h, "get", "Interface", name, "ofport")); err == nil && n > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not numbered 30 s after ovs-vswitchd's start", name)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	for _, name := range ifaces {
		if got := vsctlOK(t, h, "get", "Interface", name, "ofport"); got != before[name] {
			t.Errorf("%s: ofport %s after the restart, %s before", name, got, before[name])
		}
	}
	for _, p := range [][2]*ctr{{a, c}, {c, b}, {a, b}} {
		if err := pingOK(p[0], p[1], 30*time.Second); err != nil {
			t.Error(err)
		}
	}
}

// pinIfaces are the interfaces of pinBridge that ovs-vswitchd numbered.
func pinIfaces(t *testing.T, h *testbed.Host) []string {
	t.Helper()
	var out []string
	for _, name := range strings.Fields(vsctlOK(t, h, "list-ifaces", pinBridge)) {
		if n, err := strconv.Atoi(vsctlOK(t, h, "get", "Interface", name, "ofport")); err == nil && n > 0 {
			out = append(out, name)
		}
	}
	if len(out) < 3 {
		t.Fatalf("%s has %d numbered interfaces (%v), want the two endpoints and a VTEP at least", pinBridge, len(out), out)
	}
	return out
}

func vsctlOK(t *testing.T, h *testbed.Host, args ...string) string {
	t.Helper()
	out, err := h.Vsctl(args...)
	if err != nil {
		t.Fatalf("ovs-vsctl %s on %s: %v: %s", strings.Join(args, " "), h.Name, err, out)
	}
	return strings.TrimSpace(out)
}
