package follow

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/objdb"

	"github.com/contiv/netplugin/utils/ctxutil"
)

// ServiceKey identifies one service instance.
func ServiceKey(s objdb.ServiceInfo) string { return fmt.Sprintf("%s:%d", s.HostAddr, s.Port) }

// Services tracks the live instances of a service and reports
// arrivals and departures, re-listing after a store outage so that
// departures missed meanwhile are reported too (docs/daemons.md §5.2; 100 ms pause
// between events as the original).
type Services struct {
	Name  string
	Reg   objdb.ServiceRegistry
	Add   func(ctx context.Context, s objdb.ServiceInfo)
	Del   func(ctx context.Context, s objdb.ServiceInfo)
	Log   logrus.FieldLogger
	Retry time.Duration
	Pause time.Duration
	// Known seeds the live instances by ServiceKey (nil: none); only the
	// follower changes it after Run starts.
	Known map[string]objdb.ServiceInfo

	mu sync.RWMutex // guards Known: the reconcilers read it
}

// Has reports whether a live instance of the service runs at host.
func (f *Services) Has(host string) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, s := range f.Known {
		if s.HostAddr == host {
			return true
		}
	}
	return false
}

// Hosts lists the addresses of the live instances.
func (f *Services) Hosts() []string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]string, 0, len(f.Known))
	for _, s := range f.Known {
		out = append(out, s.HostAddr)
	}
	return out
}

// Set records an instance as live (or gone) without calling the handlers
// (tests, which stand in for the registry).
func (f *Services) Set(s objdb.ServiceInfo, live bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.Known == nil {
		f.Known = map[string]objdb.ServiceInfo{}
	}
	if live {
		f.Known[ServiceKey(s)] = s
	} else {
		delete(f.Known, ServiceKey(s))
	}
}

// Run follows the service until ctx ends.
func (f *Services) Run(ctx context.Context) {
	f.mu.Lock()
	if f.Known == nil {
		f.Known = map[string]objdb.ServiceInfo{}
	}
	f.mu.Unlock()
	for ctx.Err() == nil {
		if err := f.once(ctx); err != nil && ctx.Err() == nil {
			f.Log.WithError(err).Warnf("watch of service %s interrupted; re-listing", f.Name)
		}
		if !ctxutil.Sleep(ctx, f.Retry) {
			return
		}
	}
}

func (f *Services) once(ctx context.Context) error {
	live, err := f.Reg.GetService(ctx, f.Name)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, s := range live {
		seen[ServiceKey(s)] = true
		f.arrive(ctx, s)
	}
	f.mu.RLock()
	gone := map[string]objdb.ServiceInfo{}
	for k, s := range f.Known {
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
	ch, err := f.Reg.WatchService(wctx, f.Name)
	if err != nil {
		return err
	}
	for ev := range ch {
		switch ev.Type {
		case objdb.ServiceAdd:
			f.arrive(ctx, ev.Info)
		case objdb.ServiceDel:
			f.leave(ctx, ServiceKey(ev.Info), ev.Info)
		case objdb.ServiceError:
			return ev.Err
		}
	}
	return ctx.Err()
}

func (f *Services) arrive(ctx context.Context, s objdb.ServiceInfo) {
	k := ServiceKey(s)
	f.mu.Lock()
	if old, ok := f.Known[k]; ok && old == s {
		f.mu.Unlock()
		return
	}
	f.Known[k] = s
	f.mu.Unlock()
	f.Add(ctx, s)
	ctxutil.Sleep(ctx, f.Pause)
}

func (f *Services) leave(ctx context.Context, k string, s objdb.ServiceInfo) {
	f.mu.Lock()
	if _, ok := f.Known[k]; !ok {
		f.mu.Unlock()
		return
	}
	delete(f.Known, k)
	f.mu.Unlock()
	f.Del(ctx, s)
	ctxutil.Sleep(ctx, f.Pause)
}

// KeepRegistered registers the instances and re-registers any that the
// store lost (a lease that expired during an outage) until ctx ends. The
// instances are not deregistered on the way out: a restarting netplugin
// comes back within the TTL, so its peers keep their tunnels to it; a host
// that stays down expires with the TTL.
func KeepRegistered(ctx context.Context, reg objdb.ServiceRegistry, infos []objdb.ServiceInfo, every time.Duration, log logrus.FieldLogger) {
	register := func(always bool) {
		for _, info := range infos {
			if !always {
				live, err := reg.GetService(ctx, info.ServiceName)
				if err == nil && ContainsInstance(live, info) {
					continue
				}
			}
			if err := reg.RegisterService(ctx, info); err != nil && ctx.Err() == nil {
				log.WithError(err).Warnf("register service %s at %s", info.ServiceName, ServiceKey(info))
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

// ContainsInstance reports whether live holds info's address and port.
func ContainsInstance(live []objdb.ServiceInfo, info objdb.ServiceInfo) bool {
	for _, s := range live {
		if s.HostAddr == info.HostAddr && s.Port == info.Port {
			return true
		}
	}
	return false
}
