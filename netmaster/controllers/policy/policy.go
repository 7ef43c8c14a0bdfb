// Package policy is the contivmodel controllers of the policy objects of
// one netmaster leadership term: policy, rule (rule.go), app profile
// (appprofile.go) and external contracts group (extcontracts.go), and the
// (group, policy) instances whose ofnet rules a group's policy attachment
// writes (AttachEpgPolicy, DetachEpgPolicy; docs/rest-api.md §2.7–§2.10,
// docs/daemons.md §4.11). The group and network controllers are
// netmaster/controllers, which wires these in.
package policy

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/netmaster/apierr"
	"github.com/contiv/netplugin/netmaster/endpoints"
	"github.com/contiv/netplugin/state"
)

// Config is what the policy controllers of a term work with.
type Config struct {
	State *state.Store
	// Endpoints is the term's endpoint service: the endpoint list (policy
	// oper, a rule's destination check) and the state snapshots that undo
	// a rule's writes.
	Endpoints *endpoints.Service
	// ACI reports whether the global object of tx has the ACI infra type,
	// in which no ofnet rules are written.
	ACI func(tx *contivmodel.Tx) bool
}

// Controllers holds the policy controllers of a term.
type Controllers struct {
	st  *state.Store
	eps *endpoints.Service
	aci func(tx *contivmodel.Tx) bool
}

// New returns the policy controllers of a term over cfg.
func New(cfg Config) *Controllers {
	return &Controllers{st: cfg.State, eps: cfg.Endpoints, aci: cfg.ACI}
}

// Policy is the controller of the policy kind.
func (m *Controllers) Policy() contivmodel.Callbacks[contivmodel.Policy] { return policyCtl{m} }

// Rule is the controller of the rule kind.
func (m *Controllers) Rule() contivmodel.Callbacks[contivmodel.Rule] { return ruleCtl{m} }

// AppProfile is the controller of the app profile kind.
func (m *Controllers) AppProfile() contivmodel.Callbacks[contivmodel.AppProfile] {
	return appProfileCtl{m}
}

// ExtContracts is the controller of the external contracts group kind.
func (m *Controllers) ExtContracts() contivmodel.Callbacks[contivmodel.ExtContractsGroup] {
	return extContractsCtl{m}
}

// modelKey is the model key of a tenant's object.
func modelKey(tenant, name string) string { return tenant + ":" + name }

// sortedKeys is the keys of mp (a link set, a rule map) in order.
func sortedKeys[V any](mp map[string]V) []string { return slices.Sorted(maps.Keys(mp)) }

// policyCtl is the policy controller (docs/rest-api.md §2.7). Its rules
// are managed by the rule controller (rule.go); a policy delete runs each
// rule's delete.
type policyCtl struct{ m *Controllers }

// Create links a policy to its tenant.
func (policyCtl) Create(_ context.Context, tx *contivmodel.Tx, p *contivmodel.Policy) error {
	if p.TenantName == "" {
		return contivmodel.Invalidf("Invalid tenant name")
	}
	if ok, err := contivmodel.Exists[contivmodel.Tenant](tx, p.TenantName); err != nil {
		return err
	} else if !ok {
		return contivmodel.Missingf("Tenant %s not found", p.TenantName)
	}
	p.Links.Tenant = contivmodel.NewLink(contivmodel.TypeTenant, p.TenantName)
	return contivmodel.Modify(tx, p.TenantName, func(t *contivmodel.Tenant) error {
		t.LinkSets.Policies.Add(contivmodel.NewLink(contivmodel.TypePolicy, p.Key))
		return nil
	})
}

// Update is accepted and changes nothing.
func (policyCtl) Update(context.Context, *contivmodel.Tx, *contivmodel.Policy, *contivmodel.Policy) error {
	return nil
}

// Delete is refused while the policy is attached to a group.
func (policyCtl) Delete(ctx context.Context, tx *contivmodel.Tx, p *contivmodel.Policy) error {
	if ok, err := contivmodel.Exists[contivmodel.Tenant](tx, p.TenantName); err != nil {
		return err
	} else if !ok {
		return contivmodel.Missingf("Tenant %s not found", p.TenantName)
	}
	if len(p.LinkSets.EndpointGroups) > 0 {
		return contivmodel.Errorf("Policy is being used")
	}
	// Each rule goes through its own delete (links to the groups it
	// matches, its ofnet rule state), not just removal.
	for _, key := range sortedKeys(p.LinkSets.Rules) {
		if err := contivmodel.RemoveIn[contivmodel.Rule](ctx, tx, key); err != nil {
			return fmt.Errorf("delete rule %q of policy %q: %w", key, p.Key, err)
		}
	}
	return contivmodel.Modify(tx, p.TenantName, func(t *contivmodel.Tenant) error {
		t.LinkSets.Policies.Remove(p.Key)
		return nil
	})
}

// Oper lists the endpoints of the groups the policy is attached to.
func (c policyCtl) Oper(ctx context.Context, tx *contivmodel.Tx, p *contivmodel.Policy) (any, error) {
	eps, err := c.m.eps.AllEndpoints(ctx)
	if err != nil {
		return nil, err
	}
	op := &contivmodel.PolicyOper{}
	for _, key := range sortedKeys(p.LinkSets.EndpointGroups) {
		g, err := contivmodel.Get[contivmodel.EndpointGroup](tx, key)
		if err != nil {
			return nil, err
		}
		epgID := state.GroupID(g.TenantName, g.GroupName)
		gs, err := c.m.st.EndpointGroups.Read(ctx, epgID)
		if err != nil {
			return nil, apierr.Store("read group state "+epgID, err)
		}
		op.NumEndpoints += gs.EpCount
		op.Endpoints = append(op.Endpoints, endpoints.Opers(eps, func(ep state.Endpoint) bool { return ep.EndpointGroupKey == epgID })...)
	}
	return op, nil
}
