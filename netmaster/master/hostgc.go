package master

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

// collectHost deletes every endpoint homed on hostname, giving its
// addresses and counts back as /plugin/deleteEndpoint does, and every
// oper/eps entry of the host. It goes on after a failure and returns all
// failures; n is the number of endpoints deleted.
func (m *master) collectHost(ctx context.Context, hostname string) (n int, err error) {
	if hostname == "" {
		return 0, errors.New("master: host GC without a host name")
	}
	ctx, cancel := context.WithTimeout(ctx, hostGCTimeout)
	defer cancel()
	eps, err := m.allEndpoints(ctx)
	if err != nil {
		return 0, err
	}
	var errs []error
	for _, ep := range eps {
		if ep.HomingHost != hostname {
			continue
		}
		if _, err := m.removeEndpoint(ctx, ep.NetID, ep.ID); err != nil {
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
	return n, errors.Join(errs...)
}

// hostGC lets the agent follower (netmaster/agents) list endpoints and
// collect a departed host.
type hostGC struct{ m *master }

// EndpointHosts walks the endpoints a page at a time and keeps only
// their hosts (docs/scale.md).
func (h hostGC) EndpointHosts(ctx context.Context) ([]string, error) {
	seen := map[string]bool{}
	if _, err := h.m.st.Endpoints.Each(ctx, func(ep state.Endpoint) error {
		seen[ep.HomingHost] = true
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read endpoints: %w", err)
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

func (h hostGC) CollectHost(ctx context.Context, hostname string) (int, error) {
	return h.m.collectHost(ctx, hostname)
}
