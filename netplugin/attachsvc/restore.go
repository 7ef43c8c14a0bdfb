package attachsvc

import (
	"context"
	"fmt"
	"strings"

	"github.com/contiv/netplugin/netplugin/ovsdriver"
	"github.com/contiv/netplugin/state"
)

// ExistingPorts lists the endpoint ports a bridge has in OVS
// (*ovsdriver.Driver).
type ExistingPorts interface {
	ExistingEndpoints(ctx context.Context, bridge string) ([]ovsdriver.EndpointPort, error)
}

// Restore pairs the endpoint ports found in OVS at start with the store's
// endpoints homed on this host: a pair is re-announced to the datapath with
// its existing OpenFlow port and becomes local; a port without an endpoint
// is deleted. Run it after the networks and groups are known.
func (s *Service) Restore(ctx context.Context, existing ExistingPorts) error {
	all, _, err := s.cfg.Store.Endpoints.ReadAll(ctx)
	if err != nil {
		return fmt.Errorf("replay endpoints: %w", err)
	}
	mine := map[string]state.Endpoint{}
	for _, ep := range all {
		if ep.HomingHost == s.cfg.Host {
			mine[ep.ID] = ep
		}
	}
	for _, bridge := range []string{ovsdriver.VxlanBridge, ovsdriver.VlanBridge} {
		ports, err := existing.ExistingEndpoints(ctx, bridge)
		if err != nil {
			return fmt.Errorf("read endpoint ports of %s: %w", bridge, err)
		}
		for _, p := range ports {
			if err := s.restorePort(ctx, bridge, p, mine); err != nil {
				return err
			}
		}
	}
	for id := range mine {
		if !s.Has(id) {
			s.log.WithField("endpoint", id).Warn("endpoint homed on this host has no OVS port (its container went away while netplugin was down?)")
		}
	}
	return nil
}

// restorePort re-announces the endpoint of mine that port p of bridge
// belongs to, or deletes a port no endpoint claims.
func (s *Service) restorePort(ctx context.Context, bridge string, p ovsdriver.EndpointPort, mine map[string]state.Endpoint) error {
	ep, ok := mine[p.EndpointID]
	var nw state.Network
	if ok {
		nw, ok = s.cfg.Cluster.KnownNetwork(ep.NetID)
	}
	if !ok || BridgeFor(nw) != bridge || p.OFPort == 0 {
		// No endpoint on this host claims the port, or its veth is
		// gone with its container.
		s.log.WithField("port", p.PortName).Infof("removing stale endpoint port (endpoint %q)", p.EndpointID)
		if err := s.cfg.Ports.DeleteEndpoint(ctx, bridge, p.PortName); err != nil {
			s.log.WithError(err).Warnf("remove stale port %s (retried)", p.PortName)
			if s.cfg.Enqueue != nil {
				s.cfg.Enqueue(KindStalePort, bridge+"/"+p.PortName)
			}
		}
		return nil
	}
	le := Local{EP: ep, Port: p, Bridge: bridge, QoS: s.groupQoS(ep)}
	if err := s.cfg.Datapath(bridge).AddLocalEndpoint(ctx, s.cfg.Cluster.EndpointInfo(le, nw)); err != nil {
		return fmt.Errorf("replay local endpoint %s: %w", ep.ID, err)
	}
	s.Put(le)
	return nil
}

// groupQoS is what a port found at restart is taken to have: its group's
// values (AddLocalEndpoint installs the DSCP and meter; the policing is the
// port's since its creation). Re-applying policing to every port at start
// would reconfigure them all while they forward.
func (s *Service) groupQoS(ep state.Endpoint) QoS {
	g, ok := s.cfg.Cluster.Group(ep.EndpointGroupKey)
	if !ok {
		return QoS{Known: true}
	}
	return QoSOf(g)
}

// KindStalePort is the kind of the reconcile keys staleport/<bridge>/<port>:
// a port found at start that no endpoint claims, whose deletion failed,
// retried through the work queue until it is gone.
const KindStalePort = "staleport"

// ReconcileStalePort deletes the stale port of key <bridge>/<port>, unless
// a local endpoint uses a port of that name by now (a new attach may have
// been given the name once the port was gone).
func (s *Service) ReconcileStalePort(ctx context.Context, key string) error {
	bridge, port, ok := strings.Cut(key, "/")
	if !ok || bridge == "" || port == "" {
		return nil // not a key this service makes: nothing to retry
	}
	for _, le := range s.All() {
		if le.Bridge == bridge && le.Port.PortName == port {
			return nil
		}
	}
	if err := s.cfg.Ports.DeleteEndpoint(ctx, bridge, port); err != nil {
		return fmt.Errorf("remove stale port %s of %s: %w", port, bridge, err)
	}
	return nil
}
