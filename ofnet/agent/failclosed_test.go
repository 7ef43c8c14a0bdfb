package agent

import (
	"errors"
	"strings"
	"testing"

	"github.com/contiv/netplugin/ofnet/ofrpc"
)

// A rule naming a group it carries no id for is refused, allow and deny
// alike: it is not installed (it would match any group), the error goes
// back to the caller and RefusedRules lists it until a valid rule with
// its id is added or it is deleted (docs/security.md, "Fail closed").
func TestRuleWithUnresolvedGroupRefused(t *testing.T) {
	h := startHost(t, DatapathVxlan, "198.18.0.1")
	ctx := testCtx(t)
	pool := ofrpc.NewPool()
	defer pool.Close()
	addr := h.agent.cfg.RPCListener.Addr().String()
	before := h.flows(t)

	for _, action := range []string{"allow", "deny"} {
		r := ofrpc.OfnetPolicyRule{RuleId: "t1:g1:t1:p1:" + action + ":inRx", Priority: 7, DstEndpointGroup: 3,
			SrcEndpointGroupName: "t1:g9", Action: action}
		if err := h.agent.AddRule(ctx, r); !errors.Is(err, ofrpc.ErrGroupUnresolved) {
			t.Fatalf("%s rule with an unresolved group: %v", action, err)
		}
		var reply bool
		if err := pool.Call(ctx, addr, "PolicyAgent.AddRule", r, &reply); err == nil || !strings.Contains(err.Error(), "not resolved") {
			t.Fatalf("%s rule with an unresolved group over RPC: %v", action, err)
		}
		st := h.agent.State()
		if _, ok := st.PolicyRules[r.RuleId]; ok {
			t.Fatalf("%s rule with an unresolved group installed", action)
		}
		if why := st.RefusedRules[r.RuleId]; !strings.Contains(why, `source group "t1:g9" has id 0`) {
			t.Fatalf("refusal of the %s rule not reported: %q", action, why)
		}
	}
	if after := h.flows(t); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Fatalf("refused rules changed the flows:\n%s", h.dumpOnFail(t))
	}

	// The resolved rule replaces the refusal; deleting clears the other.
	good := ofrpc.OfnetPolicyRule{RuleId: "t1:g1:t1:p1:deny:inRx", Priority: 7, SrcEndpointGroup: 5, DstEndpointGroup: 3,
		SrcEndpointGroupName: "t1:g9", Action: "deny"}
	if err := h.agent.AddRule(ctx, good); err != nil {
		t.Fatal(err)
	}
	if err := h.agent.DelRule(ctx, ofrpc.OfnetPolicyRule{RuleId: "t1:g1:t1:p1:allow:inRx"}); err != nil {
		t.Fatal(err)
	}
	st := h.agent.State()
	if len(st.RefusedRules) != 0 {
		t.Fatalf("refusals left: %v", st.RefusedRules)
	}
	if !containsAny(h.flows(t), "table=5, priority=17,ip,metadata=0x50006/0x7ffffffe actions=drop") {
		t.Fatalf("resolved rule not installed\n%s", h.dumpOnFail(t))
	}
}
