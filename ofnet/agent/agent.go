package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/contiv/netplugin/ofnet/ofctrl"
	"github.com/contiv/netplugin/ofnet/ofrpc"
	of "github.com/contiv/netplugin/ofnet/openflow13"
	"github.com/contiv/netplugin/ofnet/pipeline"
	"github.com/sirupsen/logrus"
)

// ErrNotRunning is returned by WaitConnected when Run has ended.
var ErrNotRunning = errors.New("agent: not running")

// Agent is the ofnet agent of one bridge. Its methods are safe for concurrent use.
type Agent struct {
	cfg      Config
	log      logrus.FieldLogger
	ctrl     *ofctrl.Controller
	tables   *pipeline.Registry
	features []feature
	pool     *ofrpc.Pool
	ownPool  bool
	pushes   *pushQueue
	garps    chan garpRequest

	mu        sync.Mutex // guards everything below; held across switch updates
	sw        *ofctrl.Switch
	ready     chan struct{} // closed after the first sync on a connected switch
	connected bool
	finished  bool // FinishRestart ran
	// replayed: the owner said the local state is complete (FinishRestart
	// was called); until then a registration sends no EndpointSync, which
	// would make a master drop endpoints the replay has not re-added yet.
	replayed  bool
	networks  map[uint16]*network
	vrfs      map[string]*vrfRef
	vrfPref   map[string]uint8          // every VRF id given out, also by a previous run
	locals    map[uint32]*localEndpoint // by port
	remotes   map[string]ofrpc.OfnetEndpoint
	vteps     map[string]uint32 // peer IP → VTEP port
	uplinks   map[uint32]string // port → link name
	rules     map[string]ofrpc.OfnetPolicyRule
	refused   map[string]string   // rule id → why AddRule refused it (inspect)
	services  map[string]*service // by name (<svc>:<tenant>)
	netpol    *netpolState        // Kubernetes NetworkPolicy; nil: not enforced
	arpFlood  bool
	host      *HostAccess // contivh0 host access (VXLAN routing), nil when off
	bgp       bgpState    // VLAN routing: BGP port, peer and learned routes
	masters   map[string]ofrpc.OfnetNode
	cache     map[string]map[ofctrl.FlowKey]ofctrl.Flow // object → installed flows
	groups    map[uint32]ofctrl.Group                   // installed flood groups
	meters    map[uint32]ofctrl.Meter                   // installed endpoint meters
	firstConn chan struct{}                             // signalled on the first connect
	runDone   chan struct{}

	// affinity holds, per learned-flow cookie of a service with session affinity,
	// the affinity's signature as last synced: a cookie that goes or whose
	// signature changes has its learned flows deleted (feature_service.go).
	affinity map[uint64]string
	// learned is the set of learned-flow cookies a resync must keep (those of
	// affinity, read without mu by the controller's KeepUnrecorded).
	learned atomic.Pointer[map[uint64]bool]
}

// New validates cfg and builds an agent; nothing runs until Run.
func New(cfg Config) (*Agent, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	a := &Agent{
		cfg: cfg,
		log: cfg.Logger.WithFields(logrus.Fields{"component": "ofnet-agent",
			"bridge": cfg.Bridge, "datapath": cfg.Datapath}),
		pool:      cfg.Pool,
		ready:     make(chan struct{}),
		networks:  map[uint16]*network{},
		vrfs:      map[string]*vrfRef{},
		vrfPref:   maps.Clone(cfg.VrfIDs),
		locals:    map[uint32]*localEndpoint{},
		remotes:   map[string]ofrpc.OfnetEndpoint{},
		vteps:     map[string]uint32{},
		uplinks:   map[uint32]string{},
		rules:     map[string]ofrpc.OfnetPolicyRule{},
		refused:   map[string]string{},
		services:  map[string]*service{},
		masters:   map[string]ofrpc.OfnetNode{},
		cache:     map[string]map[ofctrl.FlowKey]ofctrl.Flow{},
		groups:    map[uint32]ofctrl.Group{},
		meters:    map[uint32]ofctrl.Meter{},
		affinity:  map[uint64]string{},
		firstConn: make(chan struct{}, 1),
		runDone:   make(chan struct{}),
		garps:     make(chan garpRequest, 64),
	}
	if a.pool == nil {
		a.pool = ofrpc.NewPool()
		a.ownPool = true
	}
	a.pushes = newPushQueue()
	a.tables, a.features = selectFeatures(cfg.Datapath)
	ctrl, err := ofctrl.New(ofctrl.Config{
		Listener:         cfg.OFListener,
		Logger:           cfg.Logger,
		DeferFirstResync: true,
		KeepUnrecorded:   a.keepLearned,
		OnConnect:        a.onConnect,
		OnDisconnect:     a.onDisconnect,
		OnPacketIn:       a.onPacketIn,
	})
	if err != nil {
		return nil, fmt.Errorf("agent: controller: %w", err)
	}
	a.ctrl = ctrl
	return a, nil
}

