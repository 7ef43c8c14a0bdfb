package ofmaster

import (
	"context"
	"fmt"
	"sort"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/ofnet/ofrpc"
)

// rpcService is the receiver registered as "OfnetMaster": only the RPC
// methods, in the net/rpc shape. Replies are true on success.
type rpcService struct{ m *Master }

// RegisterNode stores the agent and queues a full replay for it: every
// endpoint not originated at its address, then every rule.
func (s *rpcService) RegisterNode(n ofrpc.OfnetNode, reply *bool) error {
	if err := s.m.registerNode(n); err != nil {
		return err
	}
	*reply = true
	return nil
}

// UnRegisterNode forgets the agent and drops its client.
func (s *rpcService) UnRegisterNode(n ofrpc.OfnetNode, reply *bool) error {
	s.m.RemoveNode(n)
	*reply = true
	return nil
}

// EndpointAdd stores ep unless a copy that is not older is stored, and
// forwards it to every agent of another host.
func (s *rpcService) EndpointAdd(ep ofrpc.OfnetEndpoint, reply *bool) error {
	if err := s.m.endpointAdd(ep); err != nil {
		return err
	}
	*reply = true
	return nil
}

// EndpointDel deletes ep unless it is unknown or the stored copy is newer,
// and forwards the deletion to every agent of another host.
func (s *rpcService) EndpointDel(ep ofrpc.OfnetEndpoint, reply *bool) error {
	if err := s.m.endpointDel(ep); err != nil {
		return err
	}
	*reply = true
	return nil
}

// EndpointSync deletes the endpoints of the calling agent that its
// complete set (sent after each registration) no longer lists.
func (s *rpcService) EndpointSync(sync ofrpc.OfnetEndpointSync, reply *bool) error {
	if err := s.m.endpointSync(sync); err != nil {
		return err
	}
	*reply = true
	return nil
}

func (m *Master) registerNode(n ofrpc.OfnetNode) error {
	if n.HostAddr == "" || n.HostPort == 0 {
		return fmt.Errorf("register node %+v: address and port required: %w", n, ErrInvalid)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.runCtx == nil || m.stopped {
		return fmt.Errorf("register node %s: %w", n.Addr(), ErrNotServing)
	}
	key := n.Addr()
	p := m.agents[key]
	if p == nil && len(m.agents) >= m.cfg.Limits.MaxNodes {
		return fmt.Errorf("register node %s: %d agents registered: %w", key, len(m.agents), ErrLimit)
	}
	if p == nil {
		p = newPeer(n, m.log)
		var ctx context.Context
		ctx, p.cancel = context.WithCancel(m.runCtx)
		m.agents[key] = p
		go p.run(ctx, m)
		m.log.WithField("agent", key).Info("agent registered")
	} else {
		m.log.WithField("agent", key).Info("agent registered again")
	}
	p.enqueue(m, message{replay: true})
	p.registered()
	return nil
}

func (m *Master) endpointAdd(ep ofrpc.OfnetEndpoint) error {
	if ep.EndpointID == "" || ep.OriginatorIp == nil {
		return fmt.Errorf("endpoint add %q: id and originator required: %w", ep.EndpointID, ErrInvalid)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.endpoints[ep.EndpointID]
	if ok && !old.Timestamp.Before(ep.Timestamp) {
		return nil
	}
	if !ok && len(m.endpoints) >= m.cfg.Limits.MaxEndpoints {
		return fmt.Errorf("endpoint add %q: %d endpoints stored: %w", ep.EndpointID, len(m.endpoints), ErrLimit)
	}
	m.endpoints[ep.EndpointID] = ep
	m.fanOut(ofrpc.AgentEndpointAdd, ep, ep.OriginatorIp.String())
	return nil
}

func (m *Master) endpointDel(ep ofrpc.OfnetEndpoint) error {
	if ep.EndpointID == "" {
		return fmt.Errorf("endpoint delete: id required: %w", ErrInvalid)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.endpoints[ep.EndpointID]
	if !ok || old.Timestamp.After(ep.Timestamp) {
		return nil
	}
	delete(m.endpoints, ep.EndpointID)
	// The stored copy names the owner even if the request does not.
	m.fanOut(ofrpc.AgentEndpointDel, ep, old.OriginatorIp.String())
	return nil
}

// endpointSync takes the agent's list as the truth about its endpoints: a
// stored endpoint the agent originated (same OriginatorIp and
// OriginatorPort) that the list leaves out is deleted and its deletion sent
// to the other hosts' agents, unless it is newer than the list (pushed
// after it was taken). Endpoints of agents that do not send their port
// (upstream agents) are never touched.
func (m *Master) endpointSync(sync ofrpc.OfnetEndpointSync) error {
	n := sync.Node
	if n.HostAddr == "" || n.HostPort == 0 {
		return fmt.Errorf("endpoint sync %+v: address and port required: %w", n, ErrInvalid)
	}
	listed := make(map[string]bool, len(sync.EndpointIDs))
	for _, id := range sync.EndpointIDs {
		listed[id] = true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var ids []string
	for id, ep := range m.endpoints {
		if listed[id] || ep.OriginatorPort != n.HostPort || !originatedAt(ep, n.HostAddr) ||
			ep.Timestamp.After(sync.Timestamp) {
			continue
		}
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		del := m.endpoints[id]
		delete(m.endpoints, id)
		del.Timestamp = sync.Timestamp
		m.fanOut(ofrpc.AgentEndpointDel, del, n.HostAddr)
	}
	if len(ids) > 0 {
		m.log.WithFields(logrus.Fields{"agent": n.Addr(), "endpoints": ids}).
			Info("deleted endpoints the agent no longer has (their deletion never reached this master)")
	}
	return nil
}
