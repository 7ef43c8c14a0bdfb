package agents

import (
	"context"
	"fmt"
	"time"

	"github.com/contiv/netplugin/netmaster/server"
	"github.com/contiv/netplugin/utils/ctxutil"
)

// Host garbage collection, the waiting part (docs/daemons.md §4.10.3): the
// follower starts a wait when a host's last netplugin leaves and cancels it
// when one registers again; a host still away after the delay is cleared
// from the ofnet master and handed to Hosts.CollectHost.

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
		if !ctxutil.Sleep(ctx, wait) {
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
	list, err := f.a.svc.GetService(lctx, server.ServiceNetplugin)
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

// scheduleOrphans starts the wait for every host that has endpoints in the
// store but no netplugin registered when the follower starts: a host that
// left before this leadership term began is collected too (the timers of
// the previous leader ended with its term). A host that registers cancels
// its wait as usual.
func (f *agentFollower) scheduleOrphans(ctx context.Context) {
	hosts, err := f.a.hosts.EndpointHosts(ctx)
	if err != nil {
		f.log.WithError(err).Warn("host GC: read endpoints")
		return
	}
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	list, err := f.a.svc.GetService(lctx, server.ServiceNetplugin)
	cancel()
	if err != nil {
		f.log.WithError(err).Warn("host GC: list netplugin services")
		return
	}
	present := map[string]bool{}
	for _, s := range list {
		present[hostKey(s)] = true
	}
	for _, h := range hosts {
		if h == "" || present[h] || f.ports[h] != nil || f.clears[h] != nil {
			continue
		}
		f.log.WithField("host", h).Info("host GC: host with endpoints but no netplugin")
		f.scheduleClear(ctx, h, h, "")
	}
}
