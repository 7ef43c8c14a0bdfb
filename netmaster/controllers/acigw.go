package controllers

import (
	"context"

	"github.com/contiv/netplugin/contivmodel"
)

// aciGwCtl is the aciGw controller (docs/rest-api.md §2.2): a pure
// configuration singleton whose delete is refused while app profiles exist.
type aciGwCtl struct{ m *Objects }

// numAppProfiles counts the app profiles of every tenant.
func numAppProfiles(tx *contivmodel.Tx) (int, error) {
	aps, err := contivmodel.List[contivmodel.AppProfile](tx)
	if err != nil {
		return 0, err
	}
	return len(aps), nil
}

// Create stores the object; it is never refused.
func (c aciGwCtl) Create(_ context.Context, tx *contivmodel.Tx, gw *contivmodel.AciGw) error {
	n, err := numAppProfiles(tx)
	if err != nil {
		return err
	}
	if n > 0 {
		c.m.log.WithField("appProfiles", n).Info("aciGw created while app profiles exist")
	}
	return nil
}

// Update copies the gateway settings into the stored object.
func (aciGwCtl) Update(_ context.Context, _ *contivmodel.Tx, stored, req *contivmodel.AciGw) error {
	stored.EnforcePolicies = req.EnforcePolicies
	stored.IncludeCommonTenant = req.IncludeCommonTenant
	stored.NodeBindings = req.NodeBindings
	stored.PathBindings = req.PathBindings
	stored.PhysicalDomain = req.PhysicalDomain
	return nil
}

// Delete is refused while any app profile exists.
func (aciGwCtl) Delete(_ context.Context, tx *contivmodel.Tx, _ *contivmodel.AciGw) error {
	n, err := numAppProfiles(tx)
	if err != nil {
		return err
	}
	if n > 0 {
		return contivmodel.Errorf("%d App-Profiles found. Delete them first", n)
	}
	return nil
}

// Oper reports the number of app profiles.
func (aciGwCtl) Oper(_ context.Context, tx *contivmodel.Tx, _ *contivmodel.AciGw) (any, error) {
	n, err := numAppProfiles(tx)
	if err != nil {
		return nil, err
	}
	return &contivmodel.AciGwOper{NumAppProfiles: n}, nil
}
