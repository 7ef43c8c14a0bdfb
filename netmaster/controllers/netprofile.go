package controllers

import (
	"context"
	"errors"
	"fmt"

	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/netmaster/apierr"
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
