package daemon

import (
	"context"
	"errors"
	"net/netip"
	"sync"

	"k8s.io/client-go/kubernetes"

	"github.com/contiv/netplugin/mgmtfn/k8splugin/netpol"
	"github.com/contiv/netplugin/ofnet/agent"
)

// startNetpol enforces Kubernetes NetworkPolicy (docs/k8s.md,
// "NetworkPolicy"): a controller follows policies, pods and namespaces in
// the API server and hands each new per-pod result to the bridging agents.
func (d *Daemon) startNetpol(ctx context.Context, wg *sync.WaitGroup, cs kubernetes.Interface) {
	log := d.log.WithField("api", "networkpolicy")
	c := netpol.NewController(cs, func(ctx context.Context, r netpol.Result) error {
		pods := toAgentRules(r)
		for _, a := range []datapath{d.vx, d.vl} {
			if a == nil {
				continue
			}
			if err := a.SetNetworkPolicy(ctx, pods); err != nil && !errors.Is(err, agent.ErrNetpolUnsupported) {
				return err
			}
		}
		log.WithField("pods", len(r)).Info("networkpolicy applied")
		return nil
	}, func(format string, args ...any) { log.Warnf(format, args...) })
	goRun(ctx, wg, c.Run)
}

// toAgentRules converts the controller's result into the agents' input.
func toAgentRules(r netpol.Result) map[netip.Addr]agent.NetpolPod {
	out := make(map[netip.Addr]agent.NetpolPod, len(r))
	conv := func(as []netpol.Allow) []agent.NetpolAllow {
		var o []agent.NetpolAllow
		for _, a := range as {
			o = append(o, agent.NetpolAllow{Peer: a.Peer, Proto: a.Proto, PortMin: a.PortMin, PortMax: a.PortMax})
		}
		return o
	}
	for ip, p := range r {
		out[ip] = agent.NetpolPod{IngressIsolated: p.IngressIsolated, EgressIsolated: p.EgressIsolated,
			Ingress: conv(p.Ingress), Egress: conv(p.Egress)}
	}
	return out
}
