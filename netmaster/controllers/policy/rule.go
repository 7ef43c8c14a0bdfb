package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/state"
)

// ruleCtl is the rule controller (docs/rest-api.md §2.8). In non-ACI mode
// a rule is expanded into directional ofnet rules for every group its
// policy is attached to (docs/daemons.md §4.11, docs/dataplane.md §4.4); those are
// persisted in state/policy/<epgPolicyID> and state/policyRule/<ruleID>.
// The ofnet master push itself is not done here.
type ruleCtl struct{ m *Controllers }

// epgPolicyID is the state id of a (group, policy) attachment:
// "<tenant>:<group>:<tenant>:<policy>".
func epgPolicyID(tenant, group, policy string) string {
	return modelKey(tenant, group) + ":" + modelKey(tenant, policy)
}

// checkRuleDirection is create step 1: direction consistency.
func checkRuleDirection(r *contivmodel.Rule) error {
	switch r.Direction {
	case "in":
		switch {
		case r.ToNetwork != "" || r.ToEndpointGroup != "":
			return contivmodel.Invalidf("can not specify 'to' parameters in incoming rule")
		case r.FromNetwork != "" && r.FromIpAddress != "":
			return contivmodel.Invalidf("can not specify both from network and from ip address")
		case r.FromNetwork != "" && r.FromEndpointGroup != "":
			return contivmodel.Invalidf("can not specify both from network and from EndpointGroup")
		}
	case "out":
		switch {
		case r.FromNetwork != "" || r.FromEndpointGroup != "" || r.FromIpAddress != "":
			return contivmodel.Invalidf("can not specify 'from' parameters in outgoing rule")
		case r.ToNetwork != "" && r.ToIpAddress != "":
			return contivmodel.Invalidf("can not specify both to-network and to-ip address")
		case r.ToNetwork != "" && r.ToEndpointGroup != "":
			return contivmodel.Invalidf("can not specify both to-network and to-EndpointGroup")
		}
	default:
		return contivmodel.Invalidf("invalid direction for the rule")
	}
	return nil
}

// matchedGroup is the group named by the rule (from first), if any.
func matchedGroup(r *contivmodel.Rule) string {
	if r.FromEndpointGroup != "" {
		return r.FromEndpointGroup
	}
	return r.ToEndpointGroup
}

// Create runs the rule create pipeline in the spec's order.
func (c ruleCtl) Create(ctx context.Context, tx *contivmodel.Tx, r *contivmodel.Rule) error {
	m := c.m
	if err := checkRuleDirection(r); err != nil {
		return err
	}
	switch {
	case r.FromEndpointGroup != "" || r.ToEndpointGroup != "":
		if ok, err := contivmodel.Exists[contivmodel.EndpointGroup](tx, modelKey(r.TenantName, matchedGroup(r))); err != nil {
			return err
		} else if !ok {
			return contivmodel.Missingf("endpoint group %s not found", modelKey(r.TenantName, matchedGroup(r)))
		}
		if !m.aci(tx) {
			if _, err := m.remoteGroupID(ctx, r); err != nil {
				return err
			}
		}
	case r.FromNetwork != "":
		if ok, err := contivmodel.Exists[contivmodel.Network](tx, modelKey(r.TenantName, r.FromNetwork)); err != nil {
			return err
		} else if !ok {
			return contivmodel.Missingf("from Network %s not found", modelKey(r.TenantName, r.FromNetwork))
		}
	case r.ToNetwork != "":
		if ok, err := contivmodel.Exists[contivmodel.Network](tx, modelKey(r.TenantName, r.ToNetwork)); err != nil {
			return err
		} else if !ok {
			return contivmodel.Missingf("to Network %s not found", modelKey(r.TenantName, r.ToNetwork))
		}
	}
	polKey, pol, err := rulePolicy(tx, r)
	if err != nil {
		return err
	}
	if r.Direction == "in" && r.ToIpAddress != "" {
		if err := m.checkRuleToIP(ctx, tx, r, pol); err != nil {
			return err
		}
	}
	if !m.aci(tx) {
		for _, gkey := range sortedKeys(pol.LinkSets.EndpointGroups) {
			g, err := contivmodel.Get[contivmodel.EndpointGroup](tx, gkey)
			if err != nil {
				return fmt.Errorf("group %q of policy %q: %w", gkey, polKey, err)
			}
			if err := m.installRule(ctx, tx, g, polKey, r); err != nil {
				return err
			}
		}
	}
	self := contivmodel.NewLink(contivmodel.TypeRule, r.Key)
	r.LinkSets.Policies.Add(contivmodel.NewLink(contivmodel.TypePolicy, polKey))
	if err := contivmodel.Modify(tx, polKey, func(p *contivmodel.Policy) error {
		p.LinkSets.Rules.Add(self)
		return nil
	}); err != nil {
		return err
	}
	if name := matchedGroup(r); name != "" {
		gkey := modelKey(r.TenantName, name)
		r.Links.MatchEndpointGroup = contivmodel.NewLink(contivmodel.TypeEndpointGroup, gkey)
		return contivmodel.Modify(tx, gkey, func(g *contivmodel.EndpointGroup) error {
			g.LinkSets.MatchRules.Add(self)
			return nil
		})
	}
	return nil
}

