package agents

import (
	"context"
	"errors"
	"fmt"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/ofnet/ofmaster"
	"github.com/contiv/netplugin/ofnet/ofrpc"
	"github.com/contiv/netplugin/state"
	"github.com/contiv/netplugin/utils/ctxutil"
)

// followRules keeps the ofnet master's rules equal to state/policyRule:
// the rules the policy code writes (rule.go) reach the agents through the
// master (docs/daemons.md §4.11). It lists and reconciles (the restore on
// leadership), then applies the watch from the listed version; a failed
// watch is followed by a new list. Only this goroutine changes the
// master's rules.
func (a *Agents) followRules(ctx context.Context, om *ofmaster.Master) {
	for ctx.Err() == nil {
		ver, err := a.syncRules(ctx, om)
		if err != nil {
			if ctx.Err() == nil {
				a.log.WithError(err).Warn("ofnet: list policy rules")
			}
			ctxutil.Sleep(ctx, ofnetRetry)
			continue
		}
		ch, err := a.st.PolicyRules.Watch(ctx, objdb.WithStartVersion(ver))
		if err != nil {
			if ctx.Err() == nil {
				a.log.WithError(err).Warn("ofnet: watch policy rules")
			}
			ctxutil.Sleep(ctx, ofnetRetry)
			continue
		}
		for c := range ch {
			a.applyRuleChange(ctx, om, c)
		}
	}
}

// syncRules makes the master's rules those of the store and returns the
// store version they were read at.
func (a *Agents) syncRules(ctx context.Context, om *ofmaster.Master) (int64, error) {
	rules, ver, err := a.st.PolicyRules.ReadAll(ctx)
	if err != nil {
		return 0, err
	}
	want := make(map[string]bool, len(rules))
	for _, r := range rules {
		want[r.StateID()] = true
	}
	for id, r := range om.State().PolicyDb {
		if !want[id] {
			a.delOfnetRule(ctx, om, r.RuleId)
		}
	}
	for _, r := range rules {
		a.putOfnetRule(ctx, om, r.StateID(), r)
	}
	return ver, nil
}

func (a *Agents) applyRuleChange(ctx context.Context, om *ofmaster.Master, c state.Change[state.PolicyRule]) {
	switch {
	case c.Curr != nil:
		a.putOfnetRule(ctx, om, c.ID, *c.Curr)
	case c.Err != nil && c.ID == "":
		if ctx.Err() == nil {
			a.log.WithError(c.Err).Warn("ofnet: policy rule watch failed; listing again")
		}
	case c.Err != nil:
		// A value that did not decode: find out from the store what the
		// key holds now.
		r, err := a.st.PolicyRules.Read(ctx, c.ID)
		switch {
		case errors.Is(err, objdb.ErrNotFound):
			a.delOfnetRule(ctx, om, c.ID)
		case err != nil:
			a.log.WithError(errors.Join(c.Err, err)).WithField("rule", c.ID).Warn("ofnet: unreadable policy rule left as it was")
		default:
			a.putOfnetRule(ctx, om, c.ID, r)
		}
	default:
		// Deleted: the previous value names the rule (docs/daemons.md §10 row
		// 9); the key is the same id.
		id := c.ID
		if c.Prev != nil && c.Prev.RuleId != "" {
			id = c.Prev.RuleId
		}
		a.delOfnetRule(ctx, om, id)
	}
}

// ofnetRule converts a stored rule; the two structs have the same fields
// (the conversion stops compiling if they drift apart).
func ofnetRule(id string, r state.PolicyRule) ofrpc.OfnetPolicyRule {
	o := ofrpc.OfnetPolicyRule(r.OfnetPolicyRule)
	if o.RuleId == "" {
		o.RuleId = id
	}
	return o
}

// putOfnetRule adds the rule, replacing a different one with its id.
func (a *Agents) putOfnetRule(ctx context.Context, om *ofmaster.Master, id string, r state.PolicyRule) {
	o := ofnetRule(id, r)
	if old, ok := om.Rule(o.RuleId); ok {
		if old == o {
			return
		}
		if err := om.DelRule(ctx, old); err != nil {
			a.log.WithError(err).WithField("rule", o.RuleId).Warn("ofnet: replace policy rule")
		}
	}
	if err := om.AddRule(ctx, o); err != nil && ctx.Err() == nil {
		a.log.WithError(fmt.Errorf("push policy rule %q: %w", o.RuleId, err)).Warn("ofnet")
	}
}

func (a *Agents) delOfnetRule(ctx context.Context, om *ofmaster.Master, id string) {
	err := om.DelRule(ctx, ofrpc.OfnetPolicyRule{RuleId: id})
	if err != nil && !errors.Is(err, ofmaster.ErrRuleNotFound) && ctx.Err() == nil {
		a.log.WithError(err).WithField("rule", id).Warn("ofnet: delete policy rule")
	}
}
