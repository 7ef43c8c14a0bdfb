package endpoints

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/contiv/netplugin/netmaster/agents"
	"github.com/contiv/netplugin/ofnet/ofrpc"
)

// AgentCaller calls a netplugin's agent RPC (an *ofrpc.Pool with the
// master certificate's mutual TLS; docs/security.md).
type AgentCaller interface {
	Call(ctx context.Context, addr, method string, arg, reply any) error
}

// AgentAddr is "addr:port" of the agent RPC of the netplugin at addr that
// serves the Netplugin service (the VXLAN agent's port).
func (m *Service) AgentAddr(addr string) string {
	port := m.cfg.NetpluginPort
	if port == 0 {
		port = ofrpc.VxlanAgentPort
	}
	return net.JoinHostPort(addr, strconv.Itoa(port))
}

// CallAgent calls method of the netplugin at addr over the agent RPC.
func (m *Service) CallAgent(ctx context.Context, addr, method string, arg, reply any) error {
	if m.cfg.Agents == nil {
		return errors.New("endpoints: no agent RPC client")
	}
	if err := m.cfg.Agents.Call(ctx, m.AgentAddr(addr), method, arg, reply); err != nil {
		return fmt.Errorf("ask the netplugin at %s: %w", addr, err)
	}
	return nil
}

// vtepsByHost maps host names to the VTEP address their netplugin
// registered.
func (m *Service) vtepsByHost(ctx context.Context) (map[string]string, error) {
	if m.svc == nil {
		return nil, errors.New("endpoints: no service registry")
	}
	list, err := m.svc.GetService(ctx, agents.ServiceVtep)
	if err != nil {
		return nil, fmt.Errorf("list %s services: %w", agents.ServiceVtep, err)
	}
	out := make(map[string]string, len(list))
	for _, s := range list {
		if s.Hostname != "" {
			out[s.Hostname] = s.HostAddr
		}
	}
	return out, nil
}