// rulePolicy reads the policy of rule r ("Policy <key> not found" when
// missing) and returns it with its model key.
func rulePolicy(tx *contivmodel.Tx, r *contivmodel.Rule) (string, *contivmodel.Policy, error) {
	polKey := modelKey(r.TenantName, r.PolicyName)
	pol, err := contivmodel.Get[contivmodel.Policy](tx, polKey)
	if errors.Is(err, contivmodel.ErrNotFound) {
		return polKey, nil, contivmodel.Missingf("Policy %s not found", polKey)
	}
	return polKey, pol, err
}

// checkRuleToIP is create step 4: an incoming rule with a destination IP
// needs the policy on exactly one group holding an endpoint with that IP.
func (m *Controllers) checkRuleToIP(ctx context.Context, tx *contivmodel.Tx, r *contivmodel.Rule, pol *contivmodel.Policy) error {
	keys := sortedKeys(pol.LinkSets.EndpointGroups)
	if len(keys) != 1 {
		return contivmodel.Errorf("failed to configure %s, %d endpoint groups linked to policy %s ", r.ToIpAddress, len(keys), r.PolicyName)
	}
	g, err := contivmodel.Get[contivmodel.EndpointGroup](tx, keys[0])
	if err != nil {
		return err
	}
	epgID := state.GroupID(g.TenantName, g.GroupName)
	eps, err := m.eps.AllEndpoints(ctx)
	if err != nil || len(eps) == 0 {
		return contivmodel.Errorf("failed to configure %s, unable to read endpoint state", r.ToIpAddress)
	}
	for _, ep := range eps {
		if ep.EndpointGroupKey == epgID && ep.IPAddress == r.ToIpAddress {
			return nil
		}
	}
	return contivmodel.Errorf("failed to configure %s, ip address is not in epg %s", r.ToIpAddress, epgID)
}

// Update is always refused: rules are immutable.
func (ruleCtl) Update(context.Context, *contivmodel.Tx, *contivmodel.Rule, *contivmodel.Rule) error {
	return contivmodel.Errorf("can not update a rule after its created")
}

// Delete unlinks the rule and uninstalls it from every attached group.
func (c ruleCtl) Delete(ctx context.Context, tx *contivmodel.Tx, r *contivmodel.Rule) error {
	m := c.m
	polKey, pol, err := rulePolicy(tx, r)
	if err != nil {
		return err
	}
	if err := contivmodel.Modify(tx, polKey, func(p *contivmodel.Policy) error {
		p.LinkSets.Rules.Remove(r.Key)
		return nil
	}); err != nil {
		return err
	}
	if r.Links.MatchEndpointGroup.IsSet() {
		err := contivmodel.Modify(tx, r.Links.MatchEndpointGroup.ObjKey, func(g *contivmodel.EndpointGroup) error {
			g.LinkSets.MatchRules.Remove(r.Key)
			return nil
		})
		if err != nil && !errors.Is(err, contivmodel.ErrNotFound) {
			return err
		}
	}
	if m.aci(tx) {
		return nil
	}
	for _, gkey := range sortedKeys(pol.LinkSets.EndpointGroups) {
		g, err := contivmodel.Get[contivmodel.EndpointGroup](tx, gkey)
		if err != nil {
			return fmt.Errorf("group %q of policy %q: %w", gkey, polKey, err)
		}
		if err := m.uninstallRule(ctx, tx, epgPolicyID(g.TenantName, g.GroupName, r.PolicyName), r.Key); err != nil {
			return err
		}
	}
	return nil
}

