package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"

	"github.com/contiv/netplugin/mgmtfn/k8splugin/netpol"
	"github.com/contiv/netplugin/netplugin/attachsvc"
	"github.com/contiv/netplugin/netplugin/bgp"
	"github.com/contiv/netplugin/netplugin/ovsdriver"
	"github.com/contiv/netplugin/ofnet/agent"
	"github.com/contiv/netplugin/state"
)

// The kinds of reconcile keys (netplugin/reconcile).
const (
	kindNetwork  = "network"  // network/<state id>
	kindGroup    = "group"    // group/<state id>
	kindEndpoint = "endpoint" // endpoint/<state id>: removal of a local endpoint
	kindGlobal   = "global"   // global/global
	kindService  = "service"  // service/<state id>
	kindProvider = "provider" // provider/<state id>
	kindBgp      = "bgp"      // bgp/<host label>
	kindVtep     = "vtep"     // vtep/<peer VTEP IP>
	// hostaccess/<host label>: contivh0 and host access (netplugin/hostaccess)
	kindHostAccess = "hostaccess"
	// bgproute/<address>: a local VLAN endpoint's BGP announcement (bgp.go)
	kindBgpRoute = "bgproute"
	// infraroute/<host label>: the host's routes through contivh1
	// (netplugin/infraroute)
	kindInfraRoute = "infraroute"
)

// desired is where the reconcilers read what should be: the followers'
// caches of the store and the live VTEP peers.
type desired struct {
	nets   *follower[state.Network]
	groups *follower[state.EndpointGroup]
	eps    *follower[state.Endpoint]
	glob   *follower[state.GlobConfig]
	bgp    *follower[state.Bgp]
	svcs   *follower[state.ServiceLB]
	provs  *follower[state.SvcProvider]
	nodes  *follower[state.Node]
	// peers are the live netplugin.vtep instances; with the endpoints and
	// node records (peerRefs) they make the tunnels (peers.go).
	peers *serviceFollower
}

// applied is what the reconcilers applied to the datapath; d.mu guards it.
type applied struct {
	nets    map[string]state.Network // in the agent
	infra   map[string]bool          // infra networks whose host port is up
	svcs    map[string]appliedService
	provs   map[string]appliedProviders
	vteps   map[string]bool // peers whose tunnel is in OVS and the agent
	arpMode string
	// glob is the last global configuration reconcileGlobal saw (zero: the
	// one the process started with, Daemon.glob).
	glob state.GlobConfig
}

type appliedService struct {
	spec         agent.ServiceSpec
	tenant, name string
}

type appliedProviders struct {
	name string
	list []string
}

func newApplied() applied {
	return applied{nets: map[string]state.Network{}, infra: map[string]bool{}, svcs: map[string]appliedService{},
		provs: map[string]appliedProviders{}, vteps: map[string]bool{}}
}

