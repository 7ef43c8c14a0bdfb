package ofmaster

import (
	"context"
	"fmt"
	"sort"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/ofnet/ofrpc"
)

// AddNode tells the agent n about this master (OfnetAgent.AddMaster with
// the advertised address); the agent then registers with RegisterNode. It
// makes one attempt (with the pool's dial retries); callers retry.
func (m *Master) AddNode(ctx context.Context, n ofrpc.OfnetNode) error {
	m.mu.Lock()
	self := m.self
	m.mu.Unlock()
	if self.HostAddr == "" || self.HostPort == 0 {
		return fmt.Errorf("add master to agent %s: own address not known yet: %w", n.Addr(), ErrNotServing)
	}
	var reply bool
	if err := m.pool.Call(ctx, n.Addr(), ofrpc.AgentAddMaster, self, &reply); err != nil {
		return fmt.Errorf("add master to agent %s: %w", n.Addr(), err)
	}
	return nil
}

// RemoveNode forgets agent n: its sender stops (waited for) and its client
// is dropped. An unknown agent is not an error.
func (m *Master) RemoveNode(n ofrpc.OfnetNode) {
	key := n.Addr()
	m.mu.Lock()
	p := m.agents[key]
	delete(m.agents, key)
	m.mu.Unlock()
	if p != nil {
		p.cancel()
		<-p.done
		m.log.WithField("agent", key).Info("agent removed")
	}
	m.pool.Drop(key)
}

// ClearNode forgets every endpoint originated at hostAddr and sends their
// deletion to the agents of other hosts (used once a host is gone for
// good).
func (m *Master) ClearNode(ctx context.Context, hostAddr string) error {
	if hostAddr == "" {
		return fmt.Errorf("clear node: address required: %w", ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var ids []string
	for id, ep := range m.endpoints {
		if originatedAt(ep, hostAddr) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		ep := m.endpoints[id]
		delete(m.endpoints, id)
		m.fanOut(ofrpc.AgentEndpointDel, ep, hostAddr)
	}
	if len(ids) > 0 {
		m.log.WithFields(logrus.Fields{"host": hostAddr, "endpoints": len(ids)}).Info("cleared endpoints of a departed host")
	}
	return nil
}

// AddRule stores r and sends it to every agent (PolicyAgent.AddRule).
// Adding an identical rule again is a no-op; a different rule with the same
// RuleId fails with ErrRuleExists.
func (m *Master) AddRule(ctx context.Context, r ofrpc.OfnetPolicyRule) error {
	if r.RuleId == "" {
		return fmt.Errorf("add rule: id required: %w", ErrInvalid)
	}
	// Fail closed (docs/security.md): a rule naming a group it has no id
	// for is not sent to any agent.
	if err := r.CheckGroups(); err != nil {
		return fmt.Errorf("add rule: %w: %w", ErrInvalid, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.rules[r.RuleId]; ok {
		if old == r {
			return nil
		}
		return fmt.Errorf("add rule %q: %w", r.RuleId, ErrRuleExists)
	}
	m.rules[r.RuleId] = r
	m.fanOut(ofrpc.PolicyAddRule, r, "")
	return nil
}

// DelRule removes the rule with r's RuleId and sends the stored rule's
// deletion to every agent (PolicyAgent.DelRule). An unknown id fails with
// ErrRuleNotFound.
func (m *Master) DelRule(ctx context.Context, r ofrpc.OfnetPolicyRule) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.rules[r.RuleId]
	if !ok {
		return fmt.Errorf("delete rule %q: %w", r.RuleId, ErrRuleNotFound)
	}
	delete(m.rules, r.RuleId)
	m.fanOut(ofrpc.PolicyDelRule, old, "")
	return nil
}

// Rule returns the stored rule with this id.
func (m *Master) Rule(id string) (ofrpc.OfnetPolicyRule, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.rules[id]
	return r, ok
}

// InjectGARPs asks every agent to send gratuitous ARPs for the endpoints of
// group epg (OfnetAgent.InjectGARPs). Delivery is asynchronous.
func (m *Master) InjectGARPs(ctx context.Context, epg int) {
	if ctx.Err() != nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fanOut(ofrpc.AgentInjectGARPs, epg, "")
}
