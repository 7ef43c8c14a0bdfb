package master

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/contiv/netplugin/netmaster/server"
	"github.com/contiv/netplugin/objdb"
)

// Host garbage collection (docs/daemons.md §4.10.3, leader only per §10
// row 15): once the last netplugin of a host has been gone for the delay,
// the leader withdraws the host's endpoints from the other agents
// (ofnet ClearNode) and deletes them from the store. The agent follower
// (ofnet_agents.go) starts the wait when the host's last instance leaves
// and cancels it when one registers again.

// hostGCTimeout bounds the store work of one collection.
const hostGCTimeout = 5 * time.Minute

// awaitGone waits the delay after host's last netplugin left, re-checking
// every tenth of it whether an instance of host is registered again (the
// watch cancels the wait too; the re-check covers a missed event). It
// reports whether the host is still away at the end; false also when ctx
// ends.
func (f *agentFollower) awaitGone(ctx context.Context, host string) bool {
	step := max(f.delay/10, time.Millisecond)
	deadline := time.Now().Add(f.delay)
	for {
		wait := step
		if left := time.Until(deadline); left > 0 {
			wait = min(step, left)
		}
		if !sleepCtx(ctx, wait) {
			return false
		}
		back, err := f.hostRegistered(ctx, host)
		if err != nil {
			if ctx.Err() != nil {
				return false
			}
			f.log.WithError(err).WithField("host", host).Warn("host GC: check whether the host is back")
			continue // absence not confirmed: check again
		}
		if back {
			f.log.WithField("host", host).Info("host GC: host is back")
			return false
		}
		if !time.Now().Before(deadline) {
			return true
		}
	}
}

// hostRegistered reports whether a netplugin instance of host is listed.
func (f *agentFollower) hostRegistered(ctx context.Context, host string) (bool, error) {
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	list, err := f.m.svc.GetService(lctx, server.ServiceNetplugin)
	if err != nil {
		return false, fmt.Errorf("list %s services: %w", server.ServiceNetplugin, err)
	}
	for _, s := range list {
		if hostKey(s) == host {
			return true, nil
		}
	}
	return false, nil
}

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

// scheduleOrphans starts the wait for every host that has endpoints in the
// store but no netplugin registered when the follower starts: a host that
// left before this leadership term began is collected too (the timers of
// the previous leader ended with its term). A host that registers cancels
// its wait as usual.
func (f *agentFollower) scheduleOrphans(ctx context.Context) {
	eps, err := f.m.allEndpoints(ctx)
	if err != nil {
		f.log.WithError(err).Warn("host GC: read endpoints")
		return
	}
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	list, err := f.m.svc.GetService(lctx, server.ServiceNetplugin)
	cancel()
	if err != nil {
		f.log.WithError(err).Warn("host GC: list netplugin services")
		return
	}
	present := map[string]bool{}
	for _, s := range list {
		present[hostKey(s)] = true
	}
	for _, ep := range eps {
		h := ep.HomingHost
		if h == "" || present[h] || f.ports[h] != nil || f.clears[h] != nil {
			continue
		}
		f.log.WithField("host", h).Info("host GC: host with endpoints but no netplugin")
		f.scheduleClear(ctx, h, h, "")
	}
}
