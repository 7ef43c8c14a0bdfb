package daemon

import (
	"context"
	"fmt"

	"github.com/contiv/netplugin/mgmtfn/k8splugin/netpol"
	"github.com/contiv/netplugin/netplugin/attachsvc"
	"github.com/contiv/netplugin/netplugin/bgprec"
	"github.com/contiv/netplugin/netplugin/follow"
	"github.com/contiv/netplugin/netplugin/netrec"
	"github.com/contiv/netplugin/netplugin/remotesweep"
	"github.com/contiv/netplugin/netplugin/svcrec"
	"github.com/contiv/netplugin/netplugin/vteprec"
	"github.com/contiv/netplugin/state"
)

// The kinds of reconcile keys (netplugin/reconcile).
const (
	kindNetwork  = netrec.KindNetwork // network/<state id>
	kindGroup    = netrec.KindGroup   // group/<state id>
	kindEndpoint = "endpoint"         // endpoint/<state id>: removal of a local endpoint
	kindGlobal   = "global"           // global/global
	kindService  = "service"          // service/<state id>
	kindProvider = "provider"         // provider/<state id>
	kindBgp      = bgprec.KindConfig  // bgp/<host label> and the other kinds of netplugin/bgprec
	kindVtep     = vteprec.Kind       // vtep/<peer VTEP IP>
	// hostaccess/<host label>: contivh0 and host access (netplugin/hostaccess)
	kindHostAccess = "hostaccess"
	// infraroute/<host label>: the host's routes through contivh1
	// (netplugin/infraroute)
	kindInfraRoute = "infraroute"
)

// desired is where the reconcilers read what should be: the followers'
// caches of the store and the live VTEP peers.
type desired struct {
	nets   *follow.Follower[state.Network]
	groups *follow.Follower[state.EndpointGroup]
	eps    *follow.Follower[state.Endpoint]
	glob   *follow.Follower[state.GlobConfig]
	bgp    *follow.Follower[state.Bgp]
	svcs   *follow.Follower[state.ServiceLB]
	provs  *follow.Follower[state.SvcProvider]
	nodes  *follow.Follower[state.Node]
	// peers are the live netplugin.vtep instances; with the endpoints and
	// node records they make the tunnels (netplugin/vteprec).
	peers *follow.Services
}

// applied is what reconcileGlobal applied to the datapath; d.mu guards it.
type applied struct {
	arpMode string
	// glob is the last global configuration reconcileGlobal saw (zero: the
	// one the process started with, Daemon.glob).
	glob state.GlobConfig
}

// newDesired makes the followers of the state the reconcilers converge to;
// each change only enqueues keys.
func (d *Daemon) newDesired() desired {
	r, retry := d.rec, d.cfg.StoreRetryDelay
	d.netpolPeers = netpol.NewPeers()
	w := desired{
		nets:   follow.New("networks", d.st.Networks, enqueueOf[state.Network](d, kindNetwork), d.log, retry),
		groups: follow.New("endpointGroups", d.st.EndpointGroups, enqueueOf[state.EndpointGroup](d, kindGroup), d.log, retry),
		eps: follow.New("endpoints", d.st.Endpoints, follow.Handlers[state.Endpoint]{
			Put: func(ctx context.Context, ep state.Endpoint, prev *state.Endpoint) {
				d.vtep.EndpointPut(ep, prev)
				d.endpointNamesPut(ctx, ep, prev)
				d.netpolPeers.Put(ep.ID, ep.PodNamespace, ep.PodName, ep.IPAddress)
			},
			Del: func(ctx context.Context, ep state.Endpoint) {
				d.vtep.EndpointDel(ep)
				d.remotes.NoteDeleted(ep)
				d.endpointNamesDel(ctx, ep)
				d.netpolPeers.Delete(ep.ID)
			}}, d.log, retry),
		nodes: follow.New("nodes", d.st.Nodes, d.vtep.NodeHandlers(), d.log, retry),
		glob: follow.New("globals", d.st.GlobConfig, follow.Handlers[state.GlobConfig]{
			Put: func(_ context.Context, g state.GlobConfig, _ *state.GlobConfig) { r.Enqueue(kindGlobal, "global") },
			Del: func(context.Context, state.GlobConfig) {}}, d.log, retry),
		bgp:   follow.New("bgp", d.st.Bgp, enqueueOf[state.Bgp](d, kindBgp), d.log, retry),
		svcs:  follow.New("serviceLB", d.st.ServiceLBs, enqueueOf[state.ServiceLB](d, kindService), d.log, retry),
		provs: follow.New("providers", d.st.Providers, enqueueOf[state.SvcProvider](d, kindProvider), d.log, retry),
	}
	return w
}