// Oper: rules have no operational state.
func (ruleCtl) Oper(context.Context, *contivmodel.Tx, *contivmodel.Rule) (any, error) {
	return nil, nil
}

// ruleProtocol maps a rule protocol to its IP protocol number.
func ruleProtocol(p string) uint8 {
	switch p {
	case "tcp":
		return 6
	case "udp":
		return 17
	case "icmp":
		return 1
	case "igmp":
		return 2
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 0 || n > 255 {
		return 0
	}
	return uint8(n)
}

// ofnetRules expands rule r of policy polKey attached to the group with
// model key epgKey and id gid into its directional ofnet rules.
func (m *Controllers) ofnetRules(ctx context.Context, tx *contivmodel.Tx, epgKey string, gid int, polKey string, r *contivmodel.Rule) (map[string]*state.OfnetPolicyRule, error) {
	fromIP, toIP := r.FromIpAddress, r.ToIpAddress
	remote, remoteName := 0, ""
	switch {
	case r.FromEndpointGroup != "" || r.ToEndpointGroup != "":
		// Fail closed (docs/security.md): an unresolved group would be id
		// 0, which matches every group.
		id, err := m.remoteGroupID(ctx, r)
		if err != nil {
			return nil, err
		}
		remote, remoteName = id, modelKey(r.TenantName, matchedGroup(r))
	case r.FromNetwork != "" || r.ToNetwork != "":
		name := r.FromNetwork
		if name == "" {
			name = r.ToNetwork
		}
		nw, err := contivmodel.Get[contivmodel.Network](tx, modelKey(r.TenantName, name))
		if err != nil {
			return nil, fmt.Errorf("network %q of rule %q: %w", name, r.Key, err)
		}
		if r.FromNetwork != "" {
			fromIP = nw.Subnet
		} else {
			toIP = nw.Subnet
		}
	}
	proto := ruleProtocol(r.Protocol)
	port := uint16(r.Port)
	both := (r.Protocol == "tcp" || r.Protocol == "udp") && port != 0
	synFlags := ""
	if r.Protocol == "tcp" && port == 0 {
		synFlags = "syn,!ack"
	}
	prefix := epgKey + ":" + polKey + ":" + r.Key + ":"
	mk := func(dir string) *state.OfnetPolicyRule {
		return &state.OfnetPolicyRule{RuleId: prefix + dir, Priority: r.Priority, IpProtocol: proto, Action: r.Action}
	}
	out := map[string]*state.OfnetPolicyRule{}
	add := func(o *state.OfnetPolicyRule) {
		// The names let the agents refuse a rule whose group id is
		// missing instead of matching any group (ofrpc CheckGroups).
		if remoteName != "" {
			if o.SrcEndpointGroup == remote {
				o.SrcEndpointGroupName = remoteName
			}
			if o.DstEndpointGroup == remote {
				o.DstEndpointGroupName = remoteName
			}
		}
		out[o.RuleId] = o
	}
	switch r.Direction {
	case "in":
		o := mk("inRx")
		o.SrcEndpointGroup, o.DstEndpointGroup = remote, gid
		o.SrcIpAddr, o.DstIpAddr = fromIP, toIP
		o.DstPort, o.TcpFlags = port, synFlags
		add(o)
		if both {
			o := mk("inTx")
			o.SrcEndpointGroup, o.DstEndpointGroup = gid, remote
			o.SrcIpAddr, o.DstIpAddr = toIP, fromIP
			o.SrcPort = port
			add(o)
		}
	case "out":
		o := mk("outTx")
		o.SrcEndpointGroup, o.DstEndpointGroup = gid, remote
		o.DstIpAddr = toIP
		o.DstPort, o.TcpFlags = port, synFlags
		add(o)
		if both {
			o := mk("outRx")
			o.SrcEndpointGroup, o.DstEndpointGroup = remote, gid
			o.SrcIpAddr = toIP
			o.SrcPort = port
			add(o)
		}
	default:
		return nil, contivmodel.Invalidf("invalid direction for the rule")
	}
	return out, nil
}

// remoteGroupID is the id of the group rule r matches
// (from/toEndpointGroup), read from the group's state. A group without
// state or with id 0 is an error: installed, the rule would match every
// group (docs/security.md, "Fail closed").
func (m *Controllers) remoteGroupID(ctx context.Context, r *contivmodel.Rule) (int, error) {
	name := matchedGroup(r)
	rid := state.GroupID(r.TenantName, name)
	gs, err := m.st.EndpointGroups.Read(ctx, rid)
	if err != nil {
		if errors.Is(err, objdb.ErrNotFound) {
			return 0, contivmodel.Missingf("rule %s: endpoint group %s has no state: its id cannot be resolved, rule refused", r.Key, modelKey(r.TenantName, name))
		}
		return 0, fmt.Errorf("rule %s: resolve endpoint group %s: %w", r.Key, modelKey(r.TenantName, name), err)
	}
	if gs.EndpointGroupID <= 0 {
		return 0, contivmodel.Errorf("rule %s: endpoint group %s has no id (%d): rule refused", r.Key, modelKey(r.TenantName, name), gs.EndpointGroupID)
	}
	return gs.EndpointGroupID, nil
}

// installRule adds rule r to the (group, policy) instance: its ofnet rules
// are written to state/policyRule and recorded in the EpgPolicy state. The
// writes are undone if the transaction aborts.
func (m *Controllers) installRule(ctx context.Context, tx *contivmodel.Tx, g *contivmodel.EndpointGroup, polKey string, r *contivmodel.Rule) error {
	id := epgPolicyID(g.TenantName, g.GroupName, r.PolicyName)
	ep, err := m.st.EpgPolicies.Read(ctx, id)
	if errors.Is(err, objdb.ErrNotFound) {
		return contivmodel.Errorf("epg policy %s not found", id)
	} else if err != nil {
		return fmt.Errorf("read epg policy %q: %w", id, err)
	}
	if _, ok := ep.RuleMaps[r.Key]; ok {
		return contivmodel.Errorf("Rule already exists")
	}
	return m.addRuleMap(ctx, tx, &ep, g.Key, polKey, r)
}

// addRuleMap expands r into ep and writes the rule states and ep.
func (m *Controllers) addRuleMap(ctx context.Context, tx *contivmodel.Tx, ep *state.EpgPolicy, epgKey, polKey string, r *contivmodel.Rule) error {
	ofr, err := m.ofnetRules(ctx, tx, epgKey, ep.EndpointGroupID, polKey, r)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	keys := []string{m.st.EpgPolicies.Key(ep.ID)}
	for id := range ofr {
		keys = append(keys, m.st.PolicyRules.Key(id))
	}
	undo, err := m.eps.Snapshot(ctx, keys...)
	if err != nil {
		return err
	}
	tx.OnAbort(undo)
	for _, id := range sortedKeys(ofr) {
		if _, err := m.st.PolicyRules.Write(ctx, state.PolicyRule{OfnetPolicyRule: *ofr[id]}); err != nil {
			return fmt.Errorf("write policy rule %q: %w", id, err)
		}
	}
	if ep.RuleMaps == nil {
		ep.RuleMaps = map[string]*state.RuleMap{}
	}
	ep.RuleMaps[r.Key] = &state.RuleMap{Rule: raw, OfnetRules: ofr}
	if _, err := m.st.EpgPolicies.Write(ctx, *ep); err != nil {
		return fmt.Errorf("write epg policy %q: %w", ep.ID, err)
	}
	return nil
}

// uninstallRule removes rule ruleKey from the instance id.
func (m *Controllers) uninstallRule(ctx context.Context, tx *contivmodel.Tx, id, ruleKey string) error {
	ep, err := m.st.EpgPolicies.Read(ctx, id)
	if errors.Is(err, objdb.ErrNotFound) {
		return contivmodel.Errorf("epg policy %s not found", id)
	} else if err != nil {
		return fmt.Errorf("read epg policy %q: %w", id, err)
	}
	rm, ok := ep.RuleMaps[ruleKey]
	if !ok {
		return nil
	}
	if err := m.clearRuleStates(ctx, tx, id, rm); err != nil {
		return err
	}
	delete(ep.RuleMaps, ruleKey)
	if _, err := m.st.EpgPolicies.Write(ctx, ep); err != nil {
		return fmt.Errorf("write epg policy %q: %w", id, err)
	}
	return nil
}

// AttachEpgPolicy creates the (group, policy) instance with every rule of
// the policy. gid is the group's id. Nothing is done in ACI mode.
func (m *Controllers) AttachEpgPolicy(ctx context.Context, tx *contivmodel.Tx, g *contivmodel.EndpointGroup, gid int, policy string) error {
	if m.aci(tx) {
		return nil
	}
	polKey := modelKey(g.TenantName, policy)
	pol, err := contivmodel.Get[contivmodel.Policy](tx, polKey)
	if err != nil {
		return err
	}
	id := epgPolicyID(g.TenantName, g.GroupName, policy)
	undo, err := m.eps.Snapshot(ctx, m.st.EpgPolicies.Key(id))
	if err != nil {
		return err
	}
	tx.OnAbort(undo)
	ep := state.EpgPolicy{Common: state.Common{ID: id}, EpgPolicyKey: id, EndpointGroupID: gid, RuleMaps: map[string]*state.RuleMap{}}
	if _, err := m.st.EpgPolicies.Write(ctx, ep); err != nil {
		return fmt.Errorf("write epg policy %q: %w", id, err)
	}
	for _, rkey := range sortedKeys(pol.LinkSets.Rules) {
		r, err := contivmodel.Get[contivmodel.Rule](tx, rkey)
		if err != nil {
			return fmt.Errorf("rule %q of policy %q: %w", rkey, polKey, err)
		}
		if err := m.addRuleMap(ctx, tx, &ep, g.Key, polKey, r); err != nil {
			return err
		}
	}
	return nil
}

// DetachEpgPolicy deletes the (group, policy) instance and its rule
// states. A missing instance is not an error.
func (m *Controllers) DetachEpgPolicy(ctx context.Context, tx *contivmodel.Tx, g *contivmodel.EndpointGroup, policy string) error {
	id := epgPolicyID(g.TenantName, g.GroupName, policy)
	ep, err := m.st.EpgPolicies.Read(ctx, id)
	if errors.Is(err, objdb.ErrNotFound) {
		return nil
	} else if err != nil {
		return fmt.Errorf("read epg policy %q: %w", id, err)
	}
	rms := make([]*state.RuleMap, 0, len(ep.RuleMaps))
	for _, k := range sortedKeys(ep.RuleMaps) {
		rms = append(rms, ep.RuleMaps[k])
	}
	if err := m.clearRuleStates(ctx, tx, id, rms...); err != nil {
		return err
	}
	if err := m.st.EpgPolicies.Clear(ctx, id); err != nil && !errors.Is(err, objdb.ErrNotFound) {
		return fmt.Errorf("delete epg policy %q: %w", id, err)
	}
	return nil
}

// clearRuleStates deletes the ofnet rule states of rms, rules of the
// (group, policy) instance id; the instance and those states are restored
// if tx aborts.
func (m *Controllers) clearRuleStates(ctx context.Context, tx *contivmodel.Tx, id string, rms ...*state.RuleMap) error {
	keys := []string{m.st.EpgPolicies.Key(id)}
	var rids []string
	for _, rm := range rms {
		for _, rid := range sortedKeys(rm.OfnetRules) {
			rids = append(rids, rid)
			keys = append(keys, m.st.PolicyRules.Key(rid))
		}
	}
	undo, err := m.eps.Snapshot(ctx, keys...)
	if err != nil {
		return err
	}
	tx.OnAbort(undo)
	for _, rid := range rids {
		if err := m.st.PolicyRules.Clear(ctx, rid); err != nil && !errors.Is(err, objdb.ErrNotFound) {
			return fmt.Errorf("delete policy rule %q: %w", rid, err)
		}
	}
	return nil
}
