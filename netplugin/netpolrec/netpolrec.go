// Package netpolrec enforces Kubernetes NetworkPolicy in netplugin
// (docs/k8s.md, "NetworkPolicy"): a controller (mgmtfn/k8splugin/netpol)
// follows policies, pods and namespaces in the API server and hands each
// new per-pod result to the bridges' datapaths; an attach waits until the
// policy covers its pod.
package netpolrec

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/kubernetes"

	"github.com/contiv/netplugin/api/attach"
	"github.com/contiv/netplugin/mgmtfn/k8splugin/netpol"
	"github.com/contiv/netplugin/ofnet/agent"
)

// Datapath is what NetworkPolicy drives of a bridge's agent.
type Datapath interface {
	SetNetworkPolicy(ctx context.Context, pods map[netip.Addr]agent.NetpolPod) error
}

// Enforcer runs the controller; a nil *Enforcer (no API server) enforces
// nothing and holds no attach.
type Enforcer struct {
	c   *netpol.Controller
	log logrus.FieldLogger
}

// New makes the enforcer over the API server cs; peers are the pods of the
// store's endpoint records. Run serves it.
// Each applied result is logged with its latency (from the first change
// it covers to the flows written on every bridge) and handed to observe
// (nil: none).
func New(cs kubernetes.Interface, datapaths []Datapath, peers *netpol.Peers, log logrus.FieldLogger, observe func(time.Duration)) *Enforcer {
	log = log.WithField("api", "networkpolicy")
	c := netpol.NewController(cs, func(ctx context.Context, r netpol.Result) error {
		pods := toAgentRules(r)
		for _, a := range datapaths {
			if err := a.SetNetworkPolicy(ctx, pods); err != nil && !errors.Is(err, agent.ErrNetpolUnsupported) {
				return err
			}
		}
		return nil
	}, func(format string, args ...any) { log.Warnf(format, args...) })
	c.ObserveApplies(func(latency time.Duration, pods int) {
		log.WithFields(logrus.Fields{"pods": pods, "latency": latency.Round(time.Microsecond)}).Info("networkpolicy applied")
		if observe != nil {
			observe(latency)
		}
	})
	c.FollowPeers(peers)
	return &Enforcer{c: c, log: log}
}

// Run serves the controller until ctx ends.
func (e *Enforcer) Run(ctx context.Context) { e.c.Run(ctx) }

// netpolAttachWait bounds how long an attach waits for the NetworkPolicy
// of its pod; the attach fails after it (the kubelet retries).
const netpolAttachWait = 15 * time.Second

// Attached has the policy count a pod under its new address, and
// waits until that is applied, before its interface is moved into the
// pod (docs/k8s.md, "NetworkPolicy"): a pod a policy selects is isolated
// from its first packet, whether or not its status exists yet.
func (e *Enforcer) Attached(ctx context.Context, req attach.Request, cidr string) error {
	if e == nil || req.PodNamespace == "" || req.PodName == "" {
		return nil
	}
	p, err := netip.ParsePrefix(cidr)
	if err != nil || !p.Addr().Is4() {
		return nil // NetworkPolicy here is IPv4 only
	}
	wctx, cancel := context.WithTimeout(ctx, netpolAttachWait)
	defer cancel()
	t0 := time.Now()
	if err := e.c.PodAttached(wctx, req.PodNamespace, req.PodName, p.Addr()); err != nil {
		return fmt.Errorf("attach %s/%s: %w", req.PodNamespace, req.PodName, err)
	}
	e.log.WithFields(map[string]any{"pod": req.PodNamespace + "/" + req.PodName, "ip": p.Addr().String(),
		"wait": time.Since(t0).Round(time.Millisecond)}).Debug("networkpolicy covers the new pod")
	return nil
}

// Detached forgets what Attached gave.
func (e *Enforcer) Detached(req attach.DetachRequest) {
	if e != nil && req.PodNamespace != "" && req.PodName != "" {
		e.c.PodDetached(req.PodNamespace, req.PodName)
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
