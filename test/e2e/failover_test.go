package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/contiv/netplugin/test/testbed"
)

// TestLeaderFailoverKeepsForwarding: two netmasters on an external etcd,
// then on a consul server; the leader is killed while containers ping
// across hosts. The dataplane keeps forwarding, the other netmaster takes
// over, and new endpoints can be attached afterwards and reach the old ones.
func TestLeaderFailoverKeepsForwarding(t *testing.T) {
	for _, store := range []testbed.StoreMode{testbed.ExternalEtcd, testbed.ExternalConsul} {
		t.Run(store.String(), func(t *testing.T) { leaderFailover(t, store) })
	}
}

func leaderFailover(t *testing.T, store testbed.StoreMode) {
	tb := testbed.New(t, testbed.Config{Hosts: 2, NetMode: "vlan", FwdMode: "bridge",
		Netmasters: 2, Store: store, LeaderTTL: 3 * time.Second})
	netctl(t, tb, "net", "create", "--encap", "vxlan", "--subnet", "198.19.6.0/24", "--gateway", "198.19.6.254", "fo")
	netctl(t, tb, "net", "create", "--encap", "vlan", "--subnet", "198.19.7.0/24", "--gateway", "198.19.7.254", "fl")
	a := attachNew(t, tb.Hosts[0], "fa", "default", "fo", "")
	b := attachNew(t, tb.Hosts[1], "fb", "default", "fo", "")
	la := attachNew(t, tb.Hosts[0], "fla", "default", "fl", "")
	lb := attachNew(t, tb.Hosts[1], "flb", "default", "fl", "")
	for _, p := range [][2]*ctr{{a, b}, {la, lb}} {
		if err := pingOK(p[0], p[1], 20*time.Second); err != nil {
			t.Fatal(err)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pVX := a.StartPinger(ctx, b.ip())
	pVL := la.StartPinger(ctx, lb.ip())
	time.Sleep(time.Second)
	old := tb.Leader()
	if old == nil {
		t.Fatal("no leader")
	}
	old.Kill(t)
	start := time.Now()
	leader := tb.WaitLeader(t, old, 30*time.Second)
	t.Logf("new leader %s after %v", leader.Addr(), time.Since(start).Round(100*time.Millisecond))
	// New endpoints after the take-over, on both hosts, reach the old ones.
	c := attachNew(t, tb.Hosts[1], "fc", "default", "fo", "")
	d := attachNew(t, tb.Hosts[0], "fd", "default", "fo", "")
	for _, p := range [][2]*ctr{{a, c}, {d, b}, {c, d}} {
		if err := pingOK(p[0], p[1], 30*time.Second); err != nil {
			t.Error(err)
		}
	}
	time.Sleep(2 * time.Second)
	for _, p := range []*testbed.Pinger{pVX, pVL} {
		st := p.Stop()
		if st.Err != nil || st.Received == 0 || st.MaxLost > 1 {
			t.Errorf("pings were interrupted by the failover: sent %d received %d longest gap %v (%v)\n%s",
				st.Sent, st.Received, st.LongestGap, st.Err, st.Output)
		} else {
			t.Logf("during the failover: %d/%d replies, longest gap %v", st.Received, st.Sent, st.LongestGap)
		}
	}
}
