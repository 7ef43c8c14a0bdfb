package mastertest

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/contiv/netplugin/state"
)

// RulePath is the REST path of a rule.
func RulePath(tenant, policy, id string) string {
	return "/api/v1/rules/" + tenant + ":" + policy + ":" + id + "/"
}

// RuleBody is a rule request; extra is extra JSON members ("" for none).
func RuleBody(tenant, policy, id, dir, extra string) string {
	b := fmt.Sprintf(`{"tenantName":%q,"policyName":%q,"ruleId":%q,"direction":%q,"action":"allow"`, tenant, policy, id, dir)
	if extra != "" {
		b += "," + extra
	}
	return b + "}"
}

// StateKeys lists the store keys with this prefix.
func (e *Env) StateKeys(prefix string) []string {
	e.T.Helper()
	var out []string
	for k := range e.Dump() {
		if strings.HasPrefix(k, prefix) {
			out = append(out, strings.TrimPrefix(k, prefix))
		}
	}
	sort.Strings(out)
	return out
}

// OfnetRule is the persisted rule as the agents read it.
type OfnetRule = state.OfnetPolicyRule

// PolicyRule reads the persisted rule id.
func (e *Env) PolicyRule(id string) OfnetRule {
	e.T.Helper()
	raw, ok := e.Dump()["state/policyRule/"+id]
	if !ok {
		e.T.Fatalf("no policy rule %s", id)
	}
	var r OfnetRule
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		e.T.Fatalf("policy rule %s: %v", raw, err)
	}
	return r
}