// newDesired makes the followers of the state the reconcilers converge to;
// each change only enqueues keys.
func (d *Daemon) newDesired() desired {
	r, retry := d.rec, d.cfg.StoreRetryDelay
	d.netpolPeers = netpol.NewPeers()
	w := desired{
		nets: newFollower("networks", d.st.Networks, handlers[state.Network]{
			put: func(_ context.Context, n state.Network, _ *state.Network) { r.Enqueue(kindNetwork, n.ID) },
			del: func(_ context.Context, n state.Network) { r.Enqueue(kindNetwork, n.ID) }}, d.log, retry),
		groups: newFollower("endpointGroups", d.st.EndpointGroups, handlers[state.EndpointGroup]{
			put: func(_ context.Context, g state.EndpointGroup, _ *state.EndpointGroup) { r.Enqueue(kindGroup, g.ID) },
			del: func(_ context.Context, g state.EndpointGroup) { r.Enqueue(kindGroup, g.ID) }}, d.log, retry),
		eps: newFollower("endpoints", d.st.Endpoints, handlers[state.Endpoint]{
			put: func(ctx context.Context, ep state.Endpoint, prev *state.Endpoint) {
				d.endpointPeerPut(ep, prev)
				d.endpointNamesPut(ctx, ep, prev)
				d.netpolPeers.Put(ep.ID, ep.PodNamespace, ep.PodName, ep.IPAddress)
			},
			del: func(ctx context.Context, ep state.Endpoint) {
				d.endpointPeerDel(ep)
				d.endpointNamesDel(ctx, ep)
				d.netpolPeers.Delete(ep.ID)
			}}, d.log, retry),
		nodes: newFollower("nodes", d.st.Nodes, d.nodeHandlers(), d.log, retry),
		glob: newFollower("globals", d.st.GlobConfig, handlers[state.GlobConfig]{
			put: func(_ context.Context, g state.GlobConfig, _ *state.GlobConfig) { r.Enqueue(kindGlobal, "global") },
			del: func(context.Context, state.GlobConfig) {}}, d.log, retry),
		bgp: newFollower("bgp", d.st.Bgp, handlers[state.Bgp]{
			put: func(_ context.Context, b state.Bgp, _ *state.Bgp) { r.Enqueue(kindBgp, b.StateID()) },
			del: func(_ context.Context, b state.Bgp) { r.Enqueue(kindBgp, b.StateID()) }}, d.log, retry),
		svcs: newFollower("serviceLB", d.st.ServiceLBs, handlers[state.ServiceLB]{
			put: func(_ context.Context, s state.ServiceLB, _ *state.ServiceLB) { r.Enqueue(kindService, s.ID) },
			del: func(_ context.Context, s state.ServiceLB) { r.Enqueue(kindService, s.ID) }}, d.log, retry),
		provs: newFollower("providers", d.st.Providers, handlers[state.SvcProvider]{
			put: func(_ context.Context, p state.SvcProvider, _ *state.SvcProvider) { r.Enqueue(kindProvider, p.ID) },
			del: func(_ context.Context, p state.SvcProvider) { r.Enqueue(kindProvider, p.ID) }}, d.log, retry),
	}
	return w
}

// registerReconcilers gives the queue a reconciler per kind.
func (d *Daemon) registerReconcilers() {
	d.rec.Handle(kindNetwork, d.reconcileNetwork)
	d.rec.Handle(kindGroup, d.reconcileGroup)
	d.rec.Handle(kindEndpoint, d.reconcileEndpoint)
	d.rec.Handle(kindGlobal, d.reconcileGlobal)
	d.rec.Handle(kindService, d.reconcileService)
	d.rec.Handle(kindProvider, d.reconcileProviders)
	d.rec.Handle(kindBgp, d.reconcileBgp)
	d.rec.Handle(kindVtep, d.reconcileVtep)
	d.rec.Handle(kindHostAccess, d.reconcileHostAccess)
	d.rec.Handle(kindBgpRoute, d.reconcileBgpRoute)
	d.rec.Handle(kindInfraRoute, d.reconcileInfraRoutes)
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
		add(kindNetwork, d.want.nets.ids())
	}
	if d.want.groups != nil {
		add(kindGroup, d.want.groups.ids())
	}
	if d.want.svcs != nil {
		add(kindService, d.want.svcs.ids())
	}
	if d.want.provs != nil {
		add(kindProvider, d.want.provs.ids())
	}
	if d.want.peers != nil {
		add(kindVtep, d.want.peers.hosts())
	}
	add(kindVtep, d.peerRefs.ips())
	d.mu.Lock()
	for id := range d.applied.nets {
		keys = append(keys, kindNetwork+"/"+id)
	}
	for id := range d.applied.svcs {
		keys = append(keys, kindService+"/"+id)
	}
	for id := range d.applied.provs {
		keys = append(keys, kindProvider+"/"+id)
	}
	for ip := range d.vteps {
		keys = append(keys, kindVtep+"/"+ip)
	}
	d.mu.Unlock()
	for _, le := range d.eps.All() {
		keys = append(keys, kindEndpoint+"/"+le.EP.ID)
	}
	keys = append(keys, kindGlobal+"/global", kindBgp+"/"+d.cfg.HostLabel, kindHostAccess+"/"+d.cfg.HostLabel,
		kindInfraRoute+"/"+d.cfg.HostLabel)
	return append(keys, d.bgpRouteKeys()...)
}

