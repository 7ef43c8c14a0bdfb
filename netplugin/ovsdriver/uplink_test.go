package ovsdriver_test

import (
	"strconv"
	"testing"

	"github.com/contiv/netplugin/netplugin/ovsdriver"
)

func TestUplinks(t *testing.T) {
	e := newEnv(t)
	d := e.driver(t, nil)
	ensureBridge(t, e, d, ovsdriver.VlanBridge)
	a := e.addVeth(t, "upa", "veth-upa", 0)
	b := e.addVeth(t, "upb", "veth-upb", 0)

	// Single interface: a trunk port of its own name.
	m, err := d.EnsureUplinks(e.ctx, ovsdriver.VlanBridge, []string{"upa"})
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 1 || m[0].Name != "upa" || m[0].MAC.String() != a.Attrs().HardwareAddr.String() ||
		strconv.Itoa(int(m[0].OFPort)) != e.vsctl(t, "get", "Interface", "upa", "ofport") {
		t.Fatalf("members = %+v", m)
	}
	for _, c := range [][3]string{
		{"Port", "vlan_mode", "trunk"},
		{"Port", "external_ids:endpoint-id", "uplinkPort"},
		{"Interface", "external_ids:endpoint-id", "uplinkPort"},
	} {
		if got := e.vsctl(t, "get", c[0], "upa", c[1]); got != c[2] {
			t.Errorf("%s %s = %s, want %s", c[0], c[1], got, c[2])
		}
	}
	uuid := e.vsctl(t, "get", "Port", "upa", "_uuid")
	if _, err := d.EnsureUplinks(e.ctx, ovsdriver.VlanBridge, []string{"upa"}); err != nil {
		t.Fatal(err)
	}
	if e.vsctl(t, "get", "Port", "upa", "_uuid") != uuid {
		t.Error("second EnsureUplinks re-created the port")
	}

	// Two interfaces: the bond uplinkPort replaces the single port.
	m, err = d.EnsureUplinks(e.ctx, ovsdriver.VlanBridge, []string{"upb", "upa"})
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 2 || m[0].Name != "upb" || m[0].MAC.String() != b.Attrs().HardwareAddr.String() || m[1].OFPort == 0 {
		t.Fatalf("bond members = %+v", m)
	}
	if ports := e.vsctl(t, "list-ports", ovsdriver.VlanBridge); ports != "uplinkPort" {
		t.Fatalf("ports = %q", ports)
	}
	if ifaces := e.vsctl(t, "list-ifaces", ovsdriver.VlanBridge); ifaces != "upa\nupb" {
		t.Fatalf("interfaces = %q", ifaces)
	}
	for _, c := range [][2]string{
		{"bond_mode", "balance-tcp"},
		{"lacp", "active"},
		{"other_config:lacp-fallback-ab", `"true"`},
		{"vlan_mode", "trunk"},
	} {
		if got := e.vsctl(t, "get", "Port", "uplinkPort", c[0]); got != c[1] {
			t.Errorf("uplinkPort %s = %s, want %s", c[0], got, c[1])
		}
	}
	uuid = e.vsctl(t, "get", "Port", "uplinkPort", "_uuid")
	if _, err := d.EnsureUplinks(e.ctx, ovsdriver.VlanBridge, []string{"upa", "upb"}); err != nil {
		t.Fatal(err)
	}
	if e.vsctl(t, "get", "Port", "uplinkPort", "_uuid") != uuid {
		t.Error("second EnsureUplinks re-created the bond")
	}

	// Back to one interface, then none.
	if _, err := d.EnsureUplinks(e.ctx, ovsdriver.VlanBridge, []string{"upb"}); err != nil {
		t.Fatal(err)
	}
	if ports := e.vsctl(t, "list-ports", ovsdriver.VlanBridge); ports != "upb" {
		t.Fatalf("ports = %q", ports)
	}
	// Other ports are not uplinks and stay.
	if _, err := d.CreateEndpoint(e.ctx, ovsdriver.EndpointSpec{EndpointID: "ep", Bridge: ovsdriver.VlanBridge, Tag: 4}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := d.RemoveUplinks(e.ctx, ovsdriver.VlanBridge); err != nil {
			t.Fatal(err)
		}
	}
	if ports := e.vsctl(t, "list-ports", ovsdriver.VlanBridge); ports != "vvport1" {
		t.Fatalf("ports after RemoveUplinks = %q", ports)
	}
}
