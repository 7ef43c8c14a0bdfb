package policy

import (
	"context"

	"github.com/contiv/netplugin/contivmodel"
)

// extContractsCtl is the extContractsGroup controller (docs/rest-api.md
// §2.10). Groups link themselves to it (epg.go linkContracts); it keeps no
// other state.
type extContractsCtl struct{ m *Controllers }

// Create checks the contracts type and the tenant.
func (extContractsCtl) Create(_ context.Context, tx *contivmodel.Tx, ec *contivmodel.ExtContractsGroup) error {
	if ec.ContractsType != "provided" && ec.ContractsType != "consumed" {
		return contivmodel.Invalidf("Contracts group need to be either 'provided' or 'consumed'")
	}
	if ec.TenantName == "" {
		return contivmodel.Missingf("Tenant %s not found", ec.TenantName)
	}
	if ok, err := contivmodel.Exists[contivmodel.Tenant](tx, ec.TenantName); err != nil {
		return err
	} else if !ok {
		return contivmodel.Missingf("Tenant %s not found", ec.TenantName)
	}
	return nil
}

// Update is always refused.
func (extContractsCtl) Update(context.Context, *contivmodel.Tx, *contivmodel.ExtContractsGroup, *contivmodel.ExtContractsGroup) error {
	return contivmodel.Errorf("external contracts update not supported")
}

// Delete is refused while a group references the contracts group.
func (extContractsCtl) Delete(_ context.Context, _ *contivmodel.Tx, ec *contivmodel.ExtContractsGroup) error {
	if len(ec.LinkSets.EndpointGroups) > 0 {
		return contivmodel.Errorf("External contracts group is in-use")
	}
	return nil
}

// Oper: contracts groups have no operational state.
func (extContractsCtl) Oper(context.Context, *contivmodel.Tx, *contivmodel.ExtContractsGroup) (any, error) {
	return nil, nil
}
