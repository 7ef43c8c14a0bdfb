package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/contiv/netplugin/netplugin/bgprec"
	"github.com/contiv/netplugin/netplugin/follow"
	"github.com/contiv/netplugin/netplugin/netpolrec"
	"github.com/contiv/netplugin/netplugin/netrec"
	"github.com/contiv/netplugin/netplugin/vteprec"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/api/attach"
	"github.com/contiv/netplugin/mgmtfn/k8splugin/netpol"
	"github.com/contiv/netplugin/netplugin/attachsvc"
	"github.com/contiv/netplugin/netplugin/hostaccess"
	"github.com/contiv/netplugin/netplugin/infraroute"
	"github.com/contiv/netplugin/netplugin/masterclient"
	"github.com/contiv/netplugin/netplugin/nameserver"
	"github.com/contiv/netplugin/netplugin/ovsdriver"
	"github.com/contiv/netplugin/netplugin/reconcile"
	"github.com/contiv/netplugin/netplugin/remotesweep"
	"github.com/contiv/netplugin/netplugin/svcrec"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/dial"
	"github.com/contiv/netplugin/objdb/objdbmetrics"
	"github.com/contiv/netplugin/ofnet/agent"
	"github.com/contiv/netplugin/ofnet/ofrpc"
	"github.com/contiv/netplugin/state"

	"github.com/contiv/netplugin/utils/ctxutil"
	"github.com/contiv/netplugin/utils/daemonflags"
	"github.com/contiv/netplugin/utils/multilisten"
)

// Daemon is one running netplugin.
type Daemon struct {
	cfg   Config
	log   logrus.FieldLogger
	store objdb.Store
	st    *state.Store
	drv   switchDriver
	vx    datapath // contivVxlanBridge
	vl    datapath // contivVlanBridge
	mc    *masterclient.Client
	// glob is the global configuration the process started with (set before
	// anything else runs, never written after): the forwarding mode and private
	// subnet only change with a restart, so the inspect handlers and the
	// reconcilers read it without a lock; reconcileGlobal follows later
	// changes in applied.glob.
	glob  state.GlobConfig
	names *nameserver.Server // the embedded DNS server (docs/daemons.md §6.8)
	// hostAccess converges contivh0 and host access (key hostaccess/<host>);
	// set by startDataplane before the queue is served.
	hostAccess *hostaccess.Reconciler
	// infraRoutes converges the routes through contivh1 (key
	// infraroute/<host>); set by startDataplane before the queue is served.
	infraRoutes *infraroute.Reconciler
	// netpol enforces Kubernetes NetworkPolicy (nil: no API server); set
	// before the CNI server starts, never after.
	netpol *netpolrec.Enforcer
	// netpolPeers: the pods of the endpoint records; set by newDesired.
	netpolPeers *netpol.Peers

	// remotes removes the remote endpoints the store no longer holds, and
	// runs the orphan sweep on its listings (netplugin/remotesweep); set by
	// newReconcilers.
	remotes *remotesweep.Sweeper

	// eps owns the local endpoints and the attaches under way (its own
	// lock); the others read copies.
	eps     *attachsvc.Service
	uplinks []ovsdriver.UplinkMember

	mastersSeen chan struct{} // closed when the first netmaster.rpc instance was added
	pmtuPeers   chan string   // new VTEP peers for checkPathMTU
	seenOnce    sync.Once

	// rec is the work queue of the reconcilers (netplugin/reconcile); want is
	// the desired state they read (the followers' caches). The reconcilers
	// (set by newReconcilers, each with its applied state and its own lock):
	// nets the networks and groups (with those the attach path sees), svc
	// the services and providers, vtep the tunnels to the peers, bgp BGP.
	rec  *reconcile.Queue
	want desired
	nets *netrec.Reconciler
	svc  *svcrec.Reconciler
	vtep *vteprec.Reconciler
	bgp  *bgprec.Reconciler
	// applied is what the daemon's own reconcilers (global) applied; mu
	// guards it.
	mu      sync.Mutex
	applied applied
	// restart is the applied state of finishrestart/ and vrfids/ (under mu;
	// restartstate.go).
	restart restartState

	met *metrics // nil when metrics are off
	// rpcPool is the agents' TLS client pool towards the masters (nil:
	// each agent has its own plain one).
	rpcPool *ofrpc.Pool
}

