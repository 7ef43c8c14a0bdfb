package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/contiv/netplugin/test/testbed"
)

// TestStoreOutage: the hosts lose the cluster store (their packets to it
// are dropped) for a while. Forwarding goes on from what is installed,
// netplugin does not exit, and once the store is back the agents catch up
// with what changed meanwhile (a network created during the outage).
func TestStoreOutage(t *testing.T) {
	tb := testbed.New(t, testbed.Config{Hosts: 2, NetMode: "vlan", FwdMode: "bridge", Store: testbed.ExternalEtcd})
	netctl(t, tb, "net", "create", "--encap", "vxlan", "--subnet", "198.19.11.0/24", "--gateway", "198.19.11.254", "so")
	a := attachNew(t, tb.Hosts[0], "sa", "default", "so", "")
	b := attachNew(t, tb.Hosts[1], "sb", "default", "so", "")
	if err := pingOK(a, b, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := a.StartPinger(ctx, b.ip())

	block := func(on bool) {
		op := "-I"
		if !on {
			op = "-D"
		}
		for _, h := range tb.Hosts {
			if out, err := h.Exec("iptables", "-w", "5", op, "OUTPUT", "-d", testbed.StoreIP, "-j", "DROP"); err != nil {
				t.Fatalf("iptables on %s: %v\n%s", h.Name, err, out)
			}
		}
	}
	block(true)
	unblocked := false
	defer func() {
		if !unblocked {
			block(false)
		}
	}()
	// Shorter than the service TTL (10 s), so the hosts' registrations
	// survive; long enough for every store call of the agents to fail.
	time.Sleep(3 * time.Second)
	netctl(t, tb, "net", "create", "--encap", "vxlan", "--subnet", "198.19.12.0/24", "--gateway", "198.19.12.254", "late")
	time.Sleep(4 * time.Second)
	for _, h := range tb.Hosts {
		if !h.NetpluginRunning() {
			t.Fatalf("netplugin on %s exited during the store outage:\n%s", h.Name, h.Logs())
		}
	}
	block(false)
	unblocked = true

	// The network created during the outage reaches both hosts.
	deadline := time.Now().Add(60 * time.Second)
	var c, d *ctr
	for c == nil && time.Now().Before(deadline) {
		c = tryAttach(t, tb.Hosts[0], "sc", "default", "late")
		if c == nil {
			time.Sleep(time.Second)
		}
	}
	if c == nil {
		t.Fatal("no attach on the network created during the outage within 60 s")
	}
	d = attachNew(t, tb.Hosts[1], "sd", "default", "late", "")
	if err := pingOK(c, d, 30*time.Second); err != nil {
		t.Error(err)
	}
	time.Sleep(time.Second)
	st := p.Stop()
	if st.Err != nil || st.Received == 0 || st.MaxLost > 1 {
		t.Errorf("pings were interrupted by the store outage: sent %d received %d longest gap %v (%v)\n%s",
			st.Sent, st.Received, st.LongestGap, st.Err, st.Output)
	} else {
		t.Logf("through the outage: %d/%d replies, longest gap %v", st.Received, st.Sent, st.LongestGap)
	}
}
