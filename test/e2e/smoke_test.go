package e2e

import (
	"testing"
	"time"

	"github.com/contiv/netplugin/test/testbed"
)

func TestSmokeTwoHostsVxlan(t *testing.T) {
	tb := testbed.New(t, testbed.Config{Hosts: 2, NetMode: "vlan", FwdMode: "bridge"})
	netctl(t, tb, "net", "create", "--encap", "vxlan", "--subnet", "198.19.1.0/24", "--gateway", "198.19.1.254", "vx1")
	a := attachNew(t, tb.Hosts[0], "a", "default", "vx1", "")
	b := attachNew(t, tb.Hosts[1], "b", "default", "vx1", "")
	if err := trafficOK(a, b, 20*time.Second); err != nil {
		t.Fatal(err)
	}
}
