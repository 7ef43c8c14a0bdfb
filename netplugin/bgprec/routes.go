package bgprec

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/contiv/netplugin/netplugin/bgp"
	"github.com/contiv/netplugin/utils/ctxutil"
)

// reset forgets what the last speaker reported and starts a new
// generation; it returns the generation of the next speaker's events.
func (e *events) reset() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.gen++
	e.learned, e.peerMAC = map[netip.Prefix]bool{}, nil
	return e.gen
}

// learn records a route the neighbor announced (add) or withdrew and asks
// for it to be installed or removed (key bgplearned/<prefix>).
func (r *Reconciler) learn(gen int, pfx netip.Prefix, add bool) {
	r.ev.mu.Lock()
	if gen != r.ev.gen {
		r.ev.mu.Unlock()
		return
	}
	if add {
		r.ev.learned[pfx] = true
	} else {
		delete(r.ev.learned, pfx)
	}
	r.ev.mu.Unlock()
	r.cfg.Queue.Enqueue(KindLearned, pfx.String())
}

// session learns the neighbor's MAC from the kernel (the session's own ARP
// on inb01) once the session is up, so learned routes can be installed;
// the datapath gets it through the key bgppeer/<host>.
func (r *Reconciler) session(ctx context.Context, gen int, cfg bgp.Config, up bool) {
	if !up {
		return
	}
	for i := 0; i < 20 && ctx.Err() == nil; i++ {
		if mac := r.cfg.Link.NeighborMAC(PortName, cfg.Neighbor); mac != nil {
			r.ev.mu.Lock()
			current := gen == r.ev.gen
			if current {
				r.ev.peerMAC = mac
			}
			r.ev.mu.Unlock()
			if current {
				r.cfg.Queue.Enqueue(KindPeer, r.cfg.Host)
			}
			return
		}
		if !ctxutil.Sleep(ctx, 250*time.Millisecond) {
			return
		}
	}
	r.cfg.Log.WithField("neighbor", cfg.Neighbor).Warn("BGP session up but the neighbor's MAC is not in the ARP table of " + PortName)
}

// desiredLearned reports whether the running speaker holds pfx learned.
func (r *Reconciler) desiredLearned(pfx netip.Prefix) bool {
	r.ev.mu.Lock()
	defer r.ev.mu.Unlock()
	return r.ev.learned[pfx]
}

// ReconcileRoute announces the address of a local VLAN endpoint to the
// neighbor, or withdraws one that no local endpoint has any more (key
// bgproute/<address>). Desired: the local endpoints; applied: what the
// running speaker announced. With no speaker running nothing is announced;
// a speaker that starts enqueues every local address again.
func (r *Reconciler) ReconcileRoute(ctx context.Context, name string) error {
	a, err := netip.ParseAddr(name)
	if err != nil {
		r.cfg.Log.WithField("key", name).Error("BGP route key is not an address; dropped")
		return nil
	}
	want := r.cfg.Local()[a]
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sp == nil {
		return nil
	}
	have := r.announced[a]
	switch {
	case want && !have:
		if err := r.sp.Announce(ctx, a); err != nil {
			return fmt.Errorf("announce %s: %w", a, err)
		}
		r.announced[a] = true
	case !want && have:
		if err := r.sp.Withdraw(ctx, a); err != nil {
			return fmt.Errorf("withdraw %s: %w", a, err)
		}
		delete(r.announced, a)
	}
	return nil
}

// ReconcileLearned installs a route learned from the neighbor in the
// datapath, or removes one the neighbor withdrew (key bgplearned/<prefix>).
// With no speaker running there is nothing to do: the stop flushed them.
func (r *Reconciler) ReconcileLearned(ctx context.Context, name string) error {
	pfx, err := netip.ParsePrefix(name)
	if err != nil {
		r.cfg.Log.WithField("key", name).Error("learned BGP route key is not a prefix; dropped")
		return nil
	}
	want := r.desiredLearned(pfx)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sp == nil {
		return nil
	}
	n := &net.IPNet{IP: net.IP(pfx.Addr().AsSlice()), Mask: net.CIDRMask(pfx.Bits(), 32)}
	switch have := r.installed[pfx]; {
	case want && !have:
		if err := r.cfg.Datapath.AddBgpRoute(ctx, n); err != nil {
			return fmt.Errorf("install BGP route %s: %w", pfx, err)
		}
		r.installed[pfx] = true
	case !want && have:
		if err := r.cfg.Datapath.RemoveBgpRoute(ctx, n); err != nil {
			return fmt.Errorf("remove BGP route %s: %w", pfx, err)
		}
		delete(r.installed, pfx)
	}
	return nil
}

