package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/netmaster/apierr"
	"github.com/contiv/netplugin/netmaster/endpoints"
	"github.com/contiv/netplugin/netmaster/ipam"
	"github.com/contiv/netplugin/state"
)

// epgCtl is the endpoint group controller (docs/rest-api.md §2.5,
// docs/daemons.md §4.9). Attaching a policy creates its (group, policy)
// instance with every rule (rule.go); netprofile and ext-contracts
// references are checked and linked. A refused create leaves nothing behind.
type epgCtl struct{ m *Objects }

func isACI(tx *contivmodel.Tx) bool {
	g, err := contivmodel.Get[contivmodel.Global](tx, GlobalName)
	return err == nil && g.NetworkInfraType == "aci"
}

// Create runs the group create pipeline in the spec's order: the
// refusals (checkGroup) before the first side effect, then, under the
// topology lock, the group's IP pool, Docker network, id and state, its
// policies, netprofile and contracts, and the links; each side effect is
// undone when the transaction aborts.
func (c epgCtl) Create(ctx context.Context, tx *contivmodel.Tx, g *contivmodel.EndpointGroup) error {
	m := c.m
	ns, aci, err := c.checkGroup(ctx, tx, g)
	if err != nil {
		return err
	}
	netID := state.NetworkID(g.TenantName, g.NetworkName)
	epgID := state.GroupID(g.TenantName, g.GroupName)

	m.eps.LockTopology()
	defer m.eps.UnlockTopology()
	undo, err := m.eps.Snapshot(ctx, m.st.EndpointGroups.Key(epgID))
	if err != nil {
		return err
	}
	tx.OnAbort(undo)
	if g.IpPool != "" {
		m.undoOnAbort(tx, "group ip pool", func(ctx context.Context) error { return m.v4.DeletePool(ctx, epgID) })
		if _, err := m.v4.CreateSubPool(ctx, netID, epgID, g.IpPool); err != nil {
			return err
		}
	}
	if m.dockerMode() {
		if err := m.createDocknet(ctx, tx, ns, g.GroupName); err != nil {
			return err
		}
	}
	id, err := m.allocEPGID(ctx, epgID)
	if err != nil {
		return err
	}
	m.undoOnAbort(tx, "group id", func(ctx context.Context) error { return m.freeEPGID(ctx, id) })
	gs := state.EndpointGroup{
		Common: state.Common{ID: epgID}, GroupName: g.GroupName, TenantName: g.TenantName,
		NetworkName: g.NetworkName, EndpointGroupID: id, PktTagType: ns.PktTagType,
		PktTag: ns.PktTag, ExtPktTag: ns.ExtPktTag, IPPool: g.IpPool, GroupTag: g.CfgdTag,
	}
	if gs.GroupTag == "" {
		gs.GroupTag = g.GroupName + "." + g.TenantName
	}
	if aci {
		vlan, err := m.res.AllocateVLAN(ctx, 0)
		if err != nil {
			return err
		}
		m.undoOnAbort(tx, "group vlan", func(ctx context.Context) error { return m.res.FreeVLAN(ctx, vlan) })
		gs.PktTag = int(vlan)
	}
	if err := c.attachRefs(ctx, tx, g, &gs, id); err != nil {
		return err
	}
	m.eps.ForgetGroup(epgID)
	tx.OnAbort(func() { m.eps.ForgetGroup(epgID) })
	if _, err := m.st.EndpointGroups.Write(ctx, gs); err != nil {
		return fmt.Errorf("write group state %q: %w", epgID, err)
	}
	return linkGroup(tx, g)
}

