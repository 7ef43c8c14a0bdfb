package attachsvc

import (
	"context"
	"fmt"

	"github.com/contiv/netplugin/state"
)

// KindOper is the kind of the reconcile keys endpointoper/<endpoint id>: a
// local endpoint's oper state record (oper/eps/<id>) whose write or clear
// failed, retried through the work queue until it is in step.
const KindOper = "endpointoper"

// operOf is the oper state record of a local endpoint.
func operOf(le Local) state.EndpointOper {
	ep := le.EP
	return state.EndpointOper{Common: state.Common{ID: ep.ID}, NetID: ep.NetID, EndpointID: ep.EndpointID,
		ServiceName: ep.ServiceName, ContUUID: ep.EndpointID, IPAddress: ep.IPAddress, IPv6Address: ep.IPv6Address,
		MacAddress: ep.MacAddress, HomingHost: ep.HomingHost, IntfName: le.Port.IntfName, PortName: le.Port.PortName,
		VtepIP: ep.VtepIP}
}

// writeOper records the oper state of le.
func (s *Service) writeOper(ctx context.Context, le Local) error {
	if _, err := s.cfg.Store.EndpointOper.Write(ctx, operOf(le)); err != nil {
		return fmt.Errorf("record oper state of %s: %w", le.EP.ID, err)
	}
	return nil
}

// retryOper has the oper state of endpoint id reconciled by the queue.
func (s *Service) retryOper(id string) {
	if s.cfg.Enqueue != nil {
		s.cfg.Enqueue(KindOper, id)
	}
}

// ReconcileOper brings endpoint id's oper state record in step (key
// endpointoper/<id>): written while the endpoint is local, cleared once it
// is not. While an attach or detach of it is under way the key is tried
// again later: that attach or detach writes or clears it.
func (s *Service) ReconcileOper(ctx context.Context, id string) error {
	if s.Busy(id) {
		return fmt.Errorf("oper state of %s: an attach or detach is under way", id)
	}
	if le, ok := s.Get(id); ok {
		return s.writeOper(ctx, le)
	}
	if err := s.cfg.Store.EndpointOper.Clear(ctx, id); err != nil {
		return fmt.Errorf("clear oper state of %s: %w", id, err)
	}
	return nil
}
