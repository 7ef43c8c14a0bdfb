package agent

import (
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
)

// underlay links two hosts: a veth pair whose ends are each host's eth, attached to a
// netdev bridge br-phy that carries the host's underlay address (docs/testbed.md).
func underlay(t *testing.T, h1, h2 *host) {
	s := randHex(4)
	e1, e2 := "u1"+s, "u2"+s
	run(t, "ip", "link", "add", e1, "type", "veth", "peer", "name", e2)
	t.Cleanup(func() { _ = exec.Command("ip", "-n", h1.ovs.NetNS, "link", "del", e1).Run() })
	for _, x := range []struct {
		h   *host
		eth string
	}{{h1, e1}, {h2, e2}} {
		run(t, "ip", "link", "set", x.eth, "netns", x.h.ovs.NetNS)
		run(t, "ip", "-n", x.h.ovs.NetNS, "link", "set", x.eth, "up")
		if out, err := x.h.ovs.Vsctl("add-br", "br-phy", "--", "set", "bridge", "br-phy", "datapath_type=netdev",
			"--", "add-port", "br-phy", x.eth); err != nil {
			t.Fatalf("br-phy: %v: %s", err, out)
		}
		run(t, "ip", "-n", x.h.ovs.NetNS, "addr", "add", x.h.ip.String()+"/24", "dev", "br-phy")
		run(t, "ip", "-n", x.h.ovs.NetNS, "link", "set", "br-phy", "up")
	}
}

// addVtep creates the VXLAN port towards peer on the host's bridge and returns its
// OpenFlow port.
func (h *host) addVtep(t *testing.T, peer net.IP) uint32 {
	name := "vxif" + strings.ReplaceAll(peer.String(), ".", "")
	if out, err := h.ovs.Vsctl("add-port", h.bridge, name, "--", "set", "interface", name, "type=vxlan",
		"options:remote_ip="+peer.String(), "options:key=flow", "options:tos=inherit",
		"options:dst_port=4789"); err != nil {
		t.Fatalf("add vtep: %v: %s", err, out)
	}
	return h.ofport(t, name)
}

// twoHosts builds two hosts with agents of the datapath, an underlay, VTEPs, a shared
// fake master, one network and one container each.
func twoHosts(t *testing.T, datapath string) (h1, h2 *host, c1, c2 *container) {
	h1 = startHost(t, datapath, "198.18.0.1")
	h2 = startHost(t, datapath, "198.18.0.2")
	underlay(t, h1, h2)
	m := startFakeMaster(t)
	ctx := testCtx(t)
	for _, x := range []struct {
		h, peer *host
		ip      string
	}{{h1, h2, "198.18.10.1"}, {h2, h1, "198.18.10.2"}} {
		if err := x.h.agent.AddMaster(ctx, m.addr); err != nil {
			t.Fatal(err)
		}
		if err := x.h.agent.AddNetwork(ctx, 10, 7000, "198.18.10.254", "t1"); err != nil {
			t.Fatal(err)
		}
		port := x.h.addVtep(t, x.peer.ip)
		if err := x.h.agent.AddVtepPort(ctx, port, x.peer.ip); err != nil {
			t.Fatal(err)
		}
		c := x.h.addContainer(t, x.ip, 24, 0, 0)
		if err := x.h.agent.AddLocalEndpoint(ctx, c.endpointInfo(10, 1)); err != nil {
			t.Fatal(err)
		}
		if x.h == h1 {
			c1 = c
		} else {
			c2 = c
		}
	}
	// The master relays each host's endpoint to the other.
	for _, x := range []struct {
		h  *host
		id string
	}{{h1, "198.18.10.2:t1"}, {h2, "198.18.10.1:t1"}} {
		waitFor(t, "remote endpoint "+x.id, func() bool {
			_, ok := x.h.agent.State().EndpointDb[x.id]
			return ok
		}, func() string { return fmt.Sprintf("%+v", x.h.agent.State().EndpointDb) })
	}
	return h1, h2, c1, c2
}

func testCrossHost(t *testing.T, datapath string) {
	h1, h2, c1, c2 := twoHosts(t, datapath)
	if !c1.ping(c2.ip, 15) {
		t.Fatalf("%s: no ping across the VXLAN tunnel\nhost1 %s\nhost2 %s", datapath, h1.dumpOnFail(t), h2.dumpOnFail(t))
	}
	if !c2.ping(c1.ip, 5) {
		t.Fatalf("%s: no ping back across the tunnel", datapath)
	}

	// Removing the VTEP removes every flow and bucket that outputs to it or matches
	// it, including the peer's endpoint flows; adding it back restores the ping.
	ctx := testCtx(t)
	vport := h1.agent.State().VtepTable[h2.ip.String()]
	if err := h1.agent.RemoveVtepPort(ctx, vport, h2.ip); err != nil {
		t.Fatal(err)
	}
	p := fmt.Sprint(vport)
	for _, f := range append(h1.flows(t), h1.groups(t)...) {
		if strings.Contains(f, "in_port="+p+",") || strings.Contains(f, "in_port="+p+" ") ||
			strings.Contains(f, "output:"+p) || strings.Contains(f, "198.18.10.2") ||
			strings.Contains(f, c2.mac.String()) {
			t.Errorf("after RemoveVtepPort a flow still mentions the VTEP or its endpoint: %s", f)
		}
	}
	if err := h1.agent.AddVtepPort(ctx, vport, h2.ip); err != nil {
		t.Fatal(err)
	}
	if !c1.ping(c2.ip, 10) {
		t.Fatalf("%s: no ping after re-adding the VTEP\n%s", datapath, h1.dumpOnFail(t))
	}

	// Removing the remote host's endpoint reaches host 1 through the master.
	if err := h2.agent.RemoveLocalEndpoint(ctx, c2.port); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "remote endpoint removal", func() bool {
		for _, f := range h1.flows(t) {
			if strings.Contains(f, "198.18.10.2") || strings.Contains(f, c2.mac.String()) {
				return false
			}
		}
		return true
	}, func() string { return h1.dumpOnFail(t) })
}

func TestCrossHostVxlanBridge(t *testing.T)  { testCrossHost(t, DatapathVxlan) }
func TestCrossHostVxlanRouting(t *testing.T) { testCrossHost(t, DatapathVrouter) }
