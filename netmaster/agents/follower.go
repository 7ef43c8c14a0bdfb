package agents

import (
	"context"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/netmaster/server"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/ofnet/ofmaster"
	"github.com/contiv/netplugin/ofnet/ofrpc"
	"github.com/contiv/netplugin/utils/ctxutil"
)

// ServiceVtep is the service a netplugin registers with its VTEP IP.
const ServiceVtep = "netplugin.vtep"

// Timing of the agent follower (docs/daemons.md §5.2, §9). The pause
// follows a Del only: an Add just starts an AddNode loop, and pausing after
// each one made a new leader reach its last agent only after 100 ms per
// agent (1.6 s for 16 agents; docs/scale.md, "Failover").
const (
	agentEventPause = 100 * time.Millisecond
	addNodeRetryMax = 30 * time.Second
)

// agentFollower turns `netplugin` service events into ofnet master calls:
// Add → AddNode (retried until the agent answers), Del → RemoveNode and,
// once the host has no agent left for the clear delay, the host GC
// (ClearNode here, then the deletion of its endpoints by Hosts).
//
// Agents register with, and originate endpoints from, their VTEP IP, while
// the `netplugin` entries carry the control IP (docs/daemons.md §10 row 10). The
// follower also watches `netplugin.vtep` and maps a host (by its Hostname)
// to its VTEP IP, so a departed host is removed and cleared under the
// identity the master knows it by.
type agentFollower struct {
	a     *Agents
	om    *ofmaster.Master
	log   *logrus.Entry
	delay time.Duration

	// Owned by run's goroutine.
	adders map[string]context.CancelFunc // node "addr:port" → its AddNode loop
	ports  map[string]map[int]bool       // host key → live agent ports
	clears map[string]context.CancelFunc // host key → pending ClearNode
	vteps  map[string]string             // hostname → VTEP IP (last seen)
	wg     sync.WaitGroup
}

func newAgentFollower(a *Agents, om *ofmaster.Master) *agentFollower {
	d := a.cfg.ClearDelay
	if d <= 0 {
		d = DefaultClearDelay
	}
	return &agentFollower{
		a: a, om: om, log: a.log.WithField("component", "ofnet-agents"), delay: d,
		adders: map[string]context.CancelFunc{}, ports: map[string]map[int]bool{},
		clears: map[string]context.CancelFunc{}, vteps: map[string]string{},
	}
}

