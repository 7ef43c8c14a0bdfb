package ovsdriver_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/contiv/netplugin/netplugin/ovsdriver"
)

func TestEnsureBridges(t *testing.T) {
	e := newEnv(t)
	d := e.driver(t, nil)
	bridges := map[string]int{ovsdriver.VxlanBridge: ovsdriver.VxlanControllerPort, ovsdriver.VlanBridge: ovsdriver.VlanControllerPort}
	for br, port := range bridges {
		if err := d.EnsureBridge(e.ctx, br, port); err != nil {
			t.Fatal(err)
		}
	}
	uuids := map[string]string{}
	for br, port := range bridges {
		want := map[string]string{
			"protocols":     "[OpenFlow10, OpenFlow11, OpenFlow12, OpenFlow13]",
			"fail_mode":     "secure",
			"datapath_type": "netdev",
			"other_config":  `{disable-in-band="true"}`,
		}
		for col, w := range want {
			if got := e.vsctl(t, "get", "Bridge", br, col); got != w {
				t.Errorf("%s %s = %s, want %s", br, col, got, w)
			}
		}
		ctrl := e.vsctl(t, "get-controller", br)
		if ctrl != "tcp:127.0.0.1:"+strconv.Itoa(port) {
			t.Errorf("%s controller = %q", br, ctrl)
		}
		if ports := e.vsctl(t, "list-ifaces", br); ports != "" {
			t.Errorf("%s has interfaces %q, want none (no LOCAL port)", br, ports)
		}
		uuids[br] = e.vsctl(t, "get", "Bridge", br, "_uuid") + e.vsctl(t, "get", "Bridge", br, "controller")
	}
	if n := e.vsctl(t, "--bare", "--columns=name", "find", "Interface", "type=internal"); n != "" {
		t.Errorf("internal interfaces %q, want none", n)
	}

	// A second call changes nothing: same rows, no extra controller.
	for br, port := range bridges {
		if err := d.EnsureBridge(e.ctx, br, port); err != nil {
			t.Fatal(err)
		}
		if got := e.vsctl(t, "get", "Bridge", br, "_uuid") + e.vsctl(t, "get", "Bridge", br, "controller"); got != uuids[br] {
			t.Errorf("%s rows changed on second EnsureBridge: %s -> %s", br, uuids[br], got)
		}
	}
	if n := len(strings.Fields(e.vsctl(t, "--bare", "--columns=_uuid", "list", "Controller"))); n != 2 {
		t.Errorf("%d Controller rows, want 2", n)
	}

	dpid, err := d.DatapathID(e.ctx, ovsdriver.VxlanBridge)
	if err != nil {
		t.Fatal(err)
	}
	want, err := strconv.ParseUint(strings.Trim(e.vsctl(t, "get", "Bridge", ovsdriver.VxlanBridge, "datapath_id"), `"`), 16, 64)
	if err != nil || dpid != want || dpid == 0 {
		t.Errorf("DatapathID = %x, ovs-vsctl says %x (%v)", dpid, want, err)
	}
	if _, err := d.DatapathID(e.ctx, "nosuchbr"); !errors.Is(err, ovsdriver.ErrNotFound) {
		t.Errorf("DatapathID of missing bridge: %v", err)
	}
}

func TestEnsureBridgeCorrectsExisting(t *testing.T) {
	e := newEnv(t)
	d := e.driver(t, nil)
	e.vsctl(t, "add-br", "brfix", "--", "set", "Bridge", "brfix", "datapath_type=netdev", "fail_mode=standalone",
		"protocols=OpenFlow13", "other_config:disable-in-band=false", "other_config:mac-aging-time=30",
		"--", "set-controller", "brfix", "tcp:127.0.0.1:7777")
	if err := d.EnsureBridge(e.ctx, "brfix", 6699); err != nil {
		t.Fatal(err)
	}
	if got := e.vsctl(t, "get", "Bridge", "brfix", "fail_mode"); got != "secure" {
		t.Errorf("fail_mode = %s", got)
	}
	if got := e.vsctl(t, "get", "Bridge", "brfix", "protocols"); !strings.Contains(got, "OpenFlow10") {
		t.Errorf("protocols = %s", got)
	}
	if got := e.vsctl(t, "get-controller", "brfix"); got != "tcp:127.0.0.1:6699" {
		t.Errorf("controller = %q", got)
	}
	if got := e.vsctl(t, "get", "Bridge", "brfix", "other_config"); got != `{disable-in-band="true", mac-aging-time="30"}` {
		t.Errorf("other_config = %s, want in-band disabled and the other key kept", got)
	}

	// Another datapath type is refused and left alone.
	e.vsctl(t, "--no-wait", "add-br", "brsys", "--", "set", "Bridge", "brsys", "datapath_type=system")
	err := d.EnsureBridge(e.ctx, "brsys", 6699)
	if !errors.Is(err, ovsdriver.ErrMismatch) || !strings.Contains(err.Error(), "already exists but has datapath_type") {
		t.Fatalf("EnsureBridge on a system bridge: %v", err)
	}
	if got := e.vsctl(t, "get", "Bridge", "brsys", "fail_mode"); got != "[]" {
		t.Errorf("refused bridge was changed: fail_mode = %s", got)
	}
}

func TestBridgeExternalIDs(t *testing.T) {
	e := newEnv(t)
	d := e.driver(t, nil)
	if err := d.EnsureBridge(e.ctx, ovsdriver.VxlanBridge, ovsdriver.VxlanControllerPort); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := d.BridgeExternalID(e.ctx, ovsdriver.VxlanBridge, "k"); err != nil || ok {
		t.Fatalf("unset key: ok=%v err=%v", ok, err)
	}
	for _, v := range []string{"one", "two", "two"} {
		if err := d.SetBridgeExternalID(e.ctx, ovsdriver.VxlanBridge, "k", v); err != nil {
			t.Fatal(err)
		}
		got, ok, err := d.BridgeExternalID(e.ctx, ovsdriver.VxlanBridge, "k")
		if err != nil || !ok || got != v {
			t.Fatalf("after set %q: %q %v %v", v, got, ok, err)
		}
		if got := strings.Trim(e.vsctl(t, "get", "Bridge", ovsdriver.VxlanBridge, "external_ids:k"), `"`); got != v {
			t.Fatalf("ovs-vsctl external_ids:k = %s, want %q", got, v)
		}
	}
	if err := d.SetBridgeExternalID(e.ctx, ovsdriver.VxlanBridge, "other", "x"); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := d.BridgeExternalID(e.ctx, ovsdriver.VxlanBridge, "k"); got != "two" {
		t.Errorf("setting another key lost k: %q", got)
	}
	if err := d.SetBridgeExternalID(e.ctx, "nosuchbr", "k", "v"); !errors.Is(err, ovsdriver.ErrNotFound) {
		t.Errorf("set on missing bridge: %v", err)
	}
	if _, _, err := d.BridgeExternalID(e.ctx, "nosuchbr", "k"); !errors.Is(err, ovsdriver.ErrNotFound) {
		t.Errorf("get on missing bridge: %v", err)
	}
}