// sameSegment reports whether two versions of a network use the same
// datapath segment (a network deleted and created again under the same id
// may not).
func sameSegment(a, b state.Network) bool {
	return a.PktTagType == b.PktTagType && a.PktTag == b.PktTag && a.ExtPktTag == b.ExtPktTag &&
		a.Gateway == b.Gateway && a.Tenant == b.Tenant
}

func vniOf(nw state.Network) uint32 {
	if nw.PktTagType == "vxlan" {
		return uint32(nw.ExtPktTag)
	}
	return 0
}

// reconcileNetwork puts a network of the store into its bridge's datapath
// (with the host's port on an infra network) or takes one the store no
// longer has out. Other changes of a network are ignored (docs/daemons.md
// §6.3).
func (d *Daemon) reconcileNetwork(ctx context.Context, id string) error {
	// Any network's change may change the routes through contivh1.
	defer d.rec.Enqueue(kindInfraRoute, d.cfg.HostLabel)
	nw, want := d.want.nets.get(id)
	d.mu.Lock()
	have, had := d.applied.nets[id]
	d.mu.Unlock()
	if had && (!want || !sameSegment(have, nw)) {
		if err := d.removeNetwork(ctx, id, have, want); err != nil {
			return err
		}
		had = false
	}
	if !want {
		d.mu.Lock()
		delete(d.networks, id)
		d.mu.Unlock()
		return nil
	}
	d.mu.Lock()
	d.networks[id] = nw
	d.mu.Unlock()
	if !had {
		if err := d.agentFor(nw).AddNetwork(ctx, uint16(nw.PktTag), vniOf(nw), nw.Gateway, nw.Tenant); err != nil {
			return fmt.Errorf("add network %s to the datapath: %w", id, err)
		}
		d.mu.Lock()
		d.applied.nets[id] = nw
		d.mu.Unlock()
	}
	if nw.NwType != "infra" {
		return nil
	}
	d.mu.Lock()
	up := d.applied.infra[id]
	d.mu.Unlock()
	if up {
		return nil
	}
	if len(nw.NetworkName) > 15 {
		// Cannot work, however often it is tried.
		d.log.Errorf("infra network %s: host port not created: network name %q is longer than an interface name (15)", id, nw.NetworkName)
		return nil
	}
	if err := d.eps.InfraUp(ctx, nw); err != nil {
		return fmt.Errorf("infra network %s: host port: %w", id, err)
	}
	d.mu.Lock()
	d.applied.infra[id] = true
	d.mu.Unlock()
	return nil
}

// removeNetwork takes an applied network out of the datapath (its host
// port first on an infra network). replaced: the store holds another
// version of it, which stays in d.networks.
func (d *Daemon) removeNetwork(ctx context.Context, id string, have state.Network, replaced bool) error {
	d.mu.Lock()
	infraUp := d.applied.infra[id]
	d.mu.Unlock()
	if infraUp {
		if err := d.eps.InfraDown(ctx, have); err != nil {
			return err
		}
		d.mu.Lock()
		delete(d.applied.infra, id)
		d.mu.Unlock()
	}
	if !replaced {
		d.mu.Lock()
		delete(d.networks, id)
		d.mu.Unlock()
	}
	if err := d.agentFor(have).RemoveNetwork(ctx, uint16(have.PktTag), vniOf(have), have.Gateway, have.Tenant); err != nil {
		return fmt.Errorf("remove network %s from the datapath: %w", id, err)
	}
	d.mu.Lock()
	delete(d.applied.nets, id)
	d.mu.Unlock()
	return nil
}

