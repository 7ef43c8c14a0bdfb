package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/contiv/netplugin/api/attach"
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
	d.netpol = c
	goRun(ctx, wg, c.Run)
}

// netpolAttachWait bounds how long an attach waits for the NetworkPolicy
// of its pod; the attach fails after it (the kubelet retries).
const netpolAttachWait = 15 * time.Second

// netpolAttached has the policy count a pod under its new address, and
// waits until that is applied, before its interface is moved into the
// pod (docs/k8s.md, "NetworkPolicy"): a pod a policy selects is isolated
// from its first packet, whether or not its status exists yet.
func (d *Daemon) netpolAttached(ctx context.Context, req attach.Request, cidr string) error {
	if d.netpol == nil || req.PodNamespace == "" || req.PodName == "" {
		return nil
	}
	p, err := netip.ParsePrefix(cidr)
	if err != nil || !p.Addr().Is4() {
		return nil // NetworkPolicy here is IPv4 only
	}
	wctx, cancel := context.WithTimeout(ctx, netpolAttachWait)
	defer cancel()
	t0 := time.Now()
	if err := d.netpol.PodAttached(wctx, req.PodNamespace, req.PodName, p.Addr()); err != nil {
		return fmt.Errorf("attach %s/%s: %w", req.PodNamespace, req.PodName, err)
	}
	d.log.WithFields(map[string]any{"pod": req.PodNamespace + "/" + req.PodName, "ip": p.Addr().String(),
		"wait": time.Since(t0).Round(time.Millisecond)}).Debug("networkpolicy covers the new pod")
	return nil
}

// netpolDetached forgets what netpolAttached gave.
func (d *Daemon) netpolDetached(req attach.DetachRequest) {
	if d.netpol != nil && req.PodNamespace != "" && req.PodName != "" {
		d.netpol.PodDetached(req.PodNamespace, req.PodName)
	}
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
