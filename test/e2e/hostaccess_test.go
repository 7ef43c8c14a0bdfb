package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/test/testbed"
)

// natRules is the host's nat table as iptables lists it.
func natRules(t *testing.T, c *testbed.Container) string {
	t.Helper()
	out, err := c.Exec("iptables", "-w", "5", "-t", "nat", "-S")
	if err != nil {
		t.Fatalf("iptables -t nat -S in %s: %v", c.Name, err)
	}
	return out
}

// reachIP pings ip from c until answered (within), then checks TCP and UDP
// against the echo at ip.
func reachIP(c *testbed.Container, ip string, within time.Duration) error {
	deadline := time.Now().Add(within)
	var err error
	for time.Now().Before(deadline) {
		if err = c.Ping(ip, 1, 2*time.Second); err == nil {
			break
		}
	}
	if err == nil {
		err = c.CheckTraffic(ip, testbed.TrafficPort, trafficTimeout)
	}
	if err != nil {
		return fmt.Errorf("%s → %s: %w", c.Name, ip, err)
	}
	return nil
}

// TestHostAccess is issue 15's host access acceptance (docs/dataplane.md
// §3.7): in routing mode with --host-access a container reaches its host's
// address and, masqueraded by the host, an address behind the host (a
// namespace standing for the world); the host reaches the container at its
// private address; the host NAT rule is the host's own and goes away with
// host access, leaving the nat table as a fresh namespace has it.
func TestHostAccess(t *testing.T) {
	tb := testbed.New(t, testbed.Config{Hosts: 1, NetMode: "vxlan", FwdMode: "routing",
		NetpluginArgs: []string{"--host-access"}})
	h := tb.Hosts[0]
	fresh := h.NewContainerNS(t, "fresh")
	before := natRules(t, fresh)
	out := h.AddOutside(t)
	out.ServeTraffic(t)
	host := h.AsContainer()
	// Bound to each address: the host has several, and an unbound UDP
	// socket would answer from the one of the route back (contivh0's).
	host.ServeTrafficOn(t, h.IP, testbed.TrafficPort)

	netctl(t, tb, "net", "create", "--encap", "vxlan", "--subnet", "198.19.5.0/24", "--gateway", "198.19.5.254", "ha")
	c := attachNew(t, h, "ha0", "default", "ha", "")

	rules := natRules(t, host)
	if n := strings.Count(rules, "MASQUERADE"); n != 1 || !strings.Contains(rules, "-s 172.19.0.0/16 ! -o contivh0") {
		t.Fatalf("host nat table with host access (want one masquerade of the private subnet):\n%s", rules)
	}
	t.Run("container reaches its host's address", func(t *testing.T) {
		if err := reachIP(c.Container, h.IP, 20*time.Second); err != nil {
			flows, _ := h.DumpFlows("contivVxlanBridge")
			addrs, _ := host.Exec("ip", "-4", "addr")
			t.Errorf("%v\nflows:\n%s\n%s", err, strings.Join(flows, "\n"), addrs)
		}
	})
	t.Run("container reaches an address behind the host", func(t *testing.T) {
		if err := reachIP(c.Container, out.IP, 20*time.Second); err != nil {
			t.Error(err)
		}
	})
	t.Run("host reaches the container at its private address", func(t *testing.T) {
		pvt := privateIP(t, h, c.ip())
		t.Logf("%s has the private address %s", c.ip(), pvt)
		if err := reachIP(host, pvt, 20*time.Second); err != nil {
			t.Error(err)
		}
	})
	t.Run("without host access the host's nat table is as before", func(t *testing.T) {
		h.StopNetplugin(t)
		if got := natRules(t, host); got != before {
			t.Errorf("nat table after netplugin stopped:\n%s\nwant (fresh namespace):\n%s", got, before)
		}
		tb.Config.NetpluginArgs = nil
		h.StartNetplugin(t)
		time.Sleep(3 * time.Second)
		if got := natRules(t, host); got != before {
			t.Errorf("nat table with a netplugin without --host-access:\n%s\nwant:\n%s", got, before)
		}
		if err := c.Ping(out.IP, 1, 2*time.Second); err == nil {
			t.Error("the container still reaches the outside without host access")
		}
	})
	if t.Failed() {
		t.Log(tb.Hosts[0].Logs())
	}
}

// privateIP reads the container's private address from netplugin's
// /inspect/driver (the VXLAN agent's HostAccess map).
func privateIP(t *testing.T, h *testbed.Host, ip string) string {
	t.Helper()
	var drv map[string]struct{ HostAccess map[string]string }
	getJSON(t, h.HTTPClient(), h.InspectURL()+"/inspect/driver", &drv)
	for k, v := range drv["vxlan"].HostAccess {
		if strings.HasPrefix(k, ip+":") {
			return v
		}
	}
	t.Fatal(errors.New("no private address for " + ip + " in /inspect/driver"))
	return ""
}

