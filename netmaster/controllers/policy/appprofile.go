package policy

import (
	"context"
	"errors"
	"slices"

	"github.com/contiv/netplugin/contivmodel"
)

// appProfileCtl is the app profile controller (docs/rest-api.md §2.9), in
// its non-ACI behaviour: it only maintains links. The ACI gateway push is
// not implemented.
type appProfileCtl struct{ m *Controllers }

// linkAppProfileGroup points group name of tenant at profile key and adds
// it to the profile's EndpointGroups.
func linkAppProfileGroup(tx *contivmodel.Tx, ap *contivmodel.AppProfile, name string) error {
	gkey := modelKey(ap.TenantName, name)
	err := contivmodel.Modify(tx, gkey, func(g *contivmodel.EndpointGroup) error {
		g.Links.AppProfile = contivmodel.NewLink(contivmodel.TypeAppProfile, ap.Key)
		return nil
	})
	if errors.Is(err, contivmodel.ErrNotFound) {
		return contivmodel.Missingf("EndpointGroup %s not found", gkey)
	} else if err != nil {
		return err
	}
	ap.LinkSets.EndpointGroups.Add(contivmodel.NewLink(contivmodel.TypeEndpointGroup, gkey))
	return nil
}

// unlinkAppProfileGroup clears the group's AppProfile link and drops it
// from the profile's EndpointGroups.
func unlinkAppProfileGroup(tx *contivmodel.Tx, ap *contivmodel.AppProfile, name string) error {
	gkey := modelKey(ap.TenantName, name)
	ap.LinkSets.EndpointGroups.Remove(gkey)
	err := contivmodel.Modify(tx, gkey, func(g *contivmodel.EndpointGroup) error {
		g.Links.AppProfile = contivmodel.Link{}
		return nil
	})
	if errors.Is(err, contivmodel.ErrNotFound) {
		return contivmodel.Missingf("EndpointGroup %s not found", gkey)
	}
	return err
}

// Create links the listed groups and the tenant.
func (appProfileCtl) Create(_ context.Context, tx *contivmodel.Tx, ap *contivmodel.AppProfile) error {
	if ap.TenantName == "" {
		return contivmodel.Invalidf("Invalid tenant name")
	}
	if ok, err := contivmodel.Exists[contivmodel.Tenant](tx, ap.TenantName); err != nil {
		return err
	} else if !ok {
		return contivmodel.Missingf("Tenant %s not found", ap.TenantName)
	}
	for _, name := range ap.EndpointGroups {
		if err := linkAppProfileGroup(tx, ap, name); err != nil {
			return err
		}
	}
	ap.Links.Tenant = contivmodel.NewLink(contivmodel.TypeTenant, ap.TenantName)
	return contivmodel.Modify(tx, ap.TenantName, func(t *contivmodel.Tenant) error {
		t.LinkSets.AppProfiles.Add(contivmodel.NewLink(contivmodel.TypeAppProfile, ap.Key))
		return nil
	})
}

// Update links the requested groups, unlinks the dropped ones and stores
// the requested list.
func (appProfileCtl) Update(_ context.Context, tx *contivmodel.Tx, stored, req *contivmodel.AppProfile) error {
	for _, name := range req.EndpointGroups {
		if err := linkAppProfileGroup(tx, stored, name); err != nil {
			return err
		}
	}
	for _, name := range stored.EndpointGroups {
		if !slices.Contains(req.EndpointGroups, name) {
			if err := unlinkAppProfileGroup(tx, stored, name); err != nil {
				return err
			}
		}
	}
	stored.EndpointGroups = req.EndpointGroups
	return nil
}

// Delete clears the groups' links and removes the profile from its tenant.
func (appProfileCtl) Delete(_ context.Context, tx *contivmodel.Tx, ap *contivmodel.AppProfile) error {
	if ok, err := contivmodel.Exists[contivmodel.Tenant](tx, ap.TenantName); err != nil {
		return err
	} else if !ok {
		return contivmodel.Missingf("Tenant %s not found", ap.TenantName)
	}
	for _, name := range ap.EndpointGroups {
		err := unlinkAppProfileGroup(tx, ap, name)
		var ce *contivmodel.Error
		if err != nil && !errors.As(err, &ce) {
			return err
		}
	}
	return contivmodel.Modify(tx, ap.TenantName, func(t *contivmodel.Tenant) error {
		t.LinkSets.AppProfiles.Remove(ap.Key)
		return nil
	})
}

// Oper: app profiles have no operational state.
func (appProfileCtl) Oper(context.Context, *contivmodel.Tx, *contivmodel.AppProfile) (any, error) {
	return nil, nil
}
