package daemon

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/objdb"

	"github.com/contiv/netplugin/utils/ctxutil"
)

// serviceKey identifies one service instance.
func serviceKey(s objdb.ServiceInfo) string { return fmt.Sprintf("%s:%d", s.HostAddr, s.Port) }

// serviceFollower tracks the live instances of a service and reports
// arrivals and departures, re-listing after a store outage so that
// departures missed meanwhile are reported too (docs/daemons.md §5.2; 100 ms pause
// between events as the original).
type serviceFollower struct {
	name  string
	reg   objdb.ServiceRegistry
	add   func(ctx context.Context, s objdb.ServiceInfo)
	del   func(ctx context.Context, s objdb.ServiceInfo)
	log   logrus.FieldLogger
	retry time.Duration
	pause time.Duration

	mu    sync.RWMutex // guards known: the reconcilers read it
	known map[string]objdb.ServiceInfo
}

// has reports whether a live instance of the service runs at host.
func (f *serviceFollower) has(host string) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, s := range f.known {
		if s.HostAddr == host {
			return true
		}
	}
	return false
}

// hosts lists the addresses of the live instances.
func (f *serviceFollower) hosts() []string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]string, 0, len(f.known))
	for _, s := range f.known {
		out = append(out, s.HostAddr)
	}
	return out
}

func (f *serviceFollower) run(ctx context.Context) {
	f.mu.Lock()
	if f.known == nil {
		f.known = map[string]objdb.ServiceInfo{}
	}
	f.mu.Unlock()
	for ctx.Err() == nil {
		if err := f.once(ctx); err != nil && ctx.Err() == nil {
			f.log.WithError(err).Warnf("watch of service %s interrupted; re-listing", f.name)
		}
		if !ctxutil.Sleep(ctx, f.retry) {
			return
		}
	}
}

func (f *serviceFollower) once(ctx context.Context) error {
	live, err := f.reg.GetService(ctx, f.name)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, s := range live {
		seen[serviceKey(s)] = true
		f.arrive(ctx, s)
	}
	f.mu.RLock()
	gone := map[string]objdb.ServiceInfo{}
	for k, s := range f.known {
		if !seen[k] {
			gone[k] = s
		}
	}
	f.mu.RUnlock()
	for k, s := range gone {
		f.leave(ctx, k, s)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := f.reg.WatchService(wctx, f.name)
	if err != nil {
		return err
	}
	for ev := range ch {
		switch ev.Type {
		case objdb.ServiceAdd:
			f.arrive(ctx, ev.Info)
		case objdb.ServiceDel:
			f.leave(ctx, serviceKey(ev.Info), ev.Info)
		case objdb.ServiceError:
			return ev.Err
		}
	}
	return ctx.Err()
}

func (f *serviceFollower) arrive(ctx context.Context, s objdb.ServiceInfo) {
	k := serviceKey(s)
	f.mu.Lock()
	if old, ok := f.known[k]; ok && old == s {
		f.mu.Unlock()
		return
	}
	f.known[k] = s
	f.mu.Unlock()
	f.add(ctx, s)
	ctxutil.Sleep(ctx, f.pause)
}

func (f *serviceFollower) leave(ctx context.Context, k string, s objdb.ServiceInfo) {
	f.mu.Lock()
	if _, ok := f.known[k]; !ok {
		f.mu.Unlock()
		return
	}
	delete(f.known, k)
	f.mu.Unlock()
	f.del(ctx, s)
	ctxutil.Sleep(ctx, f.pause)
}

// keepRegistered registers the instances and re-registers any that the
// store lost (a lease that expired during an outage) until ctx ends. The
// instances are not deregistered on the way out: a restarting netplugin
// comes back within the TTL, so its peers keep their tunnels to it; a host
// that stays down expires with the TTL.
func keepRegistered(ctx context.Context, reg objdb.ServiceRegistry, infos []objdb.ServiceInfo, every time.Duration, log logrus.FieldLogger) {
	register := func(always bool) {
		for _, info := range infos {
			if !always {
				live, err := reg.GetService(ctx, info.ServiceName)
				if err == nil && containsInstance(live, info) {
					continue
				}
			}
			if err := reg.RegisterService(ctx, info); err != nil && ctx.Err() == nil {
				log.WithError(err).Warnf("register service %s at %s", info.ServiceName, serviceKey(info))
			}
		}
	}
	// The first registration always writes, binding the instances to this
	// process's lease (a previous run's lease would expire under them).
	register(true)
	for ctxutil.Sleep(ctx, every) {
		register(false)
	}
}

func containsInstance(live []objdb.ServiceInfo, info objdb.ServiceInfo) bool {
	for _, s := range live {
		if s.HostAddr == info.HostAddr && s.Port == info.Port {
			return true
		}
	}
	return false
}