// checkGroup runs the create refusals: the tenant, the network (model and
// state), a network of the same name, the IP pool, the encap in ACI mode.
// It returns the network's state and whether the mode is ACI.
func (c epgCtl) checkGroup(ctx context.Context, tx *contivmodel.Tx, g *contivmodel.EndpointGroup) (state.Network, bool, error) {
	if ok, err := contivmodel.Exists[contivmodel.Tenant](tx, g.TenantName); err != nil {
		return state.Network{}, false, err
	} else if !ok || g.TenantName == "" {
		return state.Network{}, false, contivmodel.Missingf("Tenant %s not found", g.TenantName)
	}
	netKey := modelKey(g.TenantName, g.NetworkName)
	nw, err := contivmodel.Get[contivmodel.Network](tx, netKey)
	if errors.Is(err, contivmodel.ErrNotFound) || g.NetworkName == "" {
		return state.Network{}, false, contivmodel.Missingf("Network %s not found", g.NetworkName)
	} else if err != nil {
		return state.Network{}, false, err
	}
	if ok, err := contivmodel.Exists[contivmodel.Network](tx, g.Key); err != nil {
		return state.Network{}, false, err
	} else if ok {
		return state.Network{}, false, contivmodel.Errorf("Network %s conflicts with the endpointGroup name", g.GroupName)
	}
	netID := state.NetworkID(g.TenantName, g.NetworkName)
	ns, err := c.m.st.Networks.Read(ctx, netID)
	if err != nil {
		return state.Network{}, false, apierr.Store("read network state "+netID, err)
	}
	if g.IpPool != "" {
		sn, err := ipam.ParseSubnet(nw.Subnet)
		if err != nil {
			return state.Network{}, false, err
		}
		if _, _, err := ipam.ParsePool(sn, g.IpPool); err != nil {
			return state.Network{}, false, err
		}
	}
	aci := isACI(tx)
	if aci && ns.PktTagType != "vlan" {
		return ns, aci, contivmodel.Errorf("network type must be VLAN for ACI mode")
	}
	return ns, aci, nil
}

// attachRefs links the group to its policies (writing their rule
// instances), its netprofile (copied into gs) and its contracts groups.
func (c epgCtl) attachRefs(ctx context.Context, tx *contivmodel.Tx, g *contivmodel.EndpointGroup, gs *state.EndpointGroup, id int) error {
	for _, p := range g.Policies {
		if err := linkPolicy(tx, g, p); err != nil {
			return err
		}
		if err := c.m.pol.AttachEpgPolicy(ctx, tx, g, id, p); err != nil {
			return err
		}
	}
	if g.NetProfile != "" {
		if err := attachNetprofile(tx, g, gs, g.NetProfile); err != nil {
			return err
		}
	}
	return linkContracts(tx, g, g.ExtContractsGrps)
}

// linkGroup links the group and its network and tenant to each other.
func linkGroup(tx *contivmodel.Tx, g *contivmodel.EndpointGroup) error {
	netKey := modelKey(g.TenantName, g.NetworkName)
	g.Links.Network = contivmodel.NewLink(contivmodel.TypeNetwork, netKey)
	g.Links.Tenant = contivmodel.NewLink(contivmodel.TypeTenant, g.TenantName)
	self := contivmodel.NewLink(contivmodel.TypeEndpointGroup, g.Key)
	if err := contivmodel.Modify(tx, netKey, func(n *contivmodel.Network) error {
		n.LinkSets.EndpointGroups.Add(self)
		return nil
	}); err != nil {
		return err
	}
	return contivmodel.Modify(tx, g.TenantName, func(t *contivmodel.Tenant) error {
		t.LinkSets.EndpointGroups.Add(self)
		return nil
	})
}

func linkPolicy(tx *contivmodel.Tx, g *contivmodel.EndpointGroup, name string) error {
	key := modelKey(g.TenantName, name)
	if ok, err := contivmodel.Exists[contivmodel.Policy](tx, key); err != nil {
		return err
	} else if !ok {
		return contivmodel.Missingf("Policy %s not found", key)
	}
	g.LinkSets.Policies.Add(contivmodel.NewLink(contivmodel.TypePolicy, key))
	return contivmodel.Modify(tx, key, func(p *contivmodel.Policy) error {
		p.LinkSets.EndpointGroups.Add(contivmodel.NewLink(contivmodel.TypeEndpointGroup, g.Key))
		return nil
	})
}

