package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/test/testbed"
)

// TestConsulHostLoss: on a consul store, containers on two hosts ping each
// other; when one host stops, the other keeps its tunnel port past the
// service TTL (consul sessions, not etcd leases, expire the host's
// registrations here; the host is still in the cluster), and drops the port
// and its endpoint's flows once the host leaves the cluster.
func TestConsulHostLoss(t *testing.T) {
	tb := testbed.New(t, testbed.Config{Hosts: 2, NetMode: "vlan", FwdMode: "bridge", Store: testbed.ExternalConsul})
	netctl(t, tb, "net", "create", "--encap", "vxlan", "--subnet", "198.19.13.0/24", "--gateway", "198.19.13.254", "cx")
	a := attachNew(t, tb.Hosts[0], "ca", "default", "cx", "")
	b := attachNew(t, tb.Hosts[1], "cb", "default", "cx", "")
	if err := pingOK(a, b, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	gone, peer := tb.Hosts[1], tb.Hosts[0]
	gone.StopHost(t)
	headlessKept(t, []*testbed.Host{peer}, "vxif"+strings.ReplaceAll(gone.IP, ".", ""))
	leaveCluster(t, tb, gone)
	start := time.Now()
	if err := waitNoPort(peer, "contivVxlanBridge", "vxif"+strings.ReplaceAll(gone.IP, ".", ""), 30*time.Second); err != nil {
		t.Error(err)
	}
	if err := waitNoFlowMentions(peer, "contivVxlanBridge", []string{b.res.MacAddress}, 30*time.Second); err != nil {
		t.Error(err)
	}
	took := time.Since(start)
	t.Logf("host %s dropped by its peer %v after it left the cluster", gone.Name, took.Round(100*time.Millisecond))
	if took > 15*time.Second {
		t.Errorf("the peer dropped the departed host after %v: more than 15 s", took)
	}
}
