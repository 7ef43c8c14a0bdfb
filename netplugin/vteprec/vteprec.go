// Package vteprec is netplugin's VTEP reconciler (key vtep/<peer VTEP IP>
// of docs/architecture.md "netplugin reconcilers"): it keeps a VXLAN tunnel,
// in OVS and in the VXLAN bridge's datapath, to every peer that is a
// cluster member, and removes the tunnels of peers that left (docs/daemons.md
// §5.2). Desired state: the live netplugin.vtep instances and the store's
// endpoints and node records (peerRefs); applied state is kept here. A
// failed step returns an error so the work queue (netplugin/reconcile)
// retries it until it converges.
package vteprec

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"sync"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/netplugin/follow"
	"github.com/contiv/netplugin/netplugin/ovsdriver"
	"github.com/contiv/netplugin/state"
)

// Kind is the kind of the reconcile keys vtep/<peer VTEP IP>.
const Kind = "vtep"

// Datapath is what the VTEP reconciler drives of the VXLAN bridge's agent.
type Datapath interface {
	AddVtepPort(ctx context.Context, portNo uint32, remoteIP net.IP) error
	RemoveVtepPort(ctx context.Context, portNo uint32, remoteIP net.IP) error
}

// Tunnels is what the VTEP reconciler asks of OVSDB (*ovsdriver.Driver).
type Tunnels interface {
	EnsureVTEP(ctx context.Context, bridge, remoteIP string, udpPort int) (uint32, error)
	DeleteVTEP(ctx context.Context, bridge, remoteIP string) error
	VTEPs(ctx context.Context, bridge string) (map[string]uint32, error)
}

// Live are the live netplugin.vtep instances (*follow.Services).
type Live interface {
	Has(host string) bool
	Hosts() []string
}

// Config is what the reconciler drives.
type Config struct {
	VtepIP    string // this host's VTEP: never a tunnel to it
	VxlanPort int
	Datapath  Datapath
	Tunnels   Tunnels
	Enqueue   func(kind, name string)
	// NewPeer is told once per peer when its tunnel is first made in this
	// process (the path MTU check); it must not block.
	NewPeer func(ip string)
	Log     logrus.FieldLogger
}

// Reconciler converges the tunnels; safe for concurrent use.
type Reconciler struct {
	cfg  Config
	refs peerRefs

	mu      sync.Mutex
	live    Live              // nil until SetLive
	inOVS   map[string]uint32 // peer VTEP IP → ofport of its tunnel in OVS
	applied map[string]bool   // peers whose tunnel is in OVS and the datapath
	probed  map[string]bool   // peers given to NewPeer
}

// New makes the reconciler of cfg with no tunnel known.
func New(cfg Config) *Reconciler {
	return &Reconciler{cfg: cfg, inOVS: map[string]uint32{}, applied: map[string]bool{}, probed: map[string]bool{}}
}

// SetLive gives the reconciler the live instances once they are followed.
func (r *Reconciler) SetLive(l Live) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.live = l
}

// want reports whether the tunnel to ip should exist.
func (r *Reconciler) want(ip string) bool {
	if ip == "" || ip == r.cfg.VtepIP {
		return false
	}
	r.mu.Lock()
	live := r.live
	r.mu.Unlock()
	if live != nil && live.Has(ip) {
		return true
	}
	return r.refs.has(ip)
}

// Enqueue asks for the tunnels to ips to be reconciled (never this host's).
func (r *Reconciler) Enqueue(ips ...string) {
	for _, ip := range ips {
		if ip != "" && ip != r.cfg.VtepIP {
			r.cfg.Enqueue(Kind, ip)
		}
	}
}

// EndpointPut and EndpointDel keep the endpoint counts of peerRefs
// (handlers of the endpoint follower).
func (r *Reconciler) EndpointPut(ep state.Endpoint, prev *state.Endpoint) {
	old := ""
	if prev != nil {
		old = prev.VtepIP
	}
	r.Enqueue(r.refs.endpoint(old, ep.VtepIP)...)
}

// EndpointDel: see EndpointPut.
func (r *Reconciler) EndpointDel(ep state.Endpoint) {
	r.Enqueue(r.refs.endpoint(ep.VtepIP, "")...)
}

