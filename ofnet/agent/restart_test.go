package agent

import (
	"fmt"
	"net"
	"strings"
	"testing"
)

func containsAny(lines []string, s string) bool {
	for _, l := range lines {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// TestAgentRestartKeepsForwarding: a new agent (new process, empty record) takes over
// the bridge. Its first connection deletes nothing, so the ping keeps working before
// and during its replay; flows of the previous run that the new state does not
// produce (an endpoint that is gone) stay until FinishRestart removes them; then the
// switch holds exactly the new agent's flows and groups.
func TestAgentRestartKeepsForwarding(t *testing.T) {
	h, c1, c2 := localPair(t, DatapathVxlan)
	ctx := testCtx(t)
	stale := EndpointInfo{PortNo: 99, MacAddr: macFor(net.ParseIP("198.18.10.99")),
		IpAddr: net.ParseIP("198.18.10.99"), Vlan: 10, EndpointGroup: 1}
	if err := h.agent.AddLocalEndpoint(ctx, stale); err != nil {
		t.Fatal(err)
	}
	if !c1.ping(c2.ip, 10) {
		t.Fatalf("no ping before the restart\n%s", h.dumpOnFail(t))
	}
	h.stop()

	h.runAgent(t, DatapathVxlan)
	if !c1.ping(c2.ip, 3) {
		t.Fatalf("ping cut when the new agent connected\n%s", h.dumpOnFail(t))
	}
	if err := h.agent.AddNetwork(ctx, 10, 7000, "198.18.10.254", "t1"); err != nil {
		t.Fatal(err)
	}
	if !c1.ping(c2.ip, 3) {
		t.Fatalf("ping cut during replay\n%s", h.dumpOnFail(t))
	}
	for i, c := range []*container{c1, c2} {
		if err := h.agent.AddLocalEndpoint(ctx, c.endpointInfo(10, i+1)); err != nil {
			t.Fatal(err)
		}
	}
	if !c1.ping(c2.ip, 3) {
		t.Fatalf("ping cut after replay\n%s", h.dumpOnFail(t))
	}
	if !containsAny(h.flows(t), "198.18.10.99") {
		t.Fatalf("the previous run's flows were deleted before FinishRestart\n%s", h.dumpOnFail(t))
	}
	if err := h.agent.FinishRestart(ctx); err != nil {
		t.Fatal(err)
	}
	got := h.flows(t)
	if containsAny(got, "198.18.10.99") || containsAny(got, stale.MacAddr.String()) || containsAny(h.groups(t), "output:99") {
		t.Fatalf("stale flows remain after FinishRestart\n%s", h.dumpOnFail(t))
	}
	want, wantGroups, err := h.agent.desiredFlows()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("switch after FinishRestart:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if g := h.groups(t); strings.Join(g, "\n") != strings.Join(wantGroups, "\n") {
		t.Fatalf("groups after FinishRestart:\n  %s\nwant:\n  %s", strings.Join(g, "\n  "), strings.Join(wantGroups, "\n  "))
	}
	if !c1.ping(c2.ip, 3) {
		t.Fatal("no ping after FinishRestart")
	}
}

// TestVswitchdRestartRestoresFlows: after ovs-vswitchd restarts (empty tables) the
// agent's flows and groups come back on reconnect and forwarding resumes.
func TestVswitchdRestartRestoresFlows(t *testing.T) {
	h, c1, c2 := localPair(t, DatapathVxlan)
	before, beforeGroups := h.flows(t), h.groups(t)
	h.ovs.RestartVswitchd(t)
	waitFor(t, "flows restored", func() bool {
		return strings.Join(h.flows(t), "\n") == strings.Join(before, "\n") &&
			strings.Join(h.groups(t), "\n") == strings.Join(beforeGroups, "\n")
	}, func() string { return h.dumpOnFail(t) })
	if !c1.ping(c2.ip, 15) {
		t.Fatalf("no ping after ovs-vswitchd restart\n%s", h.dumpOnFail(t))
	}
}

// TestRemoveLocalEndpointCleansUp: every flow and flood bucket of a removed endpoint
// goes; removing it again is a no-op; the other endpoint keeps its flows.
func TestRemoveLocalEndpointCleansUp(t *testing.T) {
	h, c1, c2 := localPair(t, DatapathVxlan)
	ctx := testCtx(t)
	for i := 0; i < 2; i++ {
		if err := h.agent.RemoveLocalEndpoint(ctx, c2.port); err != nil {
			t.Fatal(err)
		}
	}
	p := fmt.Sprint(c2.port)
	for _, f := range append(h.flows(t), h.groups(t)...) {
		if strings.Contains(f, c2.ip.String()) || strings.Contains(f, c2.mac.String()) ||
			strings.Contains(f, "output:"+p) || strings.Contains(f, "in_port="+p+" ") || strings.Contains(f, "in_port="+p+",") {
			t.Errorf("flow of the removed endpoint remains: %s", f)
		}
	}
	if !containsAny(h.flows(t), c1.mac.String()) {
		t.Error("the other endpoint lost its flows")
	}
}
