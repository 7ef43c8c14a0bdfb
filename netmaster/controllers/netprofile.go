package controllers

import (
	"context"
	"errors"
	"fmt"

	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/netmaster/apierr"
	"github.com/contiv/netplugin/netmaster/endpoints"
	"github.com/contiv/netplugin/state"
)

// netprofileCtl is the netprofile controller (docs/rest-api.md §2.6): QoS
// settings copied into the state of the endpoint groups using them.
type netprofileCtl struct{ m *Objects }

// Create links a profile to its tenant.
func (netprofileCtl) Create(_ context.Context, tx *contivmodel.Tx, np *contivmodel.Netprofile) error {
	if np.TenantName == "" {
		return contivmodel.Invalidf("Invalid tenant name")
	}
	if np.Burst == 1 {
		return contivmodel.Invalidf("Invalid Burst size. burst size > 1500 bytes")
	}
	if ok, err := contivmodel.Exists[contivmodel.Tenant](tx, np.TenantName); err != nil {
		return err
	} else if !ok {
		return contivmodel.Missingf("Tenant %s not found", np.TenantName)
	}
	np.Links.Tenant = contivmodel.NewLink(contivmodel.TypeTenant, np.TenantName)
	return contivmodel.Modify(tx, np.TenantName, func(t *contivmodel.Tenant) error {
		t.LinkSets.NetProfiles.Add(contivmodel.NewLink(contivmodel.TypeNetprofile, np.Key))
		return nil
	})
}

// Update replaces the QoS values (an omitted one becomes zero) and pushes
// them to every group using the profile. A group write that fails fails the
// update: the transaction aborts, the groups already written are restored
// and the profile keeps its values (docs/security.md, "Fail closed").
func (c netprofileCtl) Update(ctx context.Context, tx *contivmodel.Tx, stored, req *contivmodel.Netprofile) error {
	m := c.m
	if req.Burst == 1 {
		return contivmodel.Invalidf("Invalid Burst size. burst size must be > 1500 bytes")
	}
	stored.Bandwidth, stored.DSCP, stored.Burst = req.Bandwidth, req.DSCP, req.Burst
	for _, key := range sortedKeys(stored.LinkSets.EndpointGroups) {
		g, err := contivmodel.Get[contivmodel.EndpointGroup](tx, key)
		if errors.Is(err, contivmodel.ErrNotFound) {
			return contivmodel.Missingf("EndpointGroup %s not found", key)
		} else if err != nil {
			return err
		}
		epgID := state.GroupID(g.TenantName, g.GroupName)
		undo, err := m.eps.Snapshot(ctx, m.st.EndpointGroups.Key(epgID))
		if err != nil {
			return err
		}
		tx.OnAbort(undo)
		if _, err := m.st.EndpointGroups.Update(ctx, epgID, func(gs *state.EndpointGroup) error {
			gs.DSCP, gs.Bandwidth, gs.Burst = req.DSCP, req.Bandwidth, req.Burst
			return nil
		}); err != nil {
			return fmt.Errorf("netprofile %s: push QoS to group %s: %w", stored.Key, key, apierr.Store("write group state "+epgID, err))
		}
	}
	return nil
}

// Delete is refused while a group uses the profile.
func (netprofileCtl) Delete(_ context.Context, tx *contivmodel.Tx, np *contivmodel.Netprofile) error {
	if ok, err := contivmodel.Exists[contivmodel.Tenant](tx, np.TenantName); err != nil {
		return err
	} else if !ok {
		return contivmodel.Missingf("Tenant %s not found", np.TenantName)
	}
	if len(np.LinkSets.EndpointGroups) > 0 {
		return contivmodel.Errorf("NetProfile is being used")
	}
	return contivmodel.Modify(tx, np.TenantName, func(t *contivmodel.Tenant) error {
		t.LinkSets.NetProfiles.Remove(np.Key)
		return nil
	})
}

// Oper: netprofiles have no operational state.
func (netprofileCtl) Oper(context.Context, *contivmodel.Tx, *contivmodel.Netprofile) (any, error) {
	return nil, nil
}

// policyCtl is the policy controller (docs/rest-api.md §2.7). Its rules
// are managed by the rule controller (rule.go); a policy delete runs each
// rule's delete.
type policyCtl struct{ m *Objects }

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