func unlinkPolicy(tx *contivmodel.Tx, g *contivmodel.EndpointGroup, name string) error {
	key := modelKey(g.TenantName, name)
	g.LinkSets.Policies.Remove(key)
	err := contivmodel.Modify(tx, key, func(p *contivmodel.Policy) error {
		p.LinkSets.EndpointGroups.Remove(g.Key)
		return nil
	})
	if errors.Is(err, contivmodel.ErrNotFound) {
		return contivmodel.Missingf("Policy %s not found", key)
	}
	return err
}

// attachNetprofile links the profile and copies its QoS into the state.
func attachNetprofile(tx *contivmodel.Tx, g *contivmodel.EndpointGroup, gs *state.EndpointGroup, name string) error {
	key := modelKey(g.TenantName, name)
	np, err := contivmodel.Get[contivmodel.Netprofile](tx, key)
	if errors.Is(err, contivmodel.ErrNotFound) {
		return contivmodel.Missingf("netprofile %s not found", key)
	} else if err != nil {
		return err
	}
	gs.DSCP, gs.Bandwidth, gs.Burst = np.DSCP, np.Bandwidth, np.Burst
	g.Links.NetProfile = contivmodel.NewLink(contivmodel.TypeNetprofile, key)
	return contivmodel.Modify(tx, key, func(p *contivmodel.Netprofile) error {
		p.LinkSets.EndpointGroups.Add(contivmodel.NewLink(contivmodel.TypeEndpointGroup, g.Key))
		return nil
	})
}

func detachNetprofile(tx *contivmodel.Tx, g *contivmodel.EndpointGroup, name string) error {
	key := modelKey(g.TenantName, name)
	g.Links.NetProfile = contivmodel.Link{}
	err := contivmodel.Modify(tx, key, func(p *contivmodel.Netprofile) error {
		p.LinkSets.EndpointGroups.Remove(g.Key)
		return nil
	})
	if errors.Is(err, contivmodel.ErrNotFound) {
		return contivmodel.Missingf("netprofile %s not found", key)
	}
	return err
}

func linkContracts(tx *contivmodel.Tx, g *contivmodel.EndpointGroup, names []string) error {
	for _, name := range names {
		key := modelKey(g.TenantName, name)
		err := contivmodel.Modify(tx, key, func(e *contivmodel.ExtContractsGroup) error {
			e.LinkSets.EndpointGroups.Add(contivmodel.NewLink(contivmodel.TypeEndpointGroup, g.Key))
			return nil
		})
		if errors.Is(err, contivmodel.ErrNotFound) {
			return contivmodel.Missingf("External contracts group %s not found", name)
		} else if err != nil {
			return err
		}
		g.LinkSets.ExtContractsGrps.Add(contivmodel.NewLink(contivmodel.TypeExtContractsGroup, key))
	}
	return nil
}

func unlinkContracts(tx *contivmodel.Tx, g *contivmodel.EndpointGroup) error {
	for _, key := range sortedKeys(g.LinkSets.ExtContractsGrps) {
		g.LinkSets.ExtContractsGrps.Remove(key)
		err := contivmodel.Modify(tx, key, func(e *contivmodel.ExtContractsGroup) error {
			e.LinkSets.EndpointGroups.Remove(g.Key)
			return nil
		})
		if err != nil && !errors.Is(err, contivmodel.ErrNotFound) {
			return err
		}
	}
	return nil
}

