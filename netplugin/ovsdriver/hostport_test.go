package ovsdriver_test

import (
	"errors"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/contiv/netplugin/netplugin/ovsdriver"
	"github.com/contiv/netplugin/objdb/objdbtest"
)

func TestPrivateAddr(t *testing.T) {
	ip, mac, err := ovsdriver.PrivateAddr("172.19.0.0/16", 0xfffe)
	if err != nil || ip.String() != "172.19.255.254/16" || mac.String() != "02:02:ac:13:ff:fe" {
		t.Errorf("PrivateAddr(172.19.0.0/16, 0xfffe) = %v %v %v", ip, mac, err)
	}
	ip, _, err = ovsdriver.PrivateAddr("172.19.0.0/16", 5)
	if err != nil || ip.String() != "172.19.0.5/16" {
		t.Errorf("PrivateAddr(.., 5) = %v %v", ip, err)
	}
	for _, bad := range []string{"", "172.19.0.0/24", "fd00::/16", "x"} {
		if _, _, err := ovsdriver.PrivateAddr(bad, 1); !errors.Is(err, ovsdriver.ErrInvalid) {
			t.Errorf("PrivateAddr(%q) = %v", bad, err)
		}
	}
}

func TestHostPort(t *testing.T) {
	_, err := exec.LookPath("iptables")
	objdbtest.RequireComponent(t, "iptables", err)
	e := newEnv(t)
	d := e.driver(t, nil)
	ensureBridge(t, e, d, ovsdriver.VxlanBridge)
	for i := 0; i < 2; i++ { // the second call is a no-op
		p, err := d.EnsureHostPort(e.ctx, "198.19.0.0/16")
		if err != nil {
			t.Fatal(err)
		}
		if p.PortName != "contivh0" || p.EndpointID != "hostcontivh0" ||
			strconv.Itoa(int(p.OFPort)) != e.vsctl(t, "get", "Interface", "contivh0", "ofport") {
			t.Fatalf("port = %+v", p)
		}
	}
	for _, c := range [][3]string{
		{"Interface", "type", "internal"},
		{"Port", "tag", "2"},
		{"Port", "external_ids:endpoint-id", "hostcontivh0"},
		{"Interface", "external_ids:endpoint-id", "hostcontivh0"},
	} {
		if got := e.vsctl(t, "get", c[0], "contivh0", c[1]); got != c[2] {
			t.Errorf("%s %s = %s, want %s", c[0], c[1], got, c[2])
		}
	}
	l, err := e.nl.LinkByName("contivh0")
	if err != nil {
		t.Fatal(err)
	}
	if l.Attrs().HardwareAddr.String() != "02:02:c6:13:ff:fe" || l.Attrs().Flags&net.FlagUp == 0 {
		t.Errorf("contivh0 MAC %s flags %v", l.Attrs().HardwareAddr, l.Attrs().Flags)
	}
	addrs, err := e.nl.AddrList(l, netlink.FAMILY_V4)
	if err != nil || len(addrs) != 1 || addrs[0].IPNet.String() != "198.19.255.254/16" {
		t.Errorf("contivh0 addresses %v, %v", addrs, err)
	}
	out, err := e.ovs.Exec("iptables", "-w", "5", "-t", "nat", "-S", "POSTROUTING")
	if err != nil {
		t.Fatalf("iptables -S: %v: %s", err, out)
	}
	if strings.Contains(out, "MASQUERADE") {
		t.Errorf("the host port added a NAT rule (host NAT is netplugin/hostnat's, on request only):\n%s", out)
	}
	eps, err := d.ExistingEndpoints(e.ctx, ovsdriver.VxlanBridge)
	if err != nil || len(eps) != 0 {
		t.Errorf("the host port counts as an endpoint: %+v %v", eps, err)
	}
}
