package e2e

import (
	"testing"
	"time"

	"github.com/contiv/netplugin/test/testbed"
)

// TestVxlanRouting: fwd mode routing (contivVxlanBridge runs the VXLAN
// routing pipeline): containers on two hosts and two networks of one tenant
// reach each other through the distributed router; another tenant's
// containers are not reachable.
func TestVxlanRouting(t *testing.T) {
	tb := testbed.New(t, testbed.Config{Hosts: 2, NetMode: "vxlan", FwdMode: "routing"})
	netctl(t, tb, "net", "create", "--encap", "vxlan", "--subnet", "198.19.8.0/24", "--gateway", "198.19.8.254", "r1")
	netctl(t, tb, "net", "create", "--encap", "vxlan", "--subnet", "198.19.9.0/24", "--gateway", "198.19.9.254", "r2")
	netctl(t, tb, "tenant", "create", "green")
	netctl(t, tb, "net", "create", "--tenant", "green", "--encap", "vxlan", "--subnet", "198.19.10.0/24", "--gateway", "198.19.10.254", "g1")
	a := attachNew(t, tb.Hosts[0], "ra", "default", "r1", "")
	b := attachNew(t, tb.Hosts[1], "rb", "default", "r1", "")
	c := attachNew(t, tb.Hosts[1], "rc", "default", "r2", "")
	d := attachNew(t, tb.Hosts[0], "rd", "default", "r2", "")
	g := attachNew(t, tb.Hosts[1], "rg", "green", "g1", "")
	for _, p := range [][2]*ctr{{a, b}, {a, c}, {b, d}, {c, d}, {a, d}} {
		if err := pingOK(p[0], p[1], 20*time.Second); err != nil {
			t.Error(err)
		}
	}
	// 3 MB transfers across hosts (same network, and routed) and on one
	// host (routed between the two networks).
	for _, p := range [][2]*ctr{{a, b}, {b, d}, {a, d}, {c, b}} {
		if err := trafficOK(p[0], p[1], 10*time.Second); err != nil {
			t.Error(err)
		}
	}
	for _, p := range [][2]*ctr{{a, g}, {g, b}} {
		if err := pingFails(p[0], p[1]); err != nil {
			t.Error(err)
		}
	}
}