// registerer is cfg.Metrics as a Registerer, nil when metrics are off.
func (c Config) registerer() prometheus.Registerer {
	if c.Metrics == nil {
		return nil
	}
	return c.Metrics
}

// Run starts netplugin and serves until ctx ends (docs/daemons.md §6.1). It returns an
// error only for start-up failures; once running, store outages are ridden
// out.
func Run(ctx context.Context, cfg Config, log *logrus.Entry) error {
	cfg.setDefaults()
	d := &Daemon{cfg: cfg, log: log,
		mastersSeen: make(chan struct{}), pmtuPeers: make(chan string, 64), names: nameserver.New()}
	d.met = newMetrics(cfg.registerer(), d)
	d.rec = reconcile.New(log, cfg.ReconcileBaseDelay, cfg.ReconcileMaxDelay)
	d.rec.Resync, d.rec.Failed = cfg.ResyncInterval, d.met.reconcileFailed
	defer d.rec.Shutdown()
	return d.run(ctx)
}

func (d *Daemon) run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if d.cfg.RPCServerTLS == nil && !d.cfg.InsecureRPC {
		return errors.New("the agent RPC needs mutual TLS (RPCServerTLS) unless InsecureRPC is set")
	}
	if err := d.openStore(ctx); err != nil {
		return err
	}
	defer d.store.Close()
	if err := d.waitGlobalConfig(ctx); err != nil {
		return err
	}
	drv, err := ovsdriver.New(ctx, ovsdriver.Config{OVSDB: d.cfg.OVSDBSocket, DatapathType: d.cfg.OVSDatapath,
		HostLabel: d.cfg.HostLabel, Store: d.st, Logger: d.log})
	if err != nil {
		return fmt.Errorf("open OVS: %w", err)
	}
	d.drv = drv
	defer d.drv.Close()
	d.eps = d.newAttachService()

	if d.cfg.InsecureRPC {
		d.log.Warn(daemonflags.InsecureRPCWarning)
	}
	if d.cfg.RPCClientTLS != nil {
		d.rpcPool = ofrpc.NewPool(ofrpc.WithTLS(d.cfg.RPCClientTLS))
		defer d.rpcPool.Close()
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	vtepInfo, vtepEarly := d.takeOverVtep(ctx, &wg)
	if err := d.startDataplane(ctx, &wg); err != nil {
		return err
	}
	defer d.cleanupHostAccess()
	if err := d.replayEndpoints(ctx, &wg); err != nil {
		return err
	}
	defer d.stopBgp()
	if err := d.replayServices(ctx); err != nil {
		return err
	}
	errc := make(chan error, 4)
	if err := d.startDockerSync(ctx, &wg, errc); err != nil {
		return err
	}
	d.register(ctx, &wg, vtepInfo, vtepEarly)
	d.startFollowers(ctx, &wg)
	if err := d.startServers(ctx, &wg, errc); err != nil {
		return err
	}
	d.log.WithFields(logrus.Fields{"host": d.cfg.HostLabel, "vtep": d.cfg.VtepIP, "fwdmode": d.glob.FwdMode}).Info("netplugin running")
	select {
	case <-ctx.Done():
		return nil
	case err := <-errc:
		return err
	}
}

// openStore opens the cluster store and the netmaster client on it.
func (d *Daemon) openStore(ctx context.Context) error {
	raw, err := dial.Open(ctx, dial.Config{EtcdEndpoints: d.cfg.Common.EtcdEndpoints,
		ConsulEndpoints: d.cfg.Common.ConsulEndpoints, Auth: d.cfg.Common.StoreAuth, Logger: logrus.NewEntry(logrus.StandardLogger())})
	if err != nil {
		return fmt.Errorf("open the cluster store: %w", err)
	}
	d.store = objdbmetrics.Wrap(raw, d.cfg.registerer())
	d.st = state.New(d.store)
	var mcOpts []masterclient.Option
	if d.cfg.MasterTLS != nil {
		mcOpts = append(mcOpts, masterclient.WithTLS(d.cfg.MasterTLS))
	}
	if d.cfg.MasterToken != "" {
		mcOpts = append(mcOpts, masterclient.WithToken(d.cfg.MasterToken))
	}
	d.mc = masterclient.New(d.store, mcOpts...)
	return nil
}

