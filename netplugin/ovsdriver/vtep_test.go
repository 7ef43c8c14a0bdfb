package ovsdriver_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/netplugin/ovsdriver"
)

func TestVTEP(t *testing.T) {
	e := newEnv(t)
	d := e.driver(t, nil)
	ensureBridge(t, e, d, ovsdriver.VxlanBridge)
	ofport, err := d.EnsureVTEP(e.ctx, ovsdriver.VxlanBridge, "198.18.0.2", 0)
	if err != nil {
		t.Fatal(err)
	}
	const name = "vxif1981802"
	if got := e.vsctl(t, "get", "Interface", name, "ofport"); ofport == 0 || got != strconv.Itoa(int(ofport)) {
		t.Errorf("ofport %d, ovs-vsctl says %s", ofport, got)
	}
	checks := [][3]string{
		{"Interface", "type", "vxlan"},
		{"Interface", "options", `{dst_port="4789", key=flow, remote_ip="198.18.0.2", tos=inherit}`},
		{"Port", "vlan_mode", "trunk"},
		{"Port", "tag", "[]"},
	}
	for _, c := range checks {
		if got := e.vsctl(t, "get", c[0], name, c[1]); got != c[2] {
			t.Errorf("%s %s = %s, want %s", c[0], c[1], got, c[2])
		}
	}
	uuid := e.vsctl(t, "get", "Port", name, "_uuid")
	again, err := d.EnsureVTEP(e.ctx, ovsdriver.VxlanBridge, "198.18.0.2", 0)
	if err != nil || again != ofport || e.vsctl(t, "get", "Port", name, "_uuid") != uuid {
		t.Errorf("second EnsureVTEP: ofport %d (was %d), err %v, or port re-created", again, ofport, err)
	}
	// Another UDP port is corrected in place.
	if _, err := d.EnsureVTEP(e.ctx, ovsdriver.VxlanBridge, "198.18.0.2", 8472); err != nil {
		t.Fatal(err)
	}
	if got := e.vsctl(t, "get", "Interface", name, "options:dst_port"); got != `"8472"` {
		t.Errorf("dst_port = %s", got)
	}
	// A tunnel to the same peer under another name is replaced.
	e.vsctl(t, "add-port", ovsdriver.VxlanBridge, "oldtun", "--", "set", "Interface", "oldtun", "type=vxlan",
		"options:remote_ip=198.18.0.3", "options:key=flow")
	// The driver decides from its OVSDB cache, which learns of changes made
	// by other clients asynchronously: wait until it has seen oldtun.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if vteps, err := d.VTEPs(e.ctx, ovsdriver.VxlanBridge); err == nil && vteps["198.18.0.3"] != 0 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the driver never saw oldtun: %v, %v", vteps, err)
		}
	}
	if _, err := d.EnsureVTEP(e.ctx, ovsdriver.VxlanBridge, "198.18.0.3", 0); err != nil {
		t.Fatal(err)
	}
	if ports := e.vsctl(t, "list-ports", ovsdriver.VxlanBridge); ports != "vxif1981802\nvxif1981803" {
		t.Errorf("ports = %q", ports)
	}
	vteps, err := d.VTEPs(e.ctx, ovsdriver.VxlanBridge)
	if err != nil || len(vteps) != 2 || vteps["198.18.0.2"] != ofport || vteps["198.18.0.3"] == 0 {
		t.Errorf("VTEPs = %v, %v", vteps, err)
	}

	for i := 0; i < 2; i++ {
		if err := d.DeleteVTEP(e.ctx, ovsdriver.VxlanBridge, "198.18.0.2"); err != nil {
			t.Fatalf("delete #%d: %v", i+1, err)
		}
	}
	if ports := e.vsctl(t, "list-ports", ovsdriver.VxlanBridge); ports != "vxif1981803" {
		t.Errorf("ports after delete = %q", ports)
	}
	for _, bad := range []string{"", "peer", "2001:db8::1"} {
		if _, err := d.EnsureVTEP(e.ctx, ovsdriver.VxlanBridge, bad, 0); !errors.Is(err, ovsdriver.ErrInvalid) {
			t.Errorf("EnsureVTEP(%q) = %v", bad, err)
		}
	}
	// A non-vxlan port with the VTEP's name is refused, not changed.
	e.vsctl(t, "add-port", ovsdriver.VxlanBridge, "vxif1981804", "--", "set", "Interface", "vxif1981804", "type=internal")
	_, err = d.EnsureVTEP(e.ctx, ovsdriver.VxlanBridge, "198.18.0.4", 0)
	if err == nil || !strings.Contains(err.Error(), "already exists but is not") {
		t.Errorf("EnsureVTEP over an internal port: %v", err)
	}
}