// TestInfraNetwork: an infra network (netctl net create --nw-type infra)
// gives every host its own port on the network, named after it, with an
// address of the network (docs/daemons.md §6.3); the host and the network's
// containers reach each other directly (ping, TCP, UDP), without host access.
func TestInfraNetwork(t *testing.T) {
	tb := testbed.New(t, testbed.Config{Hosts: 1, NetMode: "vxlan", FwdMode: "routing"})
	h := tb.Hosts[0]
	netctl(t, tb, "net", "create", "--nw-type", "infra", "--encap", "vxlan", "--subnet", "198.19.7.0/24", "--gateway", "198.19.7.254", "infra0")
	var hostIP string
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && hostIP == "" {
		out, _ := h.Exec("ip", "-4", "-o", "addr", "show", "dev", "infra0")
		if f := strings.Fields(out); len(f) >= 4 && f[2] == "inet" {
			hostIP = strings.Split(f[3], "/")[0]
		}
		time.Sleep(200 * time.Millisecond)
	}
	if hostIP == "" {
		t.Fatalf("no address on the host's infra port infra0:\n%s", h.Logs())
	}
	host := h.AsContainer()
	host.ServeTrafficOn(t, hostIP, testbed.TrafficPort)
	c := attachNew(t, h, "in0", "default", "infra0", "")
	if err := reachIP(c.Container, hostIP, 20*time.Second); err != nil {
		t.Error(err)
	}
	if err := reachIP(host, c.ip(), 20*time.Second); err != nil {
		t.Error(err)
	}
}

// TestInfraRoutesSurviveRestart: with a `contivh1` infra network,
// netplugin routes the tenant's VXLAN networks through the host's port on
// it (netplugin/infraroute), so the host reaches a container of another
// network (as a kubelet probes its pods); a netplugin restart adopts the
// port and keeps its address and route, and the host → container probes
// (TCP and UDP) lose nothing across it.
func TestInfraRoutesSurviveRestart(t *testing.T) {
	tb := testbed.New(t, testbed.Config{Hosts: 1, NetMode: "vxlan", FwdMode: "routing"})
	h := tb.Hosts[0]
	netctl(t, tb, "net", "create", "--encap", "vxlan", "--subnet", "198.19.8.0/24", "--gateway", "198.19.8.254", "data0")
	netctl(t, tb, "net", "create", "--nw-type", "infra", "--encap", "vxlan", "--subnet", "198.19.9.0/24", "--gateway", "198.19.9.254", "contivh1")
	route := func() string {
		out, _ := h.Exec("ip", "-4", "route", "show", "198.19.8.0/24", "proto", "99")
		return strings.TrimSpace(out)
	}
	ifindex := func() string {
		out, _ := h.Exec("cat", "/sys/class/net/contivh1/ifindex")
		return strings.TrimSpace(out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && !strings.Contains(route(), "via 198.19.9.254 dev contivh1") {
		time.Sleep(200 * time.Millisecond)
	}
	if r := route(); !strings.Contains(r, "via 198.19.9.254 dev contivh1") {
		t.Fatalf("no route to data0 through contivh1: %q\n%s", r, h.Logs())
	}
	c := attachNew(t, h, "ir0", "default", "data0", "")
	host := h.AsContainer()
	if err := reachIP(host, c.ip(), 20*time.Second); err != nil {
		t.Fatal(err)
	}
	before := ifindex()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w, err := host.StartWatch(ctx, c.ip(), 200*time.Millisecond, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	time.Sleep(2 * time.Second)
	h.StopNetplugin(t)
	time.Sleep(3 * time.Second)
	h.StartNetplugin(t)
	tb.WaitNetplugins(t, 1, 60*time.Second)
	time.Sleep(3 * time.Second)
	w.Stop()
	for _, proto := range []string{"tcp", "udp"} {
		st := w.Stats(proto, time.Time{}, time.Time{})
		t.Logf("host → %s across the restart: %v", c.ip(), st)
		if st.Sent < 10 || len(st.Failures) != 0 {
			t.Errorf("host → %s %s lost probes across the restart: %v %+v", c.ip(), proto, st, st.Failures)
		}
	}
	if after := ifindex(); after != before {
		t.Errorf("the infra port was re-created (ifindex %s → %s)", before, after)
	}
	if r := route(); !strings.Contains(r, "via 198.19.9.254 dev contivh1") {
		t.Errorf("route to data0 after the restart: %q", r)
	}
}
