package controllers

import (
	"context"

	"github.com/contiv/netplugin/contivmodel"
)

// tenantCtl is the tenant controller (docs/rest-api.md §2.3).
type tenantCtl struct{ m *Objects }

// Create accepts a named tenant; it has no state of its own.
func (tenantCtl) Create(_ context.Context, _ *contivmodel.Tx, t *contivmodel.Tenant) error {
	if t.TenantName == "" {
		return contivmodel.Invalidf("Invalid tenant name")
	}
	return nil
}

// Update is always refused.
func (tenantCtl) Update(context.Context, *contivmodel.Tx, *contivmodel.Tenant, *contivmodel.Tenant) error {
	return contivmodel.Errorf("Cant change tenant parameters after its created")
}

// Delete is refused while the tenant owns objects, checked in the spec's
// order.
func (tenantCtl) Delete(_ context.Context, _ *contivmodel.Tx, t *contivmodel.Tenant) error {
	ls := t.LinkSets
	name := t.TenantName
	switch {
	case len(ls.AppProfiles) > 0:
		return contivmodel.Errorf("cannot delete %s, has %d app profiles", name, len(ls.AppProfiles))
	case len(ls.EndpointGroups) > 0:
		return contivmodel.Errorf("cannot delete %s has %d endpoint groups", name, len(ls.EndpointGroups))
	case len(ls.Policies) > 0:
		return contivmodel.Errorf("cannot delete %s has %d policies", name, len(ls.Policies))
	case len(ls.NetProfiles) > 0:
		return contivmodel.Errorf("Cannot delete %s has %d netprofiles", name, len(ls.NetProfiles))
	case len(ls.Networks) > 0:
		return contivmodel.Errorf("cannot delete %s has %d networks", name, len(ls.Networks))
	}
	return nil
}

// Oper sums up the tenant's objects; errors on nested objects are skipped
// (tenant inspect never fails for an existing tenant).
func (c tenantCtl) Oper(ctx context.Context, tx *contivmodel.Tx, t *contivmodel.Tenant) (any, error) {
	ls := t.LinkSets
	op := &contivmodel.TenantOper{
		TotalNetworks:    len(ls.Networks),
		TotalEPGs:        len(ls.EndpointGroups),
		TotalNetprofiles: len(ls.NetProfiles),
		TotalPolicies:    len(ls.Policies),
		TotalAppProfiles: len(ls.AppProfiles),
		TotalServicelbs:  len(ls.Servicelbs),
	}
	eps, _ := c.m.eps.AllEndpoints(ctx)
	for _, key := range sortedKeys(ls.Networks) {
		nw, err := contivmodel.Get[contivmodel.Network](tx, key)
		if err != nil {
			continue
		}
		no, err := c.m.networkOper(ctx, nw, eps, false)
		if err != nil {
			continue
		}
		op.TotalEndpoints += no.NumEndpoints
		op.Networks = append(op.Networks, *no)
	}
	for _, key := range sortedKeys(ls.EndpointGroups) {
		g, err := contivmodel.Get[contivmodel.EndpointGroup](tx, key)
		if err != nil {
			continue
		}
		go_, err := c.m.groupOper(ctx, g, eps, false)
		if err != nil {
			continue
		}
		op.EndpointGroups = append(op.EndpointGroups, *go_)
	}
	return op, nil
}
