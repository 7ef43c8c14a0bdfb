// Package bgprec is netplugin's BGP reconciler, the BGP side of VLAN
// routing (docs/dataplane.md §3.4; keys of docs/architecture.md "netplugin
// reconcilers"):
//   - bgp/<host>: the speaker that this host's state/bgp entry configures,
//     its port inb01 with the router address and the datapath pointed at
//     it; restarted when the entry changes, stopped and cleaned up when it
//     goes;
//   - bgproute/<address>: a local VLAN endpoint's address announced to the
//     neighbor, or withdrawn;
//   - bgplearned/<prefix>: a route learned from the neighbor installed in
//     the datapath, or removed;
//   - bgppeer/<host>: the neighbor's MAC given to the datapath.
//
// Desired state: the store's BGP entry, the local endpoints and what the
// speaker reports; applied state is kept here. A failed step returns an
// error, so the work queue (netplugin/reconcile) retries it until it
// converges; nothing is only logged. A configuration that cannot work is
// reported and not retried.
package bgprec

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/netplugin/bgp"
	"github.com/contiv/netplugin/netplugin/ovsdriver"
	"github.com/contiv/netplugin/netplugin/reconcile"
	"github.com/contiv/netplugin/state"
)

// The kinds of reconcile keys this package serves.
const (
	KindConfig  = "bgp"        // bgp/<host label>
	KindRoute   = "bgproute"   // bgproute/<local endpoint address>
	KindLearned = "bgplearned" // bgplearned/<prefix learned from the neighbor>
	KindPeer    = "bgppeer"    // bgppeer/<host label>
)

// PortName is the internal port of the VLAN bridge holding the BGP router
// address (docs/dataplane.md §3.4).
const PortName = "inb01"

// NotConfigured is what routing mode does on VLAN networks until BGP is set up.
const NotConfigured = "VLAN networks are routed (datapath vlrouter); no BGP is configured for this host " +
	"(netctl bgp create), so only endpoints on this host are reachable on VLAN networks"

// Datapath is what BGP drives of the VLAN bridge's agent.
type Datapath interface {
	SetBgpPort(ctx context.Context, port uint32, routerIP net.IP) error
	SetBgpPeerMAC(ctx context.Context, mac net.HardwareAddr) error
	AddBgpRoute(ctx context.Context, pfx *net.IPNet) error
	RemoveBgpRoute(ctx context.Context, pfx *net.IPNet) error
	FlushBgpRoutes(ctx context.Context) error
	BgpRoutes() []string
}

// Ports is what BGP asks of OVSDB (*ovsdriver.Driver): the port inb01.
type Ports interface {
	CreateEndpoint(ctx context.Context, spec ovsdriver.EndpointSpec) (ovsdriver.EndpointPort, error)
	DeleteEndpoint(ctx context.Context, bridge, portName string) error
}

// Speaker is a running BGP speaker (*bgp.Speaker).
type Speaker interface {
	Announce(ctx context.Context, ip netip.Addr) error
	Withdraw(ctx context.Context, ip netip.Addr) error
	Stop()
	State(ctx context.Context) bgp.Inspect
}

// StartFunc starts a speaker whose events go to ev.
type StartFunc func(ctx context.Context, cfg bgp.Config, ev bgp.Events, log logrus.FieldLogger) (Speaker, error)

// Link is the kernel side of inb01 (netlink by default).
type Link interface {
	// Up gives the link name the address addr and sets it up.
	Up(name string, addr *net.IPNet) error
	// NeighborMAC is ip's MAC in the neighbor table of name (nil: none).
	NeighborMAC(name string, ip netip.Addr) net.HardwareAddr
}

// Queue is the work queue the reconciler is served by (*reconcile.Queue).
type Queue interface {
	Handle(kind string, fn reconcile.Func)
	Enqueue(kind, name string)
}

// Desired reads the desired state of one kind (a store follower).
type Desired[T any] interface {
	Get(id string) (T, bool)
}

