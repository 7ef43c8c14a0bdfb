package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/contiv/netplugin/state"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/test/testbed"
)

// TestThreeHostsBridgeMode is the dataplane acceptance of issue 6 on the
// cluster-wide bridge forwarding mode: a VXLAN network (contivVxlanBridge,
// VXLAN bridging) and a VLAN network (contivVlanBridge, VLAN bridging over
// the uplinks) on three hosts, two containers per host per network.
// Containers stay at their default interface settings: every reachability
// check sends TCP and UDP besides ping.
func TestThreeHostsBridgeMode(t *testing.T) {
	tb := testbed.New(t, testbed.Config{Hosts: 3, NetMode: "vlan", FwdMode: "bridge"})
	netctl(t, tb, "net", "create", "--encap", "vxlan", "--subnet", "198.19.1.0/24", "--gateway", "198.19.1.254", "vx")
	netctl(t, tb, "net", "create", "--encap", "vlan", "--subnet", "198.19.2.0/24", "--gateway", "198.19.2.254", "vl")
	// Tenant blue re-uses the VXLAN subnet: isolation must come from the
	// VNI and VRF, not from addressing.
	netctl(t, tb, "tenant", "create", "blue")
	netctl(t, tb, "net", "create", "--tenant", "blue", "--encap", "vxlan", "--subnet", "198.19.1.0/24", "--gateway", "198.19.1.254", "bx")

	byNet := map[string][]*ctr{}
	for i, h := range tb.Hosts {
		for j := 0; j < 2; j++ {
			byNet["vx"] = append(byNet["vx"], attachNew(t, h, fmt.Sprintf("x%d%d", i, j), "default", "vx", ""))
			byNet["vl"] = append(byNet["vl"], attachNew(t, h, fmt.Sprintf("l%d%d", i, j), "default", "vl", ""))
		}
	}
	blue := []*ctr{attachNew(t, tb.Hosts[0], "b0", "blue", "bx", ""), attachNew(t, tb.Hosts[2], "b2", "blue", "bx", "")}

	t.Run("every pair on a network pings", func(t *testing.T) {
		for _, name := range []string{"vx", "vl"} {
			cs := byNet[name]
			for i := range cs {
				for j := i + 1; j < len(cs); j++ {
					if err := pingOK(cs[i], cs[j], 15*time.Second); err != nil {
						t.Error(err)
					}
				}
			}
		}
		if err := pingOK(blue[0], blue[1], 15*time.Second); err != nil {
			t.Error(err)
		}
	})
	t.Run("3 MB TCP transfers and UDP on one host and across hosts (VXLAN and VLAN bridging)", func(t *testing.T) {
		for _, name := range []string{"vx", "vl"} {
			cs := byNet[name] // cs[0], cs[1] on host 0; cs[2] on host 1
			for _, p := range [][2]*ctr{{cs[0], cs[1]}, {cs[1], cs[0]}, {cs[0], cs[2]}, {cs[3], cs[1]}} {
				if err := trafficOK(p[0], p[1], 15*time.Second); err != nil {
					t.Errorf("%s: %v", name, err)
				}
			}
		}
	})
	if t.Failed() {
		return
	}

	t.Run("inspect: netplugin's /inspect/driver and netmaster's /debug/ofnet", func(t *testing.T) {
		var drv map[string]struct {
			IsConnected bool
			DpName      string
			EndpointDb  map[string]json.RawMessage
		}
		h := tb.Hosts[0]
		getJSON(t, h.HTTPClient(), h.InspectURL()+"/inspect/driver", &drv)
		if !drv["vxlan"].IsConnected || drv["vxlan"].DpName != "vxlan" || !drv["vlan"].IsConnected || drv["vlan"].DpName != "vlan" {
			t.Errorf("inspect/driver: %+v", drv)
		}
		if len(drv["vxlan"].EndpointDb) < 8 || len(drv["vlan"].EndpointDb) < 6 {
			t.Errorf("inspect/driver endpoint dbs: vxlan %d, vlan %d entries", len(drv["vxlan"].EndpointDb), len(drv["vlan"].EndpointDb))
		}
		var om struct {
			AgentDb    map[string]json.RawMessage
			EndpointDb map[string]json.RawMessage
		}
		getJSON(t, tb.HTTPClient(), tb.MasterURL()+"/debug/ofnet", &om)
		if len(om.AgentDb) != 6 || len(om.EndpointDb) != 14 {
			t.Errorf("/debug/ofnet: %d agents (want 2 per host), %d endpoints (want 14)", len(om.AgentDb), len(om.EndpointDb))
		}
		// One identity per host although its control and VTEP addresses
		// differ (docs/daemons.md §10 row 10): the ofnet master knows the agents
		// by VTEP address, the `netplugin` service lists the control ones.
		var info testbed.Info
		getJSON(t, tb.HTTPClient(), tb.MasterURL()+"/info", &info)
		for _, h := range tb.Hosts {
			for _, port := range []string{":9002", ":9003"} {
				if _, ok := om.AgentDb[h.IP+port]; !ok {
					t.Errorf("/debug/ofnet: no agent %s%s (host %s's VTEP address); agents %v", h.IP, port, h.Name, slices.Sorted(maps.Keys(om.AgentDb)))
				}
			}
			if !slices.Contains(info.NetpluginNodes, h.CtrlIP) {
				t.Errorf("/info netplugin-nodes %v: no %s (host %s's control address)", info.NetpluginNodes, h.CtrlIP, h.Name)
			}
		}
	})

	t.Run("no container reaches another network or tenant", func(t *testing.T) {
		for _, pair := range [][2]*ctr{
			{byNet["vx"][0], byNet["vl"][3]}, {byNet["vl"][1], byNet["vx"][4]},
			// Default-tenant addresses that blue does not use (blue holds .1 and .2).
			{blue[0], byNet["vx"][3]}, {blue[1], byNet["vx"][4]}, {blue[0], byNet["vx"][5]},
		} {
			if err := pingFails(pair[0], pair[1]); err != nil {
				t.Error(err)
			}
		}
	})

	t.Run("deleting an endpoint removes its port and every flow naming it", func(t *testing.T) {
		// x21 on host 2 (198.19.1.6): an address blue does not use, so no
		// flow of the other tenant can mention it.
		gone := byNet["vx"][5]
		detach(t, gone)
		byNet["vx"] = byNet["vx"][:5]
		ports, err := gone.host.Vsctl("list-ports", "contivVxlanBridge")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(ports, gone.res.PortName) {
			t.Errorf("port %s still on %s:\n%s", gone.res.PortName, gone.host.Name, ports)
		}
		for _, h := range tb.Hosts {
			if err := waitNoFlowMentions(h, "contivVxlanBridge", []string{gone.ip() + ",", gone.ip() + " ", gone.res.MacAddress}, 15*time.Second); err != nil {
				t.Error(err)
			}
		}
		if err := pingOK(byNet["vx"][0], byNet["vx"][4], 10*time.Second); err != nil {
			t.Errorf("remaining endpoints: %v", err)
		}
	})

	t.Run("netplugin restart keeps other hosts forwarding and leaves no duplicate or stale state", func(t *testing.T) {
		h := tb.Hosts[0]
		before := snapshot(t, h)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		// Pings between the other two hosts, on both networks.
		pVX := byNet["vx"][2].StartPinger(ctx, byNet["vx"][4].ip())
		pVL := byNet["vl"][2].StartPinger(ctx, byNet["vl"][4].ip())
		time.Sleep(time.Second)
		h.RestartNetplugin(t)
		tb.WaitNetplugins(t, len(tb.Hosts), 30*time.Second)
		time.Sleep(2 * time.Second)
		for _, p := range []*testbed.Pinger{pVX, pVL} {
			st := p.Stop()
			if st.Err != nil || st.Received == 0 || st.MaxLost > 1 {
				t.Errorf("pings between the other hosts were interrupted: sent %d received %d longest gap %v (%v)\n%s",
					st.Sent, st.Received, st.LongestGap, st.Err, st.Output)
			} else {
				t.Logf("during the netplugin restart: %d/%d replies between the other hosts, longest gap %v", st.Received, st.Sent, st.LongestGap)
			}
		}
		// Its own containers talk again.
		if err := pingOK(byNet["vx"][0], byNet["vx"][3], 20*time.Second); err != nil {
			t.Error(err)
		}
		if err := pingOK(byNet["vl"][0], byNet["vl"][3], 20*time.Second); err != nil {
			t.Error(err)
		}
		// Same ports and flows, also after the agents' stale-flow sweep
		// (5 s after the masters are back).
		if err := waitSnapshot(h, before, 45*time.Second); err != nil {
			t.Error(err)
		}
		time.Sleep(8 * time.Second)
		if err := waitSnapshot(h, before, time.Second); err != nil {
			t.Errorf("after the stale-flow sweep: %v", err)
		}
	})

	t.Run("ovs-vswitchd restart: the controller restores the flows and pings resume", func(t *testing.T) {
		h := tb.Hosts[1]
		before := snapshot(t, h)
		h.RestartVswitchd(t)
		if err := pingOK(byNet["vx"][2], byNet["vx"][0], 30*time.Second); err != nil {
			t.Error(err)
		}
		if err := pingOK(byNet["vl"][2], byNet["vl"][0], 30*time.Second); err != nil {
			t.Error(err)
		}
		if err := waitSnapshot(h, before, 30*time.Second); err != nil {
			t.Error(err)
		}
	})

	t.Run("a stopped host is kept by its peers, and dropped when it leaves the cluster", func(t *testing.T) {
		h := tb.Hosts[2]
		var mentions []string
		for _, c := range byNet["vx"] { // blue's addresses (and MACs) overlap the default tenant's
			if c.host == h {
				mentions = append(mentions, c.res.MacAddress)
			}
		}
		vtep := "vxif" + strings.ReplaceAll(h.IP, ".", "")
		h.StopHost(t)
		headlessKept(t, tb.Hosts[:2], vtep)
		leaveCluster(t, tb, h)
		start := time.Now()
		for _, peer := range tb.Hosts[:2] {
			if err := waitNoPort(peer, "contivVxlanBridge", vtep, 30*time.Second); err != nil {
				t.Error(err)
			}
			if err := waitNoFlowMentions(peer, "contivVxlanBridge", mentions, 30*time.Second); err != nil {
				t.Error(err)
			}
		}
		took := time.Since(start)
		t.Logf("host %s dropped by its peers %v after it left the cluster", h.Name, took.Round(100*time.Millisecond))
		if took > 15*time.Second {
			t.Errorf("peers dropped the departed host after %v: more than 15 s", took)
		}
		// netmaster's ofnet master forgets the host's agents within the same
		// bound. Each service key has its own lease, so the agents' keys
		// expire independently of the VTEP key the peers react to: poll.
		var left []string
		for {
			var om struct{ AgentDb map[string]json.RawMessage }
			getJSON(t, tb.HTTPClient(), tb.MasterURL()+"/debug/ofnet", &om)
			left = left[:0]
			for a := range om.AgentDb {
				if strings.HasPrefix(a, h.IP+":") {
					left = append(left, a)
				}
			}
			if len(left) == 0 || time.Since(start) > 15*time.Second {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if len(left) > 0 {
			t.Errorf("ofnet master still lists agents %v of the stopped host %v after it stopped", left, time.Since(start).Round(100*time.Millisecond))
		} else {
			t.Logf("ofnet master forgot host %s's agents %v after it stopped", h.Name, time.Since(start).Round(100*time.Millisecond))
		}
		if err := pingOK(byNet["vx"][0], byNet["vx"][2], 10*time.Second); err != nil {
			t.Errorf("remaining hosts: %v", err)
		}
	})
}

// hostSnapshot is what must not change across a restart.
type hostSnapshot struct {
	ports map[string][]string
	flows map[string][]string
}

func snapshot(t *testing.T, h *testbed.Host) hostSnapshot {
	t.Helper()
	s, err := takeSnapshot(h)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func takeSnapshot(h *testbed.Host) (hostSnapshot, error) {
	s := hostSnapshot{ports: map[string][]string{}, flows: map[string][]string{}}
	for _, br := range []string{"contivVxlanBridge", "contivVlanBridge"} {
		out, err := h.Vsctl("list-ports", br)
		if err != nil {
			return s, err
		}
		s.ports[br] = strings.Fields(out)
		if s.flows[br], err = h.DumpFlows(br); err != nil {
			return s, err
		}
	}
	return s, nil
}

// waitSnapshot polls until the host's ports and flows equal before.
func waitSnapshot(h *testbed.Host, before hostSnapshot, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		now, err := takeSnapshot(h)
		diff := ""
		if err == nil {
			for br := range before.ports {
				if !slices.Equal(before.ports[br], now.ports[br]) {
					diff += fmt.Sprintf("%s ports before %v after %v\n", br, before.ports[br], now.ports[br])
				}
				if !slices.Equal(before.flows[br], now.flows[br]) {
					diff += fmt.Sprintf("%s flows differ:\n%s", br, flowDiff(before.flows[br], now.flows[br]))
				}
			}
			if diff == "" {
				return nil
			}
		}
		if time.Now().After(deadline) {
			if err != nil {
				return err
			}
			return fmt.Errorf("%s: state after the restart differs from before:\n%s", h.Name, diff)
		}
		time.Sleep(time.Second)
	}
}

func flowDiff(a, b []string) string {
	var out strings.Builder
	for _, f := range a {
		if !slices.Contains(b, f) {
			out.WriteString("  - " + f + "\n")
		}
	}
	for _, f := range b {
		if !slices.Contains(a, f) {
			out.WriteString("  + " + f + "\n")
		}
	}
	return out.String()
}

// waitNoFlowMentions polls until no flow of the bridge contains any of the
// strings.
func waitNoFlowMentions(h *testbed.Host, bridge string, needles []string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		flows, err := h.DumpFlows(bridge)
		var bad []string
		for _, f := range flows {
			for _, n := range needles {
				if strings.Contains(f+" ", n) {
					bad = append(bad, f)
					break
				}
			}
		}
		if err == nil && len(bad) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return err
			}
			return fmt.Errorf("%s %s: flows still mention %v:\n%s", h.Name, bridge, needles, strings.Join(bad, "\n"))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func waitNoPort(h *testbed.Host, bridge, port string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		out, err := h.Vsctl("list-ports", bridge)
		if err == nil && !slices.Contains(strings.Fields(out), port) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: port %s still on %s (%v):\n%s", h.Name, port, bridge, err, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func getJSON(t *testing.T, c *http.Client, url string, v any) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v\n%s", url, err, b)
	}
}