// vtepService is this host's netplugin.vtep registration.
func (d *Daemon) vtepService() objdb.ServiceInfo {
	return objdb.ServiceInfo{ServiceName: "netplugin.vtep", Role: "netplugin", Version: d.cfg.Version,
		TTL: int(d.cfg.ServiceTTL / time.Second), HostAddr: d.cfg.VtepIP, Port: d.cfg.VxlanPort, Hostname: d.cfg.HostLabel}
}

// takeOverVtep: a restart takes over the previous run's VTEP entry before
// the replay (compat NP19): peers delete their tunnel to this host, and the
// flows of its endpoints, when the entry's lease expires, and the replay on
// a host full of endpoints can outlast the previous process's 10 s lease. A
// first start still registers it after the replay (it tells that the host
// is ready); early reports which.
func (d *Daemon) takeOverVtep(ctx context.Context, wg *sync.WaitGroup) (info objdb.ServiceInfo, early bool) {
	info = d.vtepService()
	live, err := d.store.GetService(ctx, info.ServiceName)
	early = err == nil && follow.ContainsInstance(live, info)
	if early {
		d.log.Info("taking over the previous run's netplugin.vtep registration before the replay")
		goRun(ctx, wg, func(ctx context.Context) {
			follow.KeepRegistered(ctx, d.store, []objdb.ServiceInfo{info}, d.cfg.ServiceTTL/2, d.log)
		})
	}
	return info, early
}

// replayEndpoints replays networks, groups, endpoints and the global
// configuration (the order and why: replay.go), then reads the node
// records and the BGP configuration, and drains the queue.
func (d *Daemon) replayEndpoints(ctx context.Context, wg *sync.WaitGroup) error {
	d.newReconcilers()
	nets, groups, eps, glob := d.want.nets, d.want.groups, d.want.eps, d.want.glob
	nets.Resyncs, groups.Resyncs = d.met.resyncCounter(nets.Name()), d.met.resyncCounter(groups.Name())
	eps.Resyncs, glob.Resyncs = d.met.resyncCounter(eps.Name()), d.met.resyncCounter(glob.Name())
	if err := d.replay(ctx, nets, groups, eps, glob); err != nil {
		return err
	}
	// Cluster membership: this host's node record, then everyone's, before
	// the peers follower decides which tunnels stay (netplugin/vteprec).
	goRun(ctx, wg, d.keepNodeRecord)
	if err := d.want.nodes.Sync(ctx); err != nil {
		d.log.WithError(err).Warn("read the node records")
	}
	if err := d.want.bgp.Sync(ctx); err != nil {
		d.log.WithError(err).Warn("read the BGP configuration")
	}
	d.rec.Drain(ctx)
	return nil
}

// replayServices replays services and their providers (docs/services.md)
// and drains the queue.
func (d *Daemon) replayServices(ctx context.Context) error {
	if err := d.want.svcs.Sync(ctx); err != nil {
		return fmt.Errorf("replay services: %w", err)
	}
	if err := d.want.provs.Sync(ctx); err != nil {
		return fmt.Errorf("replay service providers: %w", err)
	}
	d.rec.Drain(ctx)
	return nil
}

// startDockerSync serves the Docker plugin in docker and swarm modes and
// follows the docker network mappings on a standalone engine.
func (d *Daemon) startDockerSync(ctx context.Context, wg *sync.WaitGroup, errc chan<- error) error {
	if !d.cfg.dockerMode() {
		return nil
	}
	docknets, err := d.startDocker(ctx, wg, errc)
	if err != nil || docknets == nil {
		return err
	}
	if err := docknets.Sync(ctx); err != nil {
		return fmt.Errorf("read docker network mappings: %w", err)
	}
	goRun(ctx, wg, docknets.Run)
	return nil
}