// Run serves the OpenFlow controller, the RPC services and the agent's background
// work until ctx ends, then waits for all of it.
func (a *Agent) Run(ctx context.Context) error {
	defer close(a.runDone)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	start := func(name string, fn func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(ctx); err != nil && ctx.Err() == nil {
				errs <- fmt.Errorf("agent: %s: %w", name, err)
				cancel()
			}
		}()
	}
	start("openflow controller", a.ctrl.Run)
	if a.cfg.RPCListener != nil {
		start("rpc server", func(ctx context.Context) error {
			limits := a.cfg.RPCLimits
			if limits.OnReject == nil {
				limits.OnReject = func(remote net.Addr, err error) {
					a.log.WithError(err).WithField("peer", remote.String()).Warn("agent: RPC connection refused or closed")
				}
			}
			services := map[string]any{"OfnetAgent": &OfnetAgentService{a: a}, "PolicyAgent": &PolicyAgentService{a: a}}
			for name, s := range a.cfg.RPCServices {
				services[name] = s
			}
			return ofrpc.ServeLimits(ctx, a.cfg.RPCListener, services, limits)
		})
	}
	start("initial sync", a.connectLoop)
	start("master pushes", a.pushLoop)
	start("garp", a.garpLoop)
	<-ctx.Done()
	wg.Wait()
	if a.ownPool {
		a.pool.Close()
	}
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// WaitConnected blocks until the switch has connected and the agent's state is
// installed on it.
func (a *Agent) WaitConnected(ctx context.Context) error {
	select {
	case <-a.ready:
		return nil
	case <-a.runDone:
		return ErrNotRunning
	case <-ctx.Done():
		return fmt.Errorf("agent %s: wait for switch: %w", a.cfg.Bridge, ctx.Err())
	}
}

func (a *Agent) onConnect(sw *ofctrl.Switch) {
	a.mu.Lock()
	first := a.sw == nil
	if first {
		a.sw = sw
	} else if a.sw != sw {
		a.mu.Unlock()
		a.log.WithField("dpid", fmt.Sprintf("%016x", sw.DatapathID())).Warn("agent: a second datapath connected; ignored")
		return
	}
	a.connected = true
	a.mu.Unlock()
	if first {
		select {
		case a.firstConn <- struct{}{}:
		default:
		}
	}
}

func (a *Agent) onDisconnect(dpid uint64) {
	a.mu.Lock()
	if a.sw != nil && a.sw.DatapathID() == dpid {
		a.connected = false
	}
	a.mu.Unlock()
}

// connectLoop installs the whole state on the first connection (the record of the
// switch is then kept by ofctrl across reconnects) and runs FinishRestart after
// RestartGrace unless the owner already did.
func (a *Agent) connectLoop(ctx context.Context) error {
	select {
	case <-a.firstConn:
	case <-ctx.Done():
		return nil
	}
	for {
		a.mu.Lock()
		err := a.syncLocked(ctx)
		a.mu.Unlock()
		if err == nil {
			break
		}
		a.log.WithError(err).Warn("agent: initial sync failed; retrying")
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
	close(a.ready)
	a.log.Info("agent: switch connected and state installed")
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(a.cfg.RestartGrace):
	}
	if err := a.FinishRestart(ctx); err != nil && ctx.Err() == nil {
		a.log.WithError(err).Warn("agent: restart clean-up after grace period failed")
	}
	return nil
}

// FinishRestart deletes the flows and groups a previous run left on the switch that
// the agent's state does not produce (a full ofctrl Resync). Call it after the state
// was replayed (local endpoints, networks, VTEPs) and masters re-sent remote endpoints
// and rules. Idempotent; safe for concurrent use.
func (a *Agent) FinishRestart(ctx context.Context) error {
	if err := a.WaitConnected(ctx); err != nil {
		return err
	}
	a.markReplayed()
	a.mu.Lock()
	sw := a.sw
	a.mu.Unlock()
	res, err := sw.Resync(ctx)
	if err != nil {
		return fmt.Errorf("agent %s: finish restart: %w", a.cfg.Bridge, err)
	}
	a.mu.Lock()
	a.finished = true
	a.mu.Unlock()
	a.log.WithField("result", res.String()).Info("agent: stale flows from the previous run removed")
	return nil
}

// onPacketIn dispatches packet-ins to the features (ARP).
func (a *Agent) onPacketIn(sw *ofctrl.Switch, pi *of.PacketIn) {
	for _, f := range a.features {
		if h, ok := f.(packetHandler); ok && h.handlePacketIn(a, sw, pi) {
			return
		}
	}
}

// vrfIDLocked returns the local id of a VRF name, if a network uses it.
func (a *Agent) vrfIDLocked(name string) (uint8, bool) {
	r, ok := a.vrfs[name]
	if !ok {
		return 0, false
	}
	return r.ID, true
}

// vtepPortLocked returns the VTEP port towards a peer.
func (a *Agent) vtepPortLocked(peer net.IP) (uint32, bool) {
	if peer == nil {
		return 0, false
	}
	p, ok := a.vteps[peer.String()]
	return p, ok
}
