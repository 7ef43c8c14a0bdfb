package agent

import (
	"context"
	"time"

	"github.com/contiv/netplugin/ofnet/ofrpc"
)

// rpcTimeout bounds the switch work one RPC may trigger.
const rpcTimeout = 30 * time.Second

// OfnetAgentService is the "OfnetAgent" RPC service (docs/dataplane.md §6.2).
type OfnetAgentService struct{ a *Agent }

// PolicyAgentService is the "PolicyAgent" RPC service (§4.3).
type PolicyAgentService struct{ a *Agent }

func rpcCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), rpcTimeout)
}

// AddMaster stores the master, registers with it and pushes the local endpoints.
func (s *OfnetAgentService) AddMaster(n ofrpc.OfnetNode, reply *bool) error {
	ctx, cancel := rpcCtx()
	defer cancel()
	*reply = true
	return s.a.AddMaster(ctx, n)
}

// EndpointAdd installs a remote endpoint.
func (s *OfnetAgentService) EndpointAdd(ep ofrpc.OfnetEndpoint, reply *bool) error {
	ctx, cancel := rpcCtx()
	defer cancel()
	*reply = true
	return s.a.AddRemoteEndpoint(ctx, ep)
}

// EndpointAddBatch installs remote endpoints with one switch sync (this
// project's addition, docs/dataplane.md §6.2); the reply lists those not
// added.
func (s *OfnetAgentService) EndpointAddBatch(b ofrpc.OfnetEndpointBatch, reply *ofrpc.OfnetBatchReply) error {
	ctx, cancel := rpcCtx()
	defer cancel()
	reply.Failed = s.a.AddRemoteEndpoints(ctx, b.Endpoints)
	return nil
}

// EndpointDel removes a remote endpoint.
func (s *OfnetAgentService) EndpointDel(ep ofrpc.OfnetEndpoint, reply *bool) error {
	ctx, cancel := rpcCtx()
	defer cancel()
	*reply = true
	return s.a.RemoveRemoteEndpoint(ctx, ep)
}

// InjectGARPs starts a GARP burst for an EPG (VLAN bridging).
func (s *OfnetAgentService) InjectGARPs(epg int, reply *bool) error {
	ctx, cancel := rpcCtx()
	defer cancel()
	*reply = true
	s.a.InjectGARPs(ctx, epg)
	return nil
}

// DummyRpc does nothing (used by tests and health checks).
func (s *OfnetAgentService) DummyRpc(arg string, reply *bool) error {
	*reply = true
	return nil
}

// AddRule installs a policy rule.
func (s *PolicyAgentService) AddRule(r ofrpc.OfnetPolicyRule, reply *bool) error {
	ctx, cancel := rpcCtx()
	defer cancel()
	*reply = true
	return s.a.AddRule(ctx, r)
}

// DelRule removes a policy rule.
func (s *PolicyAgentService) DelRule(r ofrpc.OfnetPolicyRule, reply *bool) error {
	ctx, cancel := rpcCtx()
	defer cancel()
	*reply = true
	return s.a.DelRule(ctx, r)
}
