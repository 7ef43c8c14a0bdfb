package agent

import (
	"strings"
	"testing"

	"github.com/contiv/netplugin/ofnet/ofrpc"
)

// localNet starts a host with network 10 (vlan 10, VNI 7000 for VXLAN datapaths,
// VRF t1) and returns it with the vlan tag its containers' ports carry.
func localNet(t *testing.T, datapath string) (*host, uint16) {
	h := startHost(t, datapath, "198.18.0.1")
	var vni uint32 = 7000
	var tag uint16
	if datapath == DatapathVlan {
		vni, tag = 0, 10
	}
	if err := h.agent.AddNetwork(testCtx(t), 10, vni, "198.18.10.254", "t1"); err != nil {
		t.Fatal(err)
	}
	return h, tag
}

// addEndpoint adds a container with ip/24 on network 10 (tag from localNet) and
// registers it with the agent in EPG epg.
func (h *host) addEndpoint(t *testing.T, ip string, tag uint16, epg int) *container {
	t.Helper()
	c := h.addContainer(t, ip, 24, tag, 0)
	if err := h.agent.AddLocalEndpoint(testCtx(t), c.endpointInfo(10, epg)); err != nil {
		t.Fatal(err)
	}
	return c
}

// localPair starts a host with two containers on network 10 (see localNet) in
// EPGs 1 and 2, registered with the agent.
func localPair(t *testing.T, datapath string) (*host, *container, *container) {
	h, tag := localNet(t, datapath)
	return h, h.addEndpoint(t, "198.18.10.1", tag, 1), h.addEndpoint(t, "198.18.10.2", tag, 2)
}

func (h *host) dumpOnFail(t *testing.T) string {
	return "flows:\n  " + strings.Join(h.flows(t), "\n  ") + "\ngroups:\n  " + strings.Join(h.groups(t), "\n  ")
}

// testLocalPingAndPolicy: the two containers ping each other (ARP answered by the
// agent's proxy: in proxy mode ARP requests never reach the other container); the
// neighbour entry carries the right MAC; a deny rule from EPG 1 to EPG 2 stops the
// ping and deleting it restores it.
func testLocalPingAndPolicy(t *testing.T, datapath string) {
	h, c1, c2 := localPair(t, datapath)
	if !c1.ping(c2.ip, 10) {
		t.Fatalf("%s: %v cannot ping %v\n%s", datapath, c1.ip, c2.ip, h.dumpOnFail(t))
	}
	neigh := run(t, "ip", "-n", c1.ns, "neigh", "show", c2.ip.String())
	wantMAC := c2.mac.String()
	if !strings.Contains(neigh, wantMAC) && !(datapath == DatapathVrouter && strings.Contains(neigh, routerMAC.String())) {
		t.Errorf("neighbour entry %q lacks the proxied MAC", neigh)
	}
	ctx := testCtx(t)
	deny := ofrpc.OfnetPolicyRule{RuleId: "deny-1-2", Priority: 10, SrcEndpointGroup: 1, DstEndpointGroup: 2,
		IpProtocol: 1, Action: "deny"}
	if err := h.agent.AddRule(ctx, deny); err != nil {
		t.Fatal(err)
	}
	// OVS revalidates cached datapath flows asynchronously after a flow change: wait
	// (bounded) for the first lost ping, then require the following ones to be lost.
	if !c1.pingFails(c2.ip, 10) || c1.ping(c2.ip, 3) {
		t.Fatalf("%s: ping passes a deny rule\n%s", datapath, h.dumpOnFail(t))
	}
	if err := h.agent.DelRule(ctx, deny); err != nil {
		t.Fatal(err)
	}
	if !c1.ping(c2.ip, 5) {
		t.Fatalf("%s: ping not restored after deleting the deny rule\n%s", datapath, h.dumpOnFail(t))
	}
}

func TestLocalPingVxlanBridge(t *testing.T)  { testLocalPingAndPolicy(t, DatapathVxlan) }
func TestLocalPingVlanBridge(t *testing.T)   { testLocalPingAndPolicy(t, DatapathVlan) }
func TestLocalPingVxlanRouting(t *testing.T) { testLocalPingAndPolicy(t, DatapathVrouter) }

// TestArpFloodMode: with ARP mode flood the redirect flow goes and ARP is flooded
// through the groups; the ping still works.
func TestArpFloodMode(t *testing.T) {
	h, c1, c2 := localPair(t, DatapathVxlan)
	ctx := testCtx(t)
	if err := h.agent.SetArpMode(ctx, "flood"); err != nil {
		t.Fatal(err)
	}
	for _, f := range h.flows(t) {
		if strings.Contains(f, "arp") {
			t.Fatalf("ARP redirect still present in flood mode: %s", f)
		}
	}
	if !c1.ping(c2.ip, 10) {
		t.Fatalf("flood mode: no ping\n%s", h.dumpOnFail(t))
	}
	if err := h.agent.SetArpMode(ctx, "proxy"); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range h.flows(t) {
		found = found || strings.Contains(f, "arp,arp_op=1")
	}
	if !found {
		t.Fatal("ARP redirect not restored in proxy mode")
	}
}
