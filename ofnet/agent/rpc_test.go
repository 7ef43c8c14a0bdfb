package agent

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/contiv/netplugin/ofnet/ofrpc"
)

// TestRPCServices drives the agent through its RPC services as a master does:
// AddMaster makes it register and push its local endpoint; AddRule/DelRule change
// table 5; EndpointAdd of its own or of the other encapsulation is ignored.
func TestRPCServices(t *testing.T) {
	h := startHost(t, DatapathVxlan, "198.18.0.1")
	ctx := testCtx(t)
	if err := h.agent.AddNetwork(ctx, 10, 7000, "", "t1"); err != nil {
		t.Fatal(err)
	}
	ep := EndpointInfo{PortNo: 5, MacAddr: macFor(net.ParseIP("198.18.10.5")), IpAddr: net.ParseIP("198.18.10.5"), Vlan: 10}
	if err := h.agent.AddLocalEndpoint(ctx, ep); err != nil {
		t.Fatal(err)
	}
	m := startFakeMaster(t)
	pool := ofrpc.NewPool()
	defer pool.Close()
	addr := h.agent.cfg.RPCListener.Addr().String()
	call := func(method string, arg any) {
		t.Helper()
		var reply bool
		if err := pool.Call(ctx, addr, method, arg, &reply); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
	}
	call("OfnetAgent.DummyRpc", "hello")
	call("OfnetAgent.AddMaster", m.addr)
	waitFor(t, "registration and endpoint push", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		e, ok := m.eps["198.18.10.5:t1"]
		return len(m.agents) == 1 && ok && e.OriginatorIp.Equal(h.ip) && e.Vni == 7000 && e.MacAddrStr == ep.MacAddr.String()
	}, func() string { return "master saw nothing" })

	rule := ofrpc.OfnetPolicyRule{RuleId: "r9", Priority: 7, DstEndpointGroup: 3, Action: "deny"}
	call("PolicyAgent.AddRule", rule)
	if !containsAny(h.flows(t), "table=5, priority=17,ip,metadata=0x6/0xfffe actions=drop") {
		t.Fatalf("rule flow missing\n%s", h.dumpOnFail(t))
	}
	var reply bool
	conflicting := rule
	conflicting.Action = "allow"
	if err := pool.Call(ctx, addr, "PolicyAgent.AddRule", conflicting, &reply); err == nil {
		t.Error("a different rule with the same id was accepted")
	}
	call("PolicyAgent.DelRule", rule)
	if containsAny(h.flows(t), "priority=17") {
		t.Fatal("rule flow not removed")
	}

	own := ofrpc.OfnetEndpoint{EndpointID: "198.18.10.7:t1", IpAddr: net.ParseIP("198.18.10.7"), Vrf: "t1",
		MacAddrStr: "02:02:c6:12:0a:07", Vlan: 10, Vni: 7000, OriginatorIp: h.ip, Timestamp: time.Now()}
	call("OfnetAgent.EndpointAdd", own)
	vlanEP := own
	vlanEP.EndpointID, vlanEP.Vni, vlanEP.OriginatorIp = "198.18.10.8:t1", 0, net.ParseIP("198.18.0.9")
	call("OfnetAgent.EndpointAdd", vlanEP)
	st := h.agent.State()
	if _, ok := st.EndpointDb[own.EndpointID]; ok {
		t.Error("an endpoint originated by this host was installed")
	}
	if _, ok := st.EndpointDb[vlanEP.EndpointID]; ok {
		t.Error("the vxlan agent accepted a VNI-0 endpoint")
	}

	// A remote endpoint before its VTEP: recorded, no flows; the VTEP brings them.
	remote := own
	remote.EndpointID, remote.IpAddr, remote.OriginatorIp = "198.18.10.9:t1", net.ParseIP("198.18.10.9"), net.ParseIP("198.18.0.2")
	call("OfnetAgent.EndpointAdd", remote)
	if containsAny(h.flows(t), "198.18.10.9") {
		t.Fatal("remote endpoint installed before its VTEP")
	}
	if err := h.agent.AddVtepPort(context.Background(), 9, net.ParseIP("198.18.0.2")); err != nil {
		t.Fatal(err)
	}
	if !containsAny(h.flows(t), "198.18.10.9") {
		t.Fatalf("remote endpoint not installed when its VTEP appeared\n%s", h.dumpOnFail(t))
	}
	older := remote
	older.Timestamp = remote.Timestamp.Add(-time.Minute)
	older.MacAddrStr = "02:02:00:00:00:01"
	call("OfnetAgent.EndpointAdd", older)
	if h.agent.State().EndpointDb[remote.EndpointID].MacAddrStr != remote.MacAddrStr {
		t.Error("an older EndpointAdd replaced a newer endpoint")
	}
	call("OfnetAgent.EndpointDel", remote)
	if containsAny(h.flows(t), "198.18.10.9") {
		t.Fatal("remote endpoint flows remain after EndpointDel")
	}
}