// register keeps this host's netplugin services (and the VTEP entry, unless
// takeOverVtep did) registered.
func (d *Daemon) register(ctx context.Context, wg *sync.WaitGroup, vtepInfo objdb.ServiceInfo, vtepEarly bool) {
	infos := []objdb.ServiceInfo{
		{ServiceName: "netplugin", Role: "netplugin", Version: d.cfg.Version, TTL: int(d.cfg.ServiceTTL / time.Second), HostAddr: d.cfg.CtrlIP, Port: ofrpc.VxlanAgentPort, Hostname: d.cfg.HostLabel},
		{ServiceName: "netplugin", Role: "netplugin", Version: d.cfg.Version, TTL: int(d.cfg.ServiceTTL / time.Second), HostAddr: d.cfg.CtrlIP, Port: ofrpc.VlanAgentPort, Hostname: d.cfg.HostLabel},
	}
	if !vtepEarly {
		infos = append(infos, vtepInfo)
	}
	goRun(ctx, wg, func(ctx context.Context) {
		follow.KeepRegistered(ctx, d.store, infos, d.cfg.ServiceTTL/2, d.log)
	})
}

// startFollowers serves the queue and starts the store and service
// followers, which only enqueue reconcile keys, and the background loops.
func (d *Daemon) startFollowers(ctx context.Context, wg *sync.WaitGroup) {
	masters := &follow.Services{Name: "netmaster.rpc", Reg: d.store, Add: d.masterAdd, Del: d.masterDel,
		Log: d.log, Retry: d.cfg.StoreRetryDelay, Pause: 100 * time.Millisecond}
	peers := &follow.Services{Name: "netplugin.vtep", Reg: d.store, Add: d.vtepEvent, Del: d.vtepEvent,
		Log: d.log, Retry: d.cfg.StoreRetryDelay, Pause: 100 * time.Millisecond, Known: d.existingPeers()}
	d.want.peers = peers
	d.vtep.SetLive(peers)
	w := d.want
	goRun(ctx, wg, func(ctx context.Context) { d.rec.Run(ctx, reconcile.Workers) })
	goRun(ctx, wg, func(ctx context.Context) { d.checkPathMTU(ctx, d.pmtuPeers) })
	for _, run := range []func(context.Context){masters.Run, peers.Run, w.nodes.Run, w.nets.Run, w.groups.Run,
		w.eps.Run, w.glob.Run, w.bgp.Run, w.svcs.Run, w.provs.Run, d.finishRestart, d.remotes.Run} {
		goRun(ctx, wg, run)
	}
}

// startServers serves the inspect API, the attach API, and the CNI and
// Mesos front ends.
func (d *Daemon) startServers(ctx context.Context, wg *sync.WaitGroup, errc chan<- error) error {
	goRun(ctx, wg, func(ctx context.Context) {
		if err := d.serveInspect(ctx); err != nil {
			errc <- fmt.Errorf("inspect server: %w", err)
		}
	})
	goRun(ctx, wg, func(ctx context.Context) {
		if err := attach.Serve(ctx, d.cfg.AttachSocket, d, d.log); err != nil {
			errc <- fmt.Errorf("attach server: %w", err)
		}
	})
	if err := d.startCNI(ctx, wg, errc); err != nil {
		return err
	}
	return d.startMesos(ctx, wg, errc)
}

// goRun starts fn on its own goroutine, tracked by wg.
func goRun(ctx context.Context, wg *sync.WaitGroup, fn func(context.Context)) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		fn(ctx)
	}()
}

// waitGlobalConfig polls master/config/global until netmaster has written
// the forwarding mode and private subnet (docs/daemons.md §6.1 step 3), and refuses a
// --fwdmode that differs from the cluster's.
func (d *Daemon) waitGlobalConfig(ctx context.Context) error {
	logged := false
	for {
		g, err := d.st.GlobConfig.Read(ctx, "global")
		if err == nil && g.FwdMode != "" && g.PvtSubnet != "" {
			if g.FwdMode != d.cfg.Common.FwdMode {
				return fmt.Errorf("--fwdmode %s differs from the cluster's forwarding mode %s", d.cfg.Common.FwdMode, g.FwdMode)
			}
			d.glob = g
			return nil
		}
		if !logged {
			d.log.Info("waiting for netmaster's global configuration (master/config/global)")
			logged = true
		}
		if err != nil && !errors.Is(err, objdb.ErrNotFound) {
			d.log.WithError(err).Debug("read global configuration")
		}
		if !ctxutil.Sleep(ctx, d.cfg.GlobalPoll) {
			return ctx.Err()
		}
	}
}