// run follows both services until ctx ends, re-watching after a failed
// watch, and waits for the AddNode loops and clear timers it started.
func (f *agentFollower) run(ctx context.Context) {
	defer f.wg.Wait()
	var agents, vteps <-chan objdb.ServiceEvent
	orphansChecked := false
	for ctx.Err() == nil {
		var err error
		if agents == nil {
			if agents, err = f.a.svc.WatchService(ctx, server.ServiceNetplugin); err != nil {
				f.log.WithError(err).Warn("watch netplugin services")
			}
		}
		if vteps == nil {
			if vteps, err = f.a.svc.WatchService(ctx, ServiceVtep); err != nil {
				f.log.WithError(err).Warn("watch netplugin.vtep services")
			}
		}
		if agents == nil || vteps == nil {
			if !ctxutil.Sleep(ctx, ofnetRetry) {
				return
			}
			continue
		}
		if !orphansChecked {
			orphansChecked = true
			f.scheduleOrphans(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-vteps:
			if !ok {
				vteps = nil
				continue
			}
			if ev.Type == objdb.ServiceAdd && ev.Info.Hostname != "" {
				f.vteps[ev.Info.Hostname] = ev.Info.HostAddr
			}
		case ev, ok := <-agents:
			if !ok {
				agents = nil
				continue
			}
			f.handle(ctx, ev)
			if ev.Type == objdb.ServiceDel && !ctxutil.Sleep(ctx, agentEventPause) {
				return
			}
		}
	}
}

// hostKey names the host of a service entry.
func hostKey(info objdb.ServiceInfo) string {
	if info.Hostname != "" {
		return info.Hostname
	}
	return info.HostAddr
}

func (f *agentFollower) handle(ctx context.Context, ev objdb.ServiceEvent) {
	info := ev.Info
	node := ofrpc.OfnetNode{HostAddr: info.HostAddr, HostPort: uint16(info.Port)}
	host := hostKey(info)
	switch ev.Type {
	case objdb.ServiceAdd:
		if cancel, ok := f.clears[host]; ok {
			cancel()
			delete(f.clears, host)
		}
		if f.ports[host] == nil {
			f.ports[host] = map[int]bool{}
		}
		f.ports[host][info.Port] = true
		f.startAdd(ctx, node)
	case objdb.ServiceDel:
		if cancel, ok := f.adders[node.Addr()]; ok {
			cancel()
			delete(f.adders, node.Addr())
		}
		vtep := f.vtepOf(ctx, info)
		f.om.RemoveNode(node)
		if vtep != info.HostAddr {
			f.om.RemoveNode(ofrpc.OfnetNode{HostAddr: vtep, HostPort: node.HostPort})
		}
		delete(f.ports[host], info.Port)
		if len(f.ports[host]) == 0 {
			delete(f.ports, host)
			f.scheduleClear(ctx, host, info.Hostname, vtep)
		}
		f.log.WithFields(logrus.Fields{"agent": node.Addr(), "vtep": vtep}).Info("netplugin agent gone")
	default:
		f.log.WithError(ev.Err).Warn("netplugin service watch")
	}
}

// vtepOf is the identity the agents of info's host use: its VTEP IP as last
// seen by the watch (the entry may have expired with the host), else as
// listed now (the two watches are not ordered), else the control IP.
func (f *agentFollower) vtepOf(ctx context.Context, info objdb.ServiceInfo) string {
	if info.Hostname == "" {
		return info.HostAddr
	}
	if v, ok := f.vteps[info.Hostname]; ok {
		return v
	}
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	list, err := f.a.svc.GetService(lctx, ServiceVtep)
	if err != nil {
		f.log.WithError(err).Warn("list netplugin.vtep services")
	}
	for _, s := range list {
		if s.Hostname == info.Hostname {
			f.vteps[s.Hostname] = s.HostAddr
			return s.HostAddr
		}
	}
	return info.HostAddr
}

// startAdd (re)starts the AddNode loop of node: retried with back-off
// while the agent does not answer yet, until it succeeds, the node is
// deleted or ctx ends.
func (f *agentFollower) startAdd(ctx context.Context, node ofrpc.OfnetNode) {
	key := node.Addr()
	if cancel, ok := f.adders[key]; ok {
		cancel()
	}
	actx, cancel := context.WithCancel(ctx)
	f.adders[key] = cancel
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		retry := ctxutil.NewBackoff(ofnetRetry, addNodeRetryMax)
		for {
			err := f.om.AddNode(actx, node)
			if err == nil {
				f.log.WithField("agent", key).Info("ofnet master added to agent")
				return
			}
			if actx.Err() != nil {
				return
			}
			wait := retry.NextBackOff()
			f.log.WithError(err).WithFields(logrus.Fields{"agent": key, "retry": wait}).Warn("add ofnet master to agent")
			if !ctxutil.Sleep(actx, wait) {
				return
			}
		}
	}()
}

// scheduleClear garbage-collects the host after the delay unless it comes
// back first (hostgc.go): its endpoints are withdrawn from the other agents
// (under vtep) and deleted from the store by Hosts (by hostname, when known).
func (f *agentFollower) scheduleClear(ctx context.Context, host, hostname, vtep string) {
	if cancel, ok := f.clears[host]; ok {
		cancel()
	}
	cctx, cancel := context.WithCancel(ctx)
	f.clears[host] = cancel
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		if !f.awaitGone(cctx, host) {
			return
		}
		// A host that left before this term (vtep "") has no endpoints in
		// this term's master.
		if vtep != "" {
			if err := f.om.ClearNode(cctx, vtep); err != nil && cctx.Err() == nil {
				f.log.WithError(err).WithField("host", vtep).Warn("clear endpoints of a departed host")
			}
		}
		if hostname == "" {
			return
		}
		n, err := f.a.hosts.CollectHost(cctx, hostname)
		log := f.log.WithFields(logrus.Fields{"host": hostname, "endpoints": n})
		if err != nil && cctx.Err() == nil {
			log.WithError(err).Warn("host GC: delete endpoints of a departed host")
			return
		}
		log.Info("host GC: endpoints of a departed host deleted")
	}()
}