// reconcileGroup keeps the group for new endpoints and brings the policing,
// meter and DSCP of the group's local endpoints to the group's values.
func (d *Daemon) reconcileGroup(ctx context.Context, id string) error {
	g, want := d.want.groups.get(id)
	d.mu.Lock()
	if !want {
		delete(d.groups, id)
		d.mu.Unlock()
		return nil
	}
	d.groups[id] = g
	d.mu.Unlock()
	q := attachsvc.QoSOf(g)
	type todo struct {
		le localEndpoint
		nw state.Network
		ok bool
	}
	var work []todo
	for _, le := range d.eps.All() {
		if le.EP.EndpointGroupKey == id && le.QoS != q {
			nw, ok := attachCluster{d}.KnownNetwork(le.EP.NetID)
			work = append(work, todo{le, nw, ok})
		}
	}
	var errs []error
	for _, w := range work {
		le := w.le
		if !le.QoS.Known || le.QoS.Bandwidth != q.Bandwidth || le.QoS.Burst != q.Burst {
			if err := d.drv.UpdatePolicing(ctx, le.Port.PortName, g.Bandwidth, g.Burst); err != nil {
				errs = append(errs, fmt.Errorf("update policing of %s: %w", le.Port.PortName, err))
				continue
			}
		}
		if !w.ok {
			errs = append(errs, fmt.Errorf("endpoint %s: network %s unknown", le.EP.ID, le.EP.NetID))
			continue
		}
		if err := d.agentFor(w.nw).UpdateLocalEndpoint(ctx, d.endpointInfo(le, w.nw)); err != nil {
			errs = append(errs, fmt.Errorf("update DSCP and meter of %s: %w", le.EP.ID, err))
			continue
		}
		d.eps.SetQoS(le.EP.ID, q)
	}
	return errors.Join(errs...)
}