// Config is the desired state and what the reconciler drives.
type Config struct {
	Host string // this host's label
	// Routing: the VLAN bridge routes (routing mode with uplinks); fixed
	// for the life of the process.
	Routing bool
	Entries Desired[state.Bgp]
	// Local lists the addresses of the local VLAN endpoints: what is announced.
	Local    func() map[netip.Addr]bool
	Queue    Queue
	Datapath Datapath
	Ports    Ports
	Start    StartFunc // nil: bgp.Start
	Link     Link      // nil: netlink
	Log      logrus.FieldLogger
}

// Reconciler converges BGP; its methods are safe for concurrent use.
type Reconciler struct {
	cfg Config

	mu        sync.Mutex // applied state; held while the datapath is driven
	sp        Speaker    // the running speaker (nil: none)
	spCfg     bgp.Config
	problem   string                // why BGP is not running although configured
	announced map[netip.Addr]bool   // bgproute keys applied
	installed map[netip.Prefix]bool // bgplearned keys applied
	peerMAC   net.HardwareAddr      // the neighbor MAC the datapath has
	undo      cleanup               // what a stop must take apart

	// ev is what the running speaker reported (desired state of the
	// bgplearned and bgppeer keys). Its own lock: the speaker's events
	// take it while Stop, under mu, waits for them.
	ev events
}

// cleanup are the steps a stop owes, set as the start takes them.
type cleanup struct {
	flush, peer, dpPort, port bool
}

type events struct {
	mu      sync.Mutex
	gen     int // the running speaker's generation: older events are dropped
	learned map[netip.Prefix]bool
	peerMAC net.HardwareAddr
}

// New makes the reconciler of cfg; Register gives it to the queue.
func New(cfg Config) *Reconciler {
	if cfg.Start == nil {
		cfg.Start = startSpeaker
	}
	if cfg.Link == nil {
		cfg.Link = netlinkLink{}
	}
	return &Reconciler{cfg: cfg}
}

func startSpeaker(ctx context.Context, cfg bgp.Config, ev bgp.Events, log logrus.FieldLogger) (Speaker, error) {
	sp, err := bgp.Start(ctx, cfg, bgp.Options{}, ev, log)
	if err != nil {
		return nil, err
	}
	return sp, nil
}

// Register gives the queue the reconciler of each kind of this package.
func (r *Reconciler) Register() {
	r.cfg.Queue.Handle(KindConfig, r.ReconcileConfig)
	r.cfg.Queue.Handle(KindRoute, r.ReconcileRoute)
	r.cfg.Queue.Handle(KindLearned, r.ReconcileLearned)
	r.cfg.Queue.Handle(KindPeer, r.ReconcilePeer)
}

// ReconcileConfig runs the BGP speaker this host's state/bgp entry
// configures (docs/dataplane.md §3.4), restarting it when the entry changes
// and stopping it, and taking its port and flows apart, when it goes.
func (r *Reconciler) ReconcileConfig(ctx context.Context, host string) error {
	if host != r.cfg.Host {
		return nil
	}
	b, want := r.cfg.Entries.Get(host)
	if !want {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.sp != nil {
			r.stopLocked()
			r.cfg.Log.Warn("BGP configuration removed: " + NotConfigured)
		}
		r.problem = ""
		return r.cleanupLocked(ctx)
	}
	if !r.cfg.Routing {
		r.cfg.Log.WithField("host", b.Hostname).Warn("BGP configured for this host, but the VLAN bridge does not route (needs forwarding mode routing and VLAN uplinks): ignored")
		return nil
	}
	cfg, err := bgp.ParseConfig(b)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.cfg.Log.WithError(err).Error("BGP configuration refused")
		r.problem = err.Error()
		return nil
	}
	if r.sp != nil && r.spCfg == cfg {
		return nil
	}
	r.stopLocked()
	if err := r.cleanupLocked(ctx); err != nil {
		r.problem = err.Error()
		return fmt.Errorf("stop BGP: %w", err)
	}
	if err := r.startLocked(ctx, cfg); err != nil {
		r.problem = err.Error()
		return fmt.Errorf("start BGP: %w", err)
	}
	r.problem = ""
	return nil
}