// Update changes policies, netprofile and contracts; network and pool are
// fixed.
func (c epgCtl) Update(ctx context.Context, tx *contivmodel.Tx, stored, req *contivmodel.EndpointGroup) error {
	m := c.m
	if req.NetworkName != stored.NetworkName {
		return contivmodel.Errorf("Cannot change network association after epg is created.")
	}
	if req.IpPool != stored.IpPool {
		return contivmodel.Errorf("Cannot change IP pool after epg is created.")
	}
	epgID := state.GroupID(stored.TenantName, stored.GroupName)
	gs, err := m.st.EndpointGroups.Read(ctx, epgID)
	if err != nil {
		return apierr.Store("read group state "+epgID, err)
	}
	for _, p := range req.Policies {
		if !slices.Contains(stored.Policies, p) {
			if err := linkPolicy(tx, stored, p); err != nil {
				return err
			}
			if err := m.pol.AttachEpgPolicy(ctx, tx, stored, gs.EndpointGroupID, p); err != nil {
				return err
			}
		}
	}
	switch {
	case stored.NetProfile != "" && req.NetProfile == "":
		gs.DSCP, gs.Bandwidth, gs.Burst = 0, "", 0
		if err := detachNetprofile(tx, stored, stored.NetProfile); err != nil {
			return err
		}
	case req.NetProfile != "":
		if stored.NetProfile != "" && stored.NetProfile != req.NetProfile {
			if err := detachNetprofile(tx, stored, stored.NetProfile); err != nil {
				return err
			}
		}
		if err := attachNetprofile(tx, stored, &gs, req.NetProfile); err != nil {
			return err
		}
	}
	for _, p := range stored.Policies {
		if !slices.Contains(req.Policies, p) {
			if err := unlinkPolicy(tx, stored, p); err != nil {
				return err
			}
			if err := m.pol.DetachEpgPolicy(ctx, tx, stored, p); err != nil {
				return err
			}
		}
	}
	if err := unlinkContracts(tx, stored); err != nil {
		return err
	}
	if err := linkContracts(tx, stored, req.ExtContractsGrps); err != nil {
		return err
	}
	undo, err := m.eps.Snapshot(ctx, m.st.EndpointGroups.Key(epgID))
	if err != nil {
		return err
	}
	tx.OnAbort(undo)
	if _, err := m.st.EndpointGroups.Update(ctx, epgID, func(cur *state.EndpointGroup) error {
		cur.DSCP, cur.Bandwidth, cur.Burst = gs.DSCP, gs.Bandwidth, gs.Burst
		return nil
	}); err != nil {
		return fmt.Errorf("write group state %q: %w", epgID, err)
	}
	stored.NetProfile, stored.Policies, stored.ExtContractsGrps = req.NetProfile, req.Policies, req.ExtContractsGrps
	return nil
}

