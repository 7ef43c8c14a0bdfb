package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/test/testbed"
)

// waitRoute polls the router until prefix is present (want) or absent, and
// returns how long that took.
func waitRoute(t *testing.T, r *testbed.Router, prefix string, want bool, within time.Duration) (time.Duration, error) {
	t.Helper()
	start := time.Now()
	var last string
	for time.Since(start) < within {
		has, table, err := r.HasRoute(prefix)
		last = table
		if err == nil && has == want {
			return time.Since(start), nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(start), fmt.Errorf("route %s present=%v not reached within %v; router table:\n%s", prefix, want, within, last)
}

// bgpCreate configures host h's BGP session with the testbed router.
func bgpCreate(t *testing.T, tb *testbed.Testbed, h *testbed.Host) {
	netctl(t, tb, "bgp", "create", h.Name, "--router-ip", testbed.RouterPeerIP(h.Index)+"/24",
		"--as", strconv.Itoa(testbed.HostAS(h.Index)), "--neighbor-as", strconv.Itoa(testbed.RouterAS),
		"--neighbor", testbed.RouterIP)
}

// TestVlanRoutingBGP is issue 15's VLAN routing acceptance (docs/dataplane.md
// §3.4): two hosts in routing mode on a VLAN network peer over BGP with a real
// router (bird in the fabric namespace); containers on the two hosts reach
// each other through the routes learned from it, the router's table holds
// each host's endpoint routes, a removed container's route is withdrawn
// within 5 s, a restarted router has the sessions and routes back within
// 30 s, and a restarted netplugin does not lose the other hosts' routes.
func TestVlanRoutingBGP(t *testing.T) {
	tb := testbed.New(t, testbed.Config{Hosts: 2, NetMode: "vlan", FwdMode: "routing"})
	r := tb.StartRouter(t)
	h0, h1 := tb.Hosts[0], tb.Hosts[1]
	netctl(t, tb, "net", "create", "--encap", "vlan", "--subnet", "198.19.2.0/24", "--gateway", "198.19.2.254", "vl")
	c0 := attachNew(t, h0, "r0", "default", "vl", "")
	c1 := attachNew(t, h1, "r1", "default", "vl", "")
	c2 := attachNew(t, h1, "r2", "default", "vl", "")

	t.Run("before BGP is configured inspect says so", func(t *testing.T) {
		var st map[string]any
		getJSON(t, h0.HTTPClient(), h0.InspectURL()+"/inspect/bgp", &st)
		if st["state"] != "not configured" || !strings.Contains(fmt.Sprint(st["message"]), "no BGP is configured") {
			t.Errorf("/inspect/bgp before BGP: %v", st)
		}
	})
	for _, h := range tb.Hosts {
		bgpCreate(t, tb, h)
	}
	t.Run("the router learns every endpoint route", func(t *testing.T) {
		for _, c := range []*ctr{c0, c1, c2} {
			if _, err := waitRoute(t, r, c.ip()+"/32", true, 30*time.Second); err != nil {
				t.Fatal(err)
			}
		}
	})
	if t.Failed() {
		t.Logf("bird:\n%s\nh0:\n%s", r.Logs(), h0.Logs())
		return
	}
	t.Run("containers on two hosts reach each other (ping, TCP, UDP)", func(t *testing.T) {
		for _, p := range [][2]*ctr{{c0, c1}, {c1, c0}, {c2, c0}, {c1, c2}} {
			if err := trafficOK(p[0], p[1], 20*time.Second); err != nil {
				t.Error(err)
			}
		}
	})
	t.Run("inspect shows the session and the routes", func(t *testing.T) {
		var st struct {
			State     string
			Neighbors []struct{ Address, State string }
			Announced []string
			Learned   []string
		}
		getJSON(t, h0.HTTPClient(), h0.InspectURL()+"/inspect/bgp", &st)
		if st.State != "running" || len(st.Neighbors) != 1 || st.Neighbors[0].State != "ESTABLISHED" ||
			!contains(st.Announced, c0.ip()+"/32") || !contains(st.Learned, c1.ip()+"/32") {
			t.Errorf("/inspect/bgp on %s: %+v", h0.Name, st)
		}
	})
	t.Run("a removed container's route is withdrawn within 5 s", func(t *testing.T) {
		detach(t, c2)
		took, err := waitRoute(t, r, c2.ip()+"/32", false, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("withdrawn at the router after %v", took.Round(time.Millisecond))
	})
	t.Run("a restarted router has sessions and routes back within 30 s", func(t *testing.T) {
		start := time.Now()
		r.Restart(t)
		for _, c := range []*ctr{c0, c1} {
			if _, err := waitRoute(t, r, c.ip()+"/32", true, 30*time.Second-time.Since(start)); err != nil {
				t.Fatal(err)
			}
		}
		for _, h := range tb.Hosts {
			if !r.SessionUp(h) {
				t.Errorf("session with %s not established", h.Name)
			}
		}
		t.Logf("routes back after %v", time.Since(start).Round(time.Millisecond))
		if err := pingOK(c0, c1, 30*time.Second-time.Since(start)); err != nil {
			t.Error(err)
		}
	})
	t.Run("a restarted netplugin does not lose the other hosts' routes", func(t *testing.T) {
		h0.RestartNetplugin(t)
		if ok, table, err := r.HasRoute(c1.ip() + "/32"); err != nil || !ok {
			t.Errorf("the router lost %s's route while %s restarted: %v\n%s", h1.Name, h0.Name, err, table)
		}
		if _, err := waitRoute(t, r, c0.ip()+"/32", true, 30*time.Second); err != nil {
			t.Error(err)
		}
		if err := trafficOK(c1, c0, 30*time.Second); err != nil {
			t.Error(err)
		}
	})
	if t.Failed() {
		t.Logf("bird:\n%s", r.Logs())
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