// startLocked creates inb01 with the router address, points the datapath
// at it and starts the speaker, then asks for every local VLAN endpoint to
// be announced. A failed step is undone (or left to the retry's cleanup).
func (r *Reconciler) startLocked(ctx context.Context, cfg bgp.Config) error {
	ip := cfg.RouterIP.Addr().As4()
	mac := net.HardwareAddr{0x02, 0x02, ip[0], ip[1], ip[2], ip[3]}
	port, err := r.cfg.Ports.CreateEndpoint(ctx, ovsdriver.EndpointSpec{EndpointID: PortName, Bridge: ovsdriver.VlanBridge,
		Infra: true, InfraName: PortName, MAC: mac})
	if err != nil {
		return err
	}
	// A failed start takes the port apart as a stop does.
	r.undo.port, r.undo.dpPort = true, true
	err = r.cfg.Link.Up(PortName, &net.IPNet{IP: net.IP(ip[:]), Mask: net.CIDRMask(cfg.RouterIP.Bits(), 32)})
	if err == nil {
		err = r.cfg.Datapath.SetBgpPort(ctx, port.OFPort, net.IP(ip[:]))
	}
	if err != nil {
		return errors.Join(err, r.cleanupLocked(ctx))
	}
	gen := r.ev.reset()
	sp, err := r.cfg.Start(ctx, cfg, bgp.Events{
		Route:   func(pfx netip.Prefix, add bool) { r.learn(gen, pfx, add) },
		Session: func(up bool) { r.session(ctx, gen, cfg, up) },
	}, r.cfg.Log)
	if err != nil {
		return errors.Join(err, r.cleanupLocked(ctx))
	}
	r.sp, r.spCfg = sp, cfg
	r.announced, r.installed = map[netip.Addr]bool{}, map[netip.Prefix]bool{}
	r.undo.flush, r.undo.peer = true, true
	r.cfg.Log.WithFields(map[string]any{"router-ip": cfg.RouterIP, "as": cfg.AS, "neighbor": cfg.Neighbor,
		"neighbor-as": cfg.NeighborAS}).Info("BGP started: VLAN endpoints are announced to the neighbor, its routes installed")
	for a := range r.cfg.Local() {
		r.cfg.Queue.Enqueue(KindRoute, a.String())
	}
	return nil
}

// stopLocked ends the running speaker; what it leaves in the datapath and
// OVS is cleanupLocked's.
func (r *Reconciler) stopLocked() {
	if r.sp == nil {
		return
	}
	r.sp.Stop()
	r.ev.reset()
	r.sp, r.announced = nil, nil
}

// cleanupLocked takes apart what the last speaker left: its learned routes,
// the peer MAC, the datapath's BGP port and inb01. Every step is tried; the
// ones that failed stay owed, and the error has the key retried.
func (r *Reconciler) cleanupLocked(ctx context.Context) error {
	var errs []error
	if r.undo.flush {
		if err := r.cfg.Datapath.FlushBgpRoutes(ctx); err != nil {
			errs = append(errs, fmt.Errorf("flush BGP routes: %w", err))
		} else {
			r.undo.flush, r.installed = false, nil
		}
	}
	if r.undo.peer {
		if err := r.cfg.Datapath.SetBgpPeerMAC(ctx, nil); err != nil {
			errs = append(errs, fmt.Errorf("clear the BGP peer: %w", err))
		} else {
			r.undo.peer, r.peerMAC = false, nil
		}
	}
	if r.undo.dpPort {
		if err := r.cfg.Datapath.SetBgpPort(ctx, 0, nil); err != nil {
			errs = append(errs, fmt.Errorf("clear the BGP port: %w", err))
		} else {
			r.undo.dpPort = false
		}
	}
	if r.undo.port {
		if err := r.cfg.Ports.DeleteEndpoint(ctx, ovsdriver.VlanBridge, PortName); err != nil {
			errs = append(errs, fmt.Errorf("delete the BGP port: %w", err))
		} else {
			r.undo.port = false
		}
	}
	return errors.Join(errs...)
}

// Shutdown ends the speaker when netplugin stops; the port and flows stay
// (as every datapath flow does across a restart).
func (r *Reconciler) Shutdown() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopLocked()
}