// ReconcilePeer gives the datapath the neighbor MAC the running speaker's
// session found (key bgppeer/<host>).
func (r *Reconciler) ReconcilePeer(ctx context.Context, _ string) error {
	r.ev.mu.Lock()
	want := r.ev.peerMAC
	r.ev.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sp == nil || want == nil || bytes.Equal(want, r.peerMAC) {
		return nil
	}
	if err := r.cfg.Datapath.SetBgpPeerMAC(ctx, want); err != nil {
		return fmt.Errorf("set the BGP peer MAC: %w", err)
	}
	r.peerMAC = want
	return nil
}

// Changed asks for a local VLAN endpoint's address to be announced or
// withdrawn, as the local endpoints now say, when a speaker runs.
func (r *Reconciler) Changed(a netip.Addr) {
	if r.running() {
		r.cfg.Queue.Enqueue(KindRoute, a.String())
	}
}

// running reports whether a speaker runs.
func (r *Reconciler) running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sp != nil
}

// Keys are the keys the periodic resync puts back: the configuration, and
// while a speaker runs the addresses announced and to announce, the routes
// learned and installed, and the peer.
func (r *Reconciler) Keys() []string {
	keys := []string{KindConfig + "/" + r.cfg.Host}
	want := r.cfg.Local()
	r.ev.mu.Lock()
	learned := make(map[netip.Prefix]bool, len(r.ev.learned))
	for p := range r.ev.learned {
		learned[p] = true
	}
	r.ev.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sp == nil {
		return keys
	}
	for a := range r.announced {
		want[a] = true
	}
	for a := range want {
		keys = append(keys, KindRoute+"/"+a.String())
	}
	for p := range r.installed {
		learned[p] = true
	}
	for p := range learned {
		keys = append(keys, KindLearned+"/"+p.String())
	}
	return append(keys, KindPeer+"/"+r.cfg.Host)
}

// Inspect is the BGP part of /inspect/bgp (docs/daemons.md §6.5).
func (r *Reconciler) Inspect(ctx context.Context) map[string]any {
	r.mu.Lock()
	sp, problem := r.sp, r.problem
	r.mu.Unlock()
	out := map[string]any{"datapath": "vlrouter", "installedRoutes": r.cfg.Datapath.BgpRoutes()}
	switch {
	case sp != nil:
		st := sp.State(ctx)
		out["state"], out["routerIP"], out["as"] = "running", st.RouterIP, st.AS
		out["neighbors"], out["announced"], out["learned"] = st.Neighbors, st.Announced, st.Learned
	case problem != "":
		out["state"], out["message"] = "error", problem
	default:
		out["state"], out["message"] = "not configured", NotConfigured
	}
	return out
}

// netlinkLink is Link on the host's kernel.
type netlinkLink struct{}

func (netlinkLink) Up(name string, addr *net.IPNet) error {
	link, err := netlink.LinkByName(name)
	if err != nil {
		return err
	}
	if err := netlink.AddrReplace(link, &netlink.Addr{IPNet: addr}); err != nil {
		return err
	}
	return netlink.LinkSetUp(link)
}

func (netlinkLink) NeighborMAC(name string, ip netip.Addr) net.HardwareAddr {
	link, err := netlink.LinkByName(name)
	if err != nil {
		return nil
	}
	neighs, err := netlink.NeighList(link.Attrs().Index, netlink.FAMILY_V4)
	if err != nil {
		return nil
	}
	for _, n := range neighs {
		if n.IP.Equal(net.IP(ip.AsSlice())) && len(n.HardwareAddr) == 6 &&
			n.State&(netlink.NUD_REACHABLE|netlink.NUD_STALE|netlink.NUD_DELAY|netlink.NUD_PROBE|netlink.NUD_PERMANENT) != 0 {
			return n.HardwareAddr
		}
	}
	return nil
}
