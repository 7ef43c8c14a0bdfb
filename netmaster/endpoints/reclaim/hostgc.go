package reclaim

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/state"
)

// Host garbage collection (docs/daemons.md §4.10.3, leader only per §10
// row 15): once the last netplugin of a host has been gone for the delay,
// the leader withdraws the host's endpoints from the other agents
// (ofnet ClearNode) and deletes them from the store. The agent follower
// (netmaster/agents) starts the wait when the host's last instance leaves
// and cancels it when one registers again; this file holds the deletion.

// hostGCTimeout bounds the store work of one collection.
const hostGCTimeout = 5 * time.Minute

// CollectHost deletes every endpoint homed on hostname, giving its
// addresses and counts back as /plugin/deleteEndpoint does, every
// oper/eps entry of the host, and last its node record: the host leaves
// the cluster, and the other hosts drop their tunnel to it
// (docs/architecture.md, "Headless dataplane"). It goes on after a failure and returns all
// failures; n is the number of endpoints deleted.
func (m *Collector) CollectHost(ctx context.Context, hostname string) (n int, err error) {
	if hostname == "" {
		return 0, errors.New("endpoints: host GC without a host name")
	}
	ctx, cancel := context.WithTimeout(ctx, hostGCTimeout)
	defer cancel()
	eps, err := m.eps.AllEndpoints(ctx)
	if err != nil {
		return 0, err
	}
	var errs []error
	for _, ep := range eps {
		if ep.HomingHost != hostname {
			continue
		}
		if err := m.eps.RemoveEndpoint(ctx, ep.NetID, ep.ID); err != nil {
			if !errors.Is(err, objdb.ErrNotFound) {
				errs = append(errs, fmt.Errorf("delete endpoint %q: %w", ep.ID, err))
			}
			continue
		}
		n++
		if err := m.st.EndpointOper.Clear(ctx, ep.ID); err != nil {
			errs = append(errs, err)
		}
	}
	opers, _, err := m.st.EndpointOper.ReadAll(ctx)
	if err != nil {
		return n, errors.Join(append(errs, fmt.Errorf("read endpoint oper states: %w", err))...)
	}
	for _, op := range opers {
		if op.HomingHost != hostname {
			continue
		}
		if err := m.st.EndpointOper.Clear(ctx, op.ID); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		if err := m.st.Nodes.Clear(ctx, hostname); err != nil && !errors.Is(err, objdb.ErrNotFound) {
			errs = append(errs, fmt.Errorf("delete the node record: %w", err))
		}
	}
	return n, errors.Join(errs...)
}

// EndpointHosts lists, sorted, the distinct homing hosts of the endpoints,
// walking them a page at a time (docs/scale.md), and the hosts of the node
// records; the agent follower (netmaster/agents) uses it to find hosts
// that left endpoints or their membership behind.
func (m *Collector) EndpointHosts(ctx context.Context) ([]string, error) {
	seen := map[string]bool{}
	if _, err := m.st.Endpoints.Each(ctx, func(ep state.Endpoint) error {
		seen[ep.HomingHost] = true
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read endpoints: %w", err)
	}
	nodes, _, err := m.st.Nodes.ReadAll(ctx)
	if err != nil {
		return nil, fmt.Errorf("read node records: %w", err)
	}
	for _, n := range nodes {
		seen[n.ID] = true
	}
	return slices.Sorted(maps.Keys(seen)), nil
}