// enqueueOf are the handlers of a follower whose every change enqueues the
// object's key of kind.
func enqueueOf[T state.Object](d *Daemon, kind string) follow.Handlers[T] {
	return follow.Handlers[T]{
		Put: func(_ context.Context, v T, _ *T) { d.rec.Enqueue(kind, v.StateID()) },
		Del: func(_ context.Context, v T) { d.rec.Enqueue(kind, v.StateID()) },
	}
}

// newReconcilers makes the desired state (the followers' caches), the
// reconcilers of each kind over it, and gives the queue a reconciler per
// kind. The datapaths exist by then; nothing is reconciled before it.
func (d *Daemon) newReconcilers() {
	d.vtep = vteprec.New(vteprec.Config{VtepIP: d.cfg.VtepIP, VxlanPort: d.cfg.VxlanPort, Datapath: d.vx,
		Tunnels: d.drv, Enqueue: d.rec.Enqueue, NewPeer: d.newPeer, Log: d.log})
	d.want = d.newDesired()
	d.remotes = remotesweep.New(remotesweep.Config{HostLabel: d.cfg.HostLabel, Agents: d.sweptAgents,
		Records: d.st.Endpoints, Cached: d.want.eps, Periodic: d.sweepPeriodic, Interval: d.cfg.SweepInterval,
		Grace: d.cfg.RemoteDelGrace, KickGap: d.cfg.SweepKickGap, Log: d.log})
	d.nets = netrec.New(netrec.Config{Networks: d.want.nets, Groups: d.want.groups, Store: d.st.Networks,
		Datapath: func(nw state.Network) netrec.Datapath { return d.agentFor(nw) }, Locals: d.eps, Policing: d.drv,
		Meters: d.cfg.OVSDatapath == "netdev", Log: d.log,
		// Any network's change may change the routes through contivh1.
		Changed: func() { d.rec.Enqueue(kindInfraRoute, d.cfg.HostLabel) }})
	d.svc = svcrec.New(svcrec.Config{Services: d.want.svcs, Providers: d.want.provs,
		Datapaths: d.serviceDatapaths(), Names: d.names, Log: d.log})
	d.bgp = d.newBgp()
	d.registerReconcilers()
}

// serviceDatapaths are the datapaths a service lives in: both bridges.
func (d *Daemon) serviceDatapaths() []svcrec.Datapath { return []svcrec.Datapath{d.vx, d.vl} }

// registerReconcilers gives the queue a reconciler per kind.
func (d *Daemon) registerReconcilers() {
	d.rec.Handle(kindNetwork, d.nets.ReconcileNetwork)
	d.rec.Handle(kindGroup, d.nets.ReconcileGroup)
	d.rec.Handle(kindEndpoint, d.reconcileEndpoint)
	d.rec.Handle(kindGlobal, d.reconcileGlobal)
	d.rec.Handle(kindService, d.svc.ReconcileService)
	d.rec.Handle(kindProvider, d.svc.ReconcileProviders)
	d.rec.Handle(kindVtep, d.vtep.Reconcile)
	d.rec.Handle(kindHostAccess, d.reconcileHostAccess)
	d.rec.Handle(kindInfraRoute, d.reconcileInfraRoutes)
	d.rec.Handle(kindFinishRestart, d.reconcileFinishRestart)
	d.rec.Handle(kindVrfIDs, d.writeVrfIDs)
	d.rec.Handle(kindOFPortPin, d.reconcileOFPortPin)
	d.rec.Handle(attachsvc.KindOper, d.eps.ReconcileOper)
	d.rec.Handle(attachsvc.KindStalePort, d.eps.ReconcileStalePort)
	d.bgp.Register()
	d.rec.Keys = d.allKeys
}