// leaveCluster does what netmaster's host GC does once a host has been
// gone for its delay (24 h, netmaster/endpoints/reclaim/hostgc.go): the host's
// endpoint records and then its node record are deleted, so the host
// leaves the cluster and its peers drop it (docs/architecture.md,
// "Headless dataplane"). Addresses and counters are not given back: the
// test ends with it.
func leaveCluster(t *testing.T, tb *testbed.Testbed, h *testbed.Host) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st := state.New(tb.Store(t))
	eps, _, err := st.Endpoints.ReadAll(ctx)
	if err != nil {
		t.Fatalf("list endpoints: %v", err)
	}
	for _, ep := range eps {
		if ep.HomingHost == h.Name {
			if err := st.Endpoints.Clear(ctx, ep.ID); err != nil {
				t.Fatalf("delete endpoint %s: %v", ep.ID, err)
			}
		}
	}
	if err := st.Nodes.Clear(ctx, h.Name); err != nil {
		t.Fatalf("delete node record of %s: %v", h.Name, err)
	}
}

// headlessKept checks that peers keep a stopped host's tunnel port past the
// service TTL: its containers' traffic must not depend on its agent.
func headlessKept(t *testing.T, peers []*testbed.Host, port string) {
	t.Helper()
	time.Sleep(15 * time.Second) // the service TTL (10 s) + 5 s
	for _, peer := range peers {
		out, err := peer.Vsctl("list-ports", "contivVxlanBridge")
		if err != nil || !slices.Contains(strings.Fields(out), port) {
			t.Errorf("%s dropped tunnel port %s of a host that is stopped but still in the cluster (%v):\n%s", peer.Name, port, err, out)
		}
	}
}