// startDataplane creates both bridges and starts their ofnet agents (spec
// docs/dataplane.md §1.7), then attaches the uplinks and the host port.
func (d *Daemon) startDataplane(ctx context.Context, wg *sync.WaitGroup) error {
	vxDatapath, vlDatapath := "vxlan", "vlan"
	if d.glob.FwdMode == "routing" {
		vxDatapath = "vrouter"
		if d.vlanRouting() {
			vlDatapath = agent.DatapathVlrouter
			d.log.Warn(bgprec.NotConfigured + " until BGP is configured")
		}
	}
	vx, err := d.startAgent(ctx, wg, ovsdriver.VxlanBridge, ovsdriver.VxlanControllerPort, ofrpc.VxlanAgentPort, vxDatapath, "",
		map[string]any{ofrpc.ServiceNetplugin: &netpluginRPC{d: d, ctx: ctx}})
	if err != nil {
		return err
	}
	d.vx = vx
	if len(d.cfg.VlanUplinks) > 0 {
		if err := d.drv.EnsureBridge(ctx, ovsdriver.VlanBridge, ovsdriver.VlanControllerPort); err != nil {
			return err
		}
		if d.uplinks, err = d.drv.EnsureUplinks(ctx, ovsdriver.VlanBridge, d.cfg.VlanUplinks); err != nil {
			return fmt.Errorf("attach uplinks %v: %w", d.cfg.VlanUplinks, err)
		}
	}
	uplinkMAC := ""
	if len(d.uplinks) > 0 {
		uplinkMAC = d.uplinks[0].MAC.String()
	}
	vl, err := d.startAgent(ctx, wg, ovsdriver.VlanBridge, ovsdriver.VlanControllerPort, ofrpc.VlanAgentPort, vlDatapath, uplinkMAC, nil)
	if err != nil {
		return err
	}
	d.vl = vl
	for _, u := range d.uplinks {
		if err := d.vl.AddUplink(ctx, u.OFPort, u.Name); err != nil {
			return fmt.Errorf("uplink %s: %w", u.Name, err)
		}
	}
	// The host port and host access converge through the queue; the
	// replay's first drain applies them.
	d.hostAccess = hostaccess.New(hostaccess.Config{Enabled: d.cfg.HostAccess, FwdMode: d.glob.FwdMode,
		PvtSubnet: d.glob.PvtSubnet, Datapath: d.vx, Ports: d.drv, Log: d.log})
	d.rec.Enqueue(kindHostAccess, d.cfg.HostLabel)
	if d.infraRoutes, err = infraroute.New(infraroute.Config{Networks: d.appliedNetworks, Log: d.log}); err != nil {
		return err
	}
	mode := "proxy"
	if d.glob.ArpMode == "flood" {
		mode = "flood"
	}
	for _, a := range []datapath{d.vx, d.vl} {
		if err := a.SetArpMode(ctx, mode); err != nil {
			return err
		}
	}
	d.applied.arpMode = mode
	return nil
}