// Delete refuses in the spec's order, then frees the pool, id and state
// and drops the links.
func (c epgCtl) Delete(ctx context.Context, tx *contivmodel.Tx, g *contivmodel.EndpointGroup) error {
	m := c.m
	if g.Links.AppProfile.IsSet() {
		return contivmodel.Errorf("Cannot delete %s, associated to appProfile %s", g.GroupName, g.Links.AppProfile.ObjKey)
	}
	// Fail closed (docs/security.md): a rule naming a deleted group
	// could no longer be resolved, and its group id may be handed to
	// another group; the rules go first.
	if rules := sortedKeys(g.LinkSets.MatchRules); len(rules) > 0 {
		return contivmodel.Errorf("Cannot delete %s, rules %s match it: delete them first", g.GroupName, strings.Join(rules, ", "))
	}
	if err := m.refuseSwarmDelete(ctx, "group", g.GroupName, g.TenantName, g.NetworkName, g.GroupName); err != nil {
		return err
	}
	epgID := state.GroupID(g.TenantName, g.GroupName)
	m.eps.LockTopology()
	defer m.eps.UnlockTopology()
	gs, err := m.st.EndpointGroups.Read(ctx, epgID)
	if err != nil {
		return apierr.Store("read group state "+epgID, err)
	}
	if gs.EpCount != 0 {
		return contivmodel.Errorf("Error: EPG %s has active endpoints", g.GroupName)
	}
	for _, p := range g.Policies {
		if err := m.pol.DetachEpgPolicy(ctx, tx, g, p); err != nil {
			return err
		}
		if err := unlinkPolicy(tx, g, p); err != nil && !errors.Is(err, contivmodel.ErrNotFound) {
			var ce *contivmodel.Error
			if !errors.As(err, &ce) || ce.Msg != "Policy not found" {
				return err
			}
		}
	}
	if err := unlinkContracts(tx, g); err != nil {
		return err
	}
	if g.NetProfile != "" {
		if err := detachNetprofile(tx, g, g.NetProfile); err != nil {
			var ce *contivmodel.Error
			if !errors.As(err, &ce) || ce.Msg != "netprofile not found" {
				return err
			}
		}
	}
	for _, mod := range []func() error{
		func() error {
			return contivmodel.Modify(tx, modelKey(g.TenantName, g.NetworkName), func(n *contivmodel.Network) error {
				n.LinkSets.EndpointGroups.Remove(g.Key)
				return nil
			})
		},
		func() error {
			return contivmodel.Modify(tx, g.TenantName, func(t *contivmodel.Tenant) error {
				t.LinkSets.EndpointGroups.Remove(g.Key)
				return nil
			})
		},
	} {
		if err := mod(); err != nil && !errors.Is(err, contivmodel.ErrNotFound) {
			return err
		}
	}
	undo, err := m.eps.Snapshot(ctx, m.st.EndpointGroups.Key(epgID), epgIDKey(gs.EndpointGroupID))
	if err != nil {
		return err
	}
	tx.OnAbort(undo)
	m.eps.ForgetGroup(epgID)
	tx.OnAbort(func() { m.eps.ForgetGroup(epgID) })
	if err := m.st.EndpointGroups.Clear(ctx, epgID); err != nil {
		return fmt.Errorf("delete group state %q: %w", epgID, err)
	}
	if m.dockerMode() {
		if err := m.deleteDocknet(ctx, tx, g.TenantName, g.NetworkName, g.GroupName); err != nil {
			return err
		}
	}
	if err := m.freeEPGID(ctx, gs.EndpointGroupID); err != nil {
		return err
	}
	if isACI(tx) && gs.PktTag > 0 {
		if err := m.res.FreeVLAN(ctx, uint(gs.PktTag)); err != nil {
			return fmt.Errorf("free group vlan: %w", err)
		}
	}
	if gs.IPPool != "" {
		if err := m.v4.DeletePool(ctx, epgID); err != nil {
			return fmt.Errorf("delete ip pool of group %q: %w", epgID, err)
		}
	}
	return nil
}

// Oper reports the group's tags, endpoints and pool usage.
func (c epgCtl) Oper(ctx context.Context, _ *contivmodel.Tx, g *contivmodel.EndpointGroup) (any, error) {
	eps, err := c.m.eps.AllEndpoints(ctx)
	if err != nil {
		return nil, err
	}
	return c.m.groupOper(ctx, g, eps, true)
}

func (m *Objects) groupOper(ctx context.Context, g *contivmodel.EndpointGroup, eps []state.Endpoint, full bool) (*contivmodel.EndpointGroupOper, error) {
	epgID := state.GroupID(g.TenantName, g.GroupName)
	gs, err := m.st.EndpointGroups.Read(ctx, epgID)
	if err != nil {
		return nil, apierr.Store("read group state "+epgID, err)
	}
	netID := state.NetworkID(g.TenantName, g.NetworkName)
	ns, err := m.st.Networks.Read(ctx, netID)
	if err != nil {
		return nil, apierr.Store("read network state "+netID, err)
	}
	op := &contivmodel.EndpointGroupOper{
		PktTag:         gs.PktTag,
		ExternalPktTag: ns.ExtPktTag,
		NumEndpoints:   gs.EpCount,
	}
	op.Endpoints = endpoints.Opers(eps, func(ep state.Endpoint) bool { return ep.EndpointGroupKey == epgID })
	if full {
		op.GroupTag = gs.GroupTag
		if gs.IPPool != "" {
			if op.AllocatedIPAddresses, op.AvailableIPAddresses, err = m.poolLists(ctx, epgID); err != nil {
				return nil, err
			}
		}
	}
	return op, nil
}
