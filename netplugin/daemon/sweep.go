package daemon

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/contiv/netplugin/netplugin/masterclient"
	"github.com/contiv/netplugin/netplugin/remotesweep"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/state"
)

// Orphaned endpoints (docs/dataplane-scale.md): an endpoint homed on this
// host that has no local port and no attach under way. An attach that
// fails undoes its steps, but netmaster can be unreachable for the undo,
// or can have created the endpoint after the request timed out, and a
// netplugin that crashed mid-attach undoes nothing. The sweep asks
// netmaster to delete such endpoints (their addresses go with them) at
// start and every SweepInterval, on the listings of the remote sweep
// (netplugin/remotesweep, which calls sweepPeriodic).

// orphanLocked reports whether ep is homed here with no local port and no
// attach under way.
func (d *Daemon) orphan(ep state.Endpoint) bool {
	if ep.HomingHost != d.cfg.HostLabel || ep.EndpointID == "" {
		return false // another host's, or a host's own interface
	}
	return !d.eps.Owns(ep.ID)
}

// releaseEndpoint asks netmaster to delete an endpoint of this host that
// no attach owns, reading its record first: a missing record is success,
// and an endpoint another host owns is left alone.
func (d *Daemon) releaseEndpoint(ctx context.Context, epID string) error {
	ep, err := d.st.Endpoints.Read(ctx, epID)
	if errors.Is(err, objdb.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read endpoint %s: %w", epID, err)
	}
	if ep.HomingHost != d.cfg.HostLabel {
		return nil
	}
	return d.deleteInMaster(ctx, ep)
}

// deleteInMaster sends netmaster the deleteEndpoint of ep.
func (d *Daemon) deleteInMaster(ctx context.Context, ep state.Endpoint) error {
	network, tenant, ok := strings.Cut(ep.NetID, ".")
	if nw, known := d.nets.KnownNetwork(ep.NetID); known {
		network, tenant, ok = nw.NetworkName, nw.Tenant, true
	}
	if !ok {
		return fmt.Errorf("endpoint %s: network id %q is not <network>.<tenant>", ep.ID, ep.NetID)
	}
	_, err := d.mc.DeleteEndpoint(ctx, masterclient.DeleteEndpointRequest{TenantName: tenant, NetworkName: network,
		ServiceName: ep.ServiceName, EndpointID: ep.EndpointID})
	if err != nil {
		return fmt.Errorf("delete endpoint %s in netmaster: %w", ep.ID, err)
	}
	return nil
}

// sweepOrphans deletes every orphaned endpoint of this host among all
// (the store's endpoint records); it returns how many it deleted.
func (d *Daemon) sweepOrphans(ctx context.Context, all []state.Endpoint) (int, error) {
	var orphans []state.Endpoint
	for _, ep := range all {
		if d.orphan(ep) {
			orphans = append(orphans, ep)
		}
	}
	var errs []error
	n := 0
	for _, ep := range orphans {
		// An attach of the same endpoint may have begun since the list
		// was taken: it owns the endpoint now.
		if !d.orphan(ep) {
			continue
		}
		if err := d.deleteInMaster(ctx, ep); err != nil {
			errs = append(errs, err)
			continue
		}
		d.log.WithField("endpoint", ep.ID).Info("deleted an endpoint of this host that has no port (failed or interrupted attach)")
		n++
	}
	return n, errors.Join(errs...)
}

// sweepPeriodic is the remote sweep's Periodic: the orphan sweep of the
// store's endpoint records all.
func (d *Daemon) sweepPeriodic(ctx context.Context, all []state.Endpoint) {
	if _, err := d.sweepOrphans(ctx, all); err != nil && ctx.Err() == nil {
		d.log.WithError(err).Warn("sweep of orphaned endpoints incomplete; retrying later")
	}
}

// sweptAgents are the running agents as the remote sweep sees them.
func (d *Daemon) sweptAgents() []remotesweep.Agent {
	var out []remotesweep.Agent
	for _, a := range d.agents() {
		out = append(out, a)
	}
	return out
}