func (d *Daemon) startAgent(ctx context.Context, wg *sync.WaitGroup, bridge string, ofPort, rpcPort int, datapath, uplinkMAC string, services map[string]any) (*agent.Agent, error) {
	if err := d.drv.EnsureBridge(ctx, bridge, ofPort); err != nil {
		return nil, err
	}
	d.rec.Enqueue(kindOFPortPin, bridge)
	// OVS connects from this host: the controller port stays on loopback
	// (docs/security.md, "Listeners").
	ofl, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(ofPort)))
	if err != nil {
		return nil, fmt.Errorf("OpenFlow listener of %s: %w", bridge, err)
	}
	// The masters call the control address (AddMaster) and the VTEP
	// address (after RegisterNode); never every interface (docs/security.md).
	rpcl, err := multilisten.Listen([]string{d.cfg.VtepIP, d.cfg.CtrlIP}, rpcPort, d.cfg.RPCServerTLS)
	if err != nil {
		ofl.Close()
		return nil, fmt.Errorf("RPC listener of %s: %w", bridge, err)
	}
	vrfIDs, err := d.loadVrfIDs(ctx, bridge)
	if err != nil {
		ofl.Close()
		rpcl.Close()
		return nil, err
	}
	a, err := agent.New(agent.Config{Bridge: bridge, Datapath: datapath, LocalIP: net.ParseIP(d.cfg.VtepIP),
		RPCPort: uint16(rpcPort), RPCListener: rpcl, RPCLimits: d.cfg.RPCLimits, OFListener: ofl, UplinkMAC: uplinkMAC,
		VrfIDs: vrfIDs, OnVrfIDs: func(ids map[string]uint8) { d.saveVrfIDs(ctx, bridge, ids) }, Pool: d.rpcPool,
		DNSLookup: d.names.Lookup, RPCServices: services,
		Logger: d.log.WithField("bridge", bridge)})
	if err != nil {
		ofl.Close()
		rpcl.Close()
		return nil, fmt.Errorf("ofnet agent of %s: %w", bridge, err)
	}
	goRun(ctx, wg, func(ctx context.Context) {
		if err := a.Run(ctx); err != nil && ctx.Err() == nil {
			d.log.WithError(err).Errorf("ofnet agent of %s stopped", bridge)
		}
	})
	wctx, cancel := context.WithTimeout(ctx, d.cfg.SwitchWait)
	defer cancel()
	if err := a.WaitConnected(wctx); err != nil {
		return nil, fmt.Errorf("bridge %s did not connect to its controller on port %d within %v: %w", bridge, ofPort, d.cfg.SwitchWait, err)
	}
	return a, nil
}

// vrfIDsKey is the bridge external_ids key holding the agent's VRF ids, so
// that a restarted agent replays exactly the flows that are installed.
const vrfIDsKey = "contiv-vrf-ids"

func (d *Daemon) loadVrfIDs(ctx context.Context, bridge string) (map[string]uint8, error) {
	v, ok, err := d.drv.BridgeExternalID(ctx, bridge, vrfIDsKey)
	if err != nil {
		return nil, fmt.Errorf("read the VRF ids of %s: %w", bridge, err)
	}
	ids := map[string]uint8{}
	if ok && v != "" {
		if err := json.Unmarshal([]byte(v), &ids); err != nil {
			d.log.WithError(err).Warnf("ignoring unreadable VRF ids of %s", bridge)
			return map[string]uint8{}, nil
		}
	}
	return ids, nil
}

// masterAdd and masterDel follow the netmaster.rpc instances. The agents
// only record a master here: registering with it, and retrying that until
// it answers, is the agent's push queue (ofnet/agent/masters.go), so the
// only error is a malformed address, which no retry would fix.
func (d *Daemon) masterAdd(ctx context.Context, s objdb.ServiceInfo) {
	n := ofrpc.OfnetNode{HostAddr: s.HostAddr, HostPort: ofrpc.MasterPort}
	for _, a := range []datapath{d.vx, d.vl} {
		if err := a.AddMaster(ctx, n); err != nil {
			d.log.WithError(err).Warnf("add ofnet master %s", s.HostAddr)
		}
	}
	d.seenOnce.Do(func() { close(d.mastersSeen) })
}

func (d *Daemon) masterDel(ctx context.Context, s objdb.ServiceInfo) {
	n := ofrpc.OfnetNode{HostAddr: s.HostAddr, HostPort: ofrpc.MasterPort}
	for _, a := range []datapath{d.vx, d.vl} {
		if err := a.RemoveMaster(ctx, n); err != nil {
			d.log.WithError(err).Warnf("remove ofnet master %s", s.HostAddr)
		}
	}
}

// existingPeers seeds the VTEP follower with the tunnels OVS already has,
// so tunnels to hosts that left while netplugin was down are removed.
func (d *Daemon) existingPeers() map[string]objdb.ServiceInfo {
	known := map[string]objdb.ServiceInfo{}
	for _, ip := range d.vtep.InOVS() {
		s := objdb.ServiceInfo{ServiceName: "netplugin.vtep", HostAddr: ip, Port: d.cfg.VxlanPort}
		known[follow.ServiceKey(s)] = s
	}
	return known
}

// vtepEvent: a peer VTEP arrived or left; its reconciler converges the
// tunnel to it.
func (d *Daemon) vtepEvent(_ context.Context, s objdb.ServiceInfo) {
	if s.HostAddr != d.cfg.VtepIP {
		d.rec.Enqueue(kindVtep, s.HostAddr)
	}
}