// reconcileEndpoint removes a local endpoint that the store no longer
// holds (deleted behind netplugin's back, e.g. by netmaster's cleanup): its
// flows and its OVS port go. An attach or detach under way owns it.
func (d *Daemon) reconcileEndpoint(ctx context.Context, id string) error {
	if _, want := d.want.eps.get(id); want {
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
	g, want := d.want.glob.get("global")
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

// reconcileService puts a service with a VIP into both datapaths and the
// name server, or takes it out. A malformed service is refused once (it
// changes nothing and is not retried).
func (d *Daemon) reconcileService(ctx context.Context, id string) error {
	s, want := d.want.svcs.get(id)
	d.mu.Lock()
	have, had := d.applied.svcs[id]
	d.mu.Unlock()
	if want && s.IPAddress != "" {
		spec, err := serviceSpec(s)
		if err != nil {
			d.log.WithError(err).Warn("service ignored")
			return nil
		}
		if !had || !sameServiceSpec(have.spec, spec) {
			for _, a := range d.serviceAgents() {
				if err := a.AddSvcSpec(ctx, id, spec); err != nil {
					return fmt.Errorf("add service %s to the datapath: %w", id, err)
				}
			}
			d.mu.Lock()
			d.applied.svcs[id] = appliedService{spec: spec, tenant: s.Tenant, name: s.ServiceName}
			d.mu.Unlock()
		}
		d.names.SetService(s.Tenant, s.ServiceName, s.IPAddress)
		return nil
	}
	if !had {
		return nil
	}
	for _, a := range d.serviceAgents() {
		if err := a.DelSvcSpec(ctx, id); err != nil {
			return fmt.Errorf("remove service %s from the datapath: %w", id, err)
		}
	}
	d.mu.Lock()
	delete(d.applied.svcs, id)
	d.mu.Unlock()
	d.names.SetService(have.tenant, have.name, "")
	return nil
}

func sameServiceSpec(a, b agent.ServiceSpec) bool {
	return a.Vrf == b.Vrf && a.IpAddress == b.IpAddress && slices.Equal(a.Ports, b.Ports)
}

// reconcileProviders gives both datapaths a service's provider list; a
// deleted list empties it.
func (d *Daemon) reconcileProviders(ctx context.Context, id string) error {
	p, want := d.want.provs.get(id)
	d.mu.Lock()
	have, had := d.applied.provs[id]
	d.mu.Unlock()
	if !want {
		if !had {
			return nil
		}
		for _, a := range d.serviceAgents() {
			if err := a.SvcProviderUpdate(ctx, have.name, nil); err != nil {
				return fmt.Errorf("empty the providers of service %s: %w", have.name, err)
			}
		}
		d.mu.Lock()
		delete(d.applied.provs, id)
		d.mu.Unlock()
		return nil
	}
	name := p.ServiceName
	if name == "" {
		name = p.ID
	}
	if had && have.name == name && slices.Equal(have.list, p.Providers) {
		return nil
	}
	for _, a := range d.serviceAgents() {
		if err := a.SvcProviderUpdate(ctx, name, p.Providers); err != nil {
			return fmt.Errorf("update the providers of service %s: %w", name, err)
		}
	}
	d.mu.Lock()
	d.applied.provs[id] = appliedProviders{name: name, list: slices.Clone(p.Providers)}
	d.mu.Unlock()
	return nil
}

// reconcileBgp runs the BGP speaker this host's state/bgp entry configures
// (docs/dataplane.md §3.4), restarting it when the entry changes and
// stopping it when it goes. A configuration that cannot work is reported
// and not retried.
func (d *Daemon) reconcileBgp(ctx context.Context, host string) error {
	if host != d.cfg.HostLabel {
		return nil
	}
	b, want := d.want.bgp.get(host)
	if !want {
		d.bgp.mu.Lock()
		defer d.bgp.mu.Unlock()
		if d.bgp.sp != nil {
			d.stopBgpLocked(ctx)
			d.log.Warn("BGP configuration removed: " + bgpNotConfigured)
		}
		d.bgp.problem = ""
		return nil
	}
	if !d.vlanRouting() {
		d.log.WithField("host", b.Hostname).Warn("BGP configured for this host, but the VLAN bridge does not route (needs forwarding mode routing and VLAN uplinks): ignored")
		return nil
	}
	cfg, err := bgp.ParseConfig(b)
	d.bgp.mu.Lock()
	defer d.bgp.mu.Unlock()
	if err != nil {
		d.log.WithError(err).Error("BGP configuration refused")
		d.bgp.problem = err.Error()
		return nil
	}
	if d.bgp.sp != nil && d.bgp.cfg == cfg {
		return nil
	}
	d.stopBgpLocked(ctx)
	if err := d.startBgpLocked(ctx, cfg); err != nil {
		d.bgp.problem = err.Error()
		return fmt.Errorf("start BGP: %w", err)
	}
	d.bgp.problem = ""
	return nil
}

// reconcileVtep keeps a VXLAN tunnel, in OVS and in the datapath, to every
// peer (docs/daemons.md §5.2) that is a cluster member (peers.go: live, or
// with endpoints or a node record in the store), and removes the tunnels
// of peers that left the cluster.
func (d *Daemon) reconcileVtep(ctx context.Context, ip string) error {
	if ip == d.cfg.VtepIP {
		return nil
	}
	want := d.wantPeer(ip)
	d.mu.Lock()
	ofport, inOVS := d.vteps[ip]
	done := d.applied.vteps[ip]
	d.mu.Unlock()
	if !want {
		if !inOVS {
			return nil
		}
		if done || ofport != 0 {
			if err := d.vx.RemoveVtepPort(ctx, ofport, net.ParseIP(ip)); err != nil {
				return fmt.Errorf("remove VTEP %s from the datapath: %w", ip, err)
			}
		}
		d.mu.Lock()
		delete(d.applied.vteps, ip)
		d.mu.Unlock()
		if err := d.drv.DeleteVTEP(ctx, ovsdriver.VxlanBridge, ip); err != nil {
			return fmt.Errorf("delete VTEP to %s: %w", ip, err)
		}
		d.mu.Lock()
		delete(d.vteps, ip)
		d.mu.Unlock()
		return nil
	}
	if done {
		return nil
	}
	ofport, err := d.drv.EnsureVTEP(ctx, ovsdriver.VxlanBridge, ip, d.cfg.VxlanPort)
	if err != nil {
		return fmt.Errorf("create VTEP to %s: %w", ip, err)
	}
	d.mu.Lock()
	d.vteps[ip] = ofport
	checked := d.pmtuChecked[ip]
	d.pmtuChecked[ip] = true
	d.mu.Unlock()
	if !checked {
		select {
		case d.pmtuPeers <- ip:
		default:
			d.log.WithField("vtep", ip).Debug("path MTU check skipped: queue full")
		}
	}
	if err := d.vx.AddVtepPort(ctx, ofport, net.ParseIP(ip)); err != nil {
		return fmt.Errorf("add VTEP %s to the datapath: %w", ip, err)
	}
	d.mu.Lock()
	d.applied.vteps[ip] = true
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

// appliedNetworks is what the infra route reconciler reads.
func (d *Daemon) appliedNetworks() []state.Network {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]state.Network, 0, len(d.applied.nets))
	for _, nw := range d.applied.nets {
		out = append(out, nw)
	}
	return out
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
