// Package infraroute is netplugin's reconciler of the host's routes to the
// container networks through its port on the `contivh1` infra network
// (docs/daemons.md §6.3, key infraroute/<host> of docs/architecture.md
// "netplugin reconcilers"). With such a port, every VXLAN data network of
// the infra network's tenant is routed through it, via the infra network's
// gateway: the host reaches its containers (the kubelet's probes, NodePorts)
// the way the containers reach each other across networks.
//
// The routes netplugin adds carry their own routing protocol number
// (Protocol), so a run finds and removes the ones it no longer wants,
// including those of an earlier run, and never touches anyone else's. Desired
// state is the networks the agent has applied; applied state is the kernel's
// routing table. Every step is idempotent, and an error is returned for the
// work queue (netplugin/reconcile) to retry.
package infraroute

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"sync"

	"github.com/sirupsen/logrus"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/contiv/netplugin/state"
)

// Network is the infra network whose host port routes (the name the
// original gave it, docs/daemons.md §6.3).
const Network = "contivh1"

// Protocol marks the routes this package owns (rtm_protocol; 99 is not
// assigned in the kernel's rtnetlink.h or iproute2's rt_protos).
const Protocol netlink.RouteProtocol = 99

// Route is one route the host should have.
type Route struct {
	Dst     string // subnet, CIDR
	Gateway string
	Dev     string
}

// Config is what the reconciler reads and drives.
type Config struct {
	// Networks returns the networks the agent has applied.
	Networks func() []state.Network
	// Netlink is the host namespace's handle (nil: the process's).
	Netlink *netlink.Handle
	Log     logrus.FieldLogger
}

// Reconciler converges the host's infra routes; safe for concurrent use.
type Reconciler struct {
	cfg Config
	nl  *netlink.Handle

	mu       sync.Mutex
	warned   map[string]bool // infra networks reported as unusable
	routes   []Route         // last applied
	creating bool
}

// New returns a reconciler.
func New(cfg Config) (*Reconciler, error) {
	if cfg.Networks == nil {
		return nil, errors.New("infraroute: Networks is nil")
	}
	if cfg.Log == nil {
		cfg.Log = logrus.New()
	}
	r := &Reconciler{cfg: cfg, nl: cfg.Netlink, warned: map[string]bool{}}
	if r.nl == nil {
		h, err := netlink.NewHandle()
		if err != nil {
			return nil, fmt.Errorf("infraroute: netlink handle: %w", err)
		}
		r.nl, r.creating = h, true
	}
	return r, nil
}

// Close releases the netlink handle New opened.
func (r *Reconciler) Close() {
	if r.creating {
		r.nl.Close()
	}
}

// Desired returns the routes the networks call for, sorted by destination:
// for each infra network named Network whose port exists on this host,
// every VXLAN data network of its tenant (IPv4 and IPv6 subnets) via the
// infra network's gateway of that family. A network without a gateway of
// a family gets no route of that family.
func (r *Reconciler) Desired() []Route {
	nets := r.cfg.Networks()
	var out []Route
	for _, infra := range nets {
		if infra.NwType != "infra" || infra.NetworkName != Network {
			continue
		}
		if _, err := r.nl.LinkByName(Network); err != nil {
			continue // its port is not up yet: the network's reconciler enqueues us again
		}
		for _, n := range nets {
			if n.Tenant != infra.Tenant || n.NwType == "infra" || n.PktTagType != "vxlan" {
				continue
			}
			if n.SubnetIP != "" && infra.Gateway != "" {
				out = append(out, Route{Dst: fmt.Sprintf("%s/%d", n.SubnetIP, n.SubnetLen), Gateway: infra.Gateway, Dev: Network})
			}
			if n.IPv6Subnet != "" && infra.IPv6Gateway != "" {
				out = append(out, Route{Dst: fmt.Sprintf("%s/%d", n.IPv6Subnet, n.IPv6SubnetLen), Gateway: infra.IPv6Gateway, Dev: Network})
			}
		}
		if infra.Gateway == "" && infra.IPv6Gateway == "" {
			r.warnOnce(infra.ID, "infra network %s has no gateway: the host gets no routes to the tenant's networks through it", infra.ID)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dst < out[j].Dst })
	return slices.Compact(out)
}

// Applied returns the routes the last successful Reconcile left.
func (r *Reconciler) Applied() []Route {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.routes)
}

// Reconcile makes the host's routes of Protocol exactly Desired.
func (r *Reconciler) Reconcile(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	want := r.Desired()
	wanted := map[string]Route{}
	for _, rt := range want {
		wanted[rt.Dst] = rt
	}
	var errs []error
	have, err := r.owned()
	if err != nil {
		return err
	}
	for _, h := range have {
		if w, ok := wanted[h.Dst.String()]; ok && r.matches(h, w) {
			delete(wanted, h.Dst.String())
			continue
		}
		if _, ok := wanted[h.Dst.String()]; ok {
			continue // replaced below
		}
		if err := r.nl.RouteDel(&h); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("delete route %s: %w", h.Dst, err))
		}
	}
	for _, w := range wanted {
		if err := r.replace(w); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	r.mu.Lock()
	r.routes = want
	r.mu.Unlock()
	return nil
}

// owned lists the routes of Protocol, both families, main table.
func (r *Reconciler) owned() ([]netlink.Route, error) {
	var out []netlink.Route
	for _, fam := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		rs, err := r.nl.RouteListFiltered(fam, &netlink.Route{Protocol: Protocol, Table: unix.RT_TABLE_MAIN},
			netlink.RT_FILTER_PROTOCOL|netlink.RT_FILTER_TABLE)
		if err != nil {
			return nil, fmt.Errorf("list infra routes: %w", err)
		}
		out = append(out, rs...)
	}
	return out, nil
}

func (r *Reconciler) matches(h netlink.Route, w Route) bool {
	link, err := r.nl.LinkByName(w.Dev)
	if err != nil {
		return false
	}
	return h.LinkIndex == link.Attrs().Index && h.Gw.Equal(net.ParseIP(w.Gateway))
}

// replace puts route w in the main table (replacing any route to the same
// destination, whoever added it).
func (r *Reconciler) replace(w Route) error {
	link, err := r.nl.LinkByName(w.Dev)
	if err != nil {
		return fmt.Errorf("route %s: device %s: %w", w.Dst, w.Dev, err)
	}
	_, dst, err := net.ParseCIDR(w.Dst)
	if err != nil {
		return fmt.Errorf("route %s: %w", w.Dst, err)
	}
	gw := net.ParseIP(w.Gateway)
	if gw == nil {
		return fmt.Errorf("route %s: bad gateway %q", w.Dst, w.Gateway)
	}
	rt := &netlink.Route{LinkIndex: link.Attrs().Index, Dst: dst, Gw: gw, Protocol: Protocol, Table: unix.RT_TABLE_MAIN}
	if err := r.nl.RouteReplace(rt); err != nil {
		return fmt.Errorf("route %s via %s dev %s: %w", w.Dst, w.Gateway, w.Dev, err)
	}
	r.cfg.Log.WithField("route", w.Dst).WithField("via", w.Gateway).Info("infra network: host route set")
	return nil
}

func (r *Reconciler) warnOnce(key, format string, args ...any) {
	r.mu.Lock()
	seen := r.warned[key]
	r.warned[key] = true
	r.mu.Unlock()
	if !seen {
		r.cfg.Log.Warnf(format, args...)
	}
}