// NodeHandlers follow the node records into peerRefs.
func (r *Reconciler) NodeHandlers() follow.Handlers[state.Node] {
	return follow.Handlers[state.Node]{
		Put: func(_ context.Context, n state.Node, _ *state.Node) { r.Enqueue(r.refs.node(n.ID, n.VtepIP)...) },
		Del: func(_ context.Context, n state.Node) { r.Enqueue(r.refs.node(n.ID, "")...) },
	}
}

// Restore takes over the tunnels OVS still has at start: each goes back
// into the datapath with its OpenFlow port (the replay, before the
// networks).
func (r *Reconciler) Restore(ctx context.Context) error {
	vteps, err := r.cfg.Tunnels.VTEPs(ctx, ovsdriver.VxlanBridge)
	if err != nil {
		return fmt.Errorf("read VTEPs: %w", err)
	}
	for ip, ofport := range vteps {
		r.mu.Lock()
		r.inOVS[ip] = ofport
		r.mu.Unlock()
		if err := r.cfg.Datapath.AddVtepPort(ctx, ofport, net.ParseIP(ip)); err != nil {
			return fmt.Errorf("replay VTEP %s: %w", ip, err)
		}
		r.mu.Lock()
		r.applied[ip] = true
		r.mu.Unlock()
	}
	return nil
}

// Reconcile keeps a VXLAN tunnel, in OVS and in the datapath, to a peer
// that is a cluster member (refs.go: live, or with endpoints or a node
// record in the store), and removes the tunnel of a peer that left.
func (r *Reconciler) Reconcile(ctx context.Context, ip string) error {
	if ip == r.cfg.VtepIP {
		return nil
	}
	want := r.want(ip)
	r.mu.Lock()
	ofport, inOVS := r.inOVS[ip]
	done := r.applied[ip]
	r.mu.Unlock()
	if !want {
		if !inOVS {
			return nil
		}
		return r.remove(ctx, ip, ofport, done)
	}
	if done {
		return nil
	}
	ofport, err := r.cfg.Tunnels.EnsureVTEP(ctx, ovsdriver.VxlanBridge, ip, r.cfg.VxlanPort)
	if err != nil {
		return fmt.Errorf("create VTEP to %s: %w", ip, err)
	}
	r.mu.Lock()
	r.inOVS[ip] = ofport
	probed := r.probed[ip]
	r.probed[ip] = true
	r.mu.Unlock()
	if !probed && r.cfg.NewPeer != nil {
		r.cfg.NewPeer(ip)
	}
	if err := r.cfg.Datapath.AddVtepPort(ctx, ofport, net.ParseIP(ip)); err != nil {
		return fmt.Errorf("add VTEP %s to the datapath: %w", ip, err)
	}
	r.mu.Lock()
	r.applied[ip] = true
	r.mu.Unlock()
	return nil
}

// remove takes the tunnel to ip out of the datapath (when it was put
// there, or has a port) and out of OVS.
func (r *Reconciler) remove(ctx context.Context, ip string, ofport uint32, done bool) error {
	if done || ofport != 0 {
		if err := r.cfg.Datapath.RemoveVtepPort(ctx, ofport, net.ParseIP(ip)); err != nil {
			return fmt.Errorf("remove VTEP %s from the datapath: %w", ip, err)
		}
	}
	r.mu.Lock()
	delete(r.applied, ip)
	r.mu.Unlock()
	if err := r.cfg.Tunnels.DeleteVTEP(ctx, ovsdriver.VxlanBridge, ip); err != nil {
		return fmt.Errorf("delete VTEP to %s: %w", ip, err)
	}
	r.mu.Lock()
	delete(r.inOVS, ip)
	r.mu.Unlock()
	return nil
}

// InOVS lists the peers whose tunnel is in OVS.
func (r *Reconciler) InOVS() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Collect(maps.Keys(r.inOVS))
}

// Applied reports whether the tunnel to ip is in OVS and the datapath.
func (r *Reconciler) Applied(ip string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.applied[ip]
}

// Keys are the peers the periodic resync puts back: the live ones, the
// store's members, and those with a tunnel in OVS (so leftovers go).
func (r *Reconciler) Keys() []string {
	r.mu.Lock()
	live := r.live
	r.mu.Unlock()
	var ips []string
	if live != nil {
		ips = live.Hosts()
	}
	ips = append(ips, r.refs.ips()...)
	return append(ips, r.InOVS()...)
}