// allKeys is every key the periodic resync puts back: what is desired and
// what is applied (so leftovers are removed). Endpoints: the local ones
// only, the others never need work here.
func (d *Daemon) allKeys() []string {
	var keys []string
	add := func(kind string, names []string) {
		for _, n := range names {
			keys = append(keys, kind+"/"+n)
		}
	}
	if d.want.nets != nil {
		add(kindNetwork, d.want.nets.IDs())
	}
	if d.want.groups != nil {
		add(kindGroup, d.want.groups.IDs())
	}
	if d.want.svcs != nil {
		add(kindService, d.want.svcs.IDs())
	}
	if d.want.provs != nil {
		add(kindProvider, d.want.provs.IDs())
	}
	add(kindVtep, d.vtep.Keys())
	svcs, provs := d.svc.Applied()
	add(kindService, svcs)
	add(kindProvider, provs)
	add(kindNetwork, d.nets.Applied())
	for _, le := range d.eps.All() {
		keys = append(keys, kindEndpoint+"/"+le.EP.ID)
	}
	keys = append(keys, kindGlobal+"/global", kindHostAccess+"/"+d.cfg.HostLabel, kindInfraRoute+"/"+d.cfg.HostLabel)
	return append(keys, d.bgp.Keys()...)
}

// reconcileEndpoint removes a local endpoint that the store no longer
// holds (deleted behind netplugin's back, e.g. by netmaster's cleanup): its
// flows and its OVS port go. An attach or detach under way owns it.
func (d *Daemon) reconcileEndpoint(ctx context.Context, id string) error {
	if _, want := d.want.eps.Get(id); want {
		return nil
	}
	if !d.eps.Has(id) || d.eps.Busy(id) {
		return nil
	}
	return d.removeLocal(ctx, id)
}

func arpModeOf(g state.GlobConfig) string {
	if g.ArpMode == "flood" {
		return "flood"
	}
	return "proxy"
}

// reconcileGlobal follows ARP-mode changes (docs/daemons.md §6.3
// master/config/); a changed forwarding mode or private subnet needs a
// restart and is only reported.
func (d *Daemon) reconcileGlobal(ctx context.Context, _ string) error {
	g, want := d.want.glob.Get("global")
	if !want {
		return nil
	}
	d.mu.Lock()
	prev, mode := d.applied.glob, d.applied.arpMode
	d.mu.Unlock()
	if prev.ID == "" {
		prev = d.glob
	}
	if g.FwdMode != prev.FwdMode || g.PvtSubnet != prev.PvtSubnet {
		d.log.Errorf("cluster forwarding mode or private subnet changed (%s %s → %s %s): restart netplugin to apply",
			prev.FwdMode, prev.PvtSubnet, g.FwdMode, g.PvtSubnet)
	}
	if m := arpModeOf(g); m != mode {
		for _, a := range []datapath{d.vx, d.vl} {
			if err := a.SetArpMode(ctx, m); err != nil {
				return fmt.Errorf("set ARP mode %s: %w", m, err)
			}
		}
		d.mu.Lock()
		d.applied.arpMode = m
		d.mu.Unlock()
	}
	d.mu.Lock()
	d.applied.glob = g
	d.mu.Unlock()
	return nil
}

// reconcileHostAccess runs the host access reconciler (netplugin/hostaccess)
// once the dataplane has made it.
func (d *Daemon) reconcileHostAccess(ctx context.Context, host string) error {
	if d.hostAccess == nil {
		return nil
	}
	return d.hostAccess.Reconcile(ctx, host)
}

// reconcileInfraRoutes runs the infra route reconciler (netplugin/infraroute)
// once the dataplane has made it. Its routes stay when netplugin stops, like
// the port they use.
func (d *Daemon) reconcileInfraRoutes(ctx context.Context, _ string) error {
	if d.infraRoutes == nil {
		return nil
	}
	return d.infraRoutes.Reconcile(ctx)
}

// appliedNetworks is what the infra route reconciler reads: the networks
// in the datapath (none before the network reconciler is made).
func (d *Daemon) appliedNetworks() []state.Network {
	if d.nets == nil {
		return nil
	}
	return d.nets.AppliedNetworks()
}

// cleanupHostAccess removes the host NAT rule this run added, when
// netplugin stops.
func (d *Daemon) cleanupHostAccess() {
	if d.hostAccess != nil {
		d.hostAccess.Cleanup()
	}
	if d.infraRoutes != nil {
		d.infraRoutes.Close() // the routes stay (reconcileInfraRoutes)
	}
}
