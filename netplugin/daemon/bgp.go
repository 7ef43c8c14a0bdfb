package daemon

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/contiv/netplugin/netplugin/bgp"
	"github.com/contiv/netplugin/netplugin/ovsdriver"
	"github.com/contiv/netplugin/utils/ctxutil"
)

// bgpPortName is the internal port of the VLAN bridge holding the BGP router
// address (docs/dataplane.md §3.4).
const bgpPortName = "inb01"

// bgpRunner is netplugin's BGP side of VLAN routing: the speaker configured from
// state/bgp/<host> and the port it speaks through.
type bgpRunner struct {
	mu      sync.Mutex
	sp      *bgp.Speaker
	cfg     bgp.Config
	port    uint32
	problem string // why BGP is not running although configured
	// routes is the running speaker as the announcement reconciler sees it
	// (nil: none runs); announced is what it announced (applied state of
	// the bgproute/<address> keys).
	routes    bgpAnnouncer
	announced map[netip.Addr]bool
}

// bgpAnnouncer is what the announcement reconciler asks of the BGP speaker
// (*bgp.Speaker); the unit tests give it a fake.
type bgpAnnouncer interface {
	Announce(ctx context.Context, ip netip.Addr) error
	Withdraw(ctx context.Context, ip netip.Addr) error
}

// vlanRouting reports whether the VLAN bridge routes (routing mode with uplinks).
func (d *Daemon) vlanRouting() bool {
	return d.glob.FwdMode == "routing" && len(d.cfg.VlanUplinks) > 0
}

// bgpNotConfigured is what routing mode does on VLAN networks until BGP is set up.
const bgpNotConfigured = "VLAN networks are routed (datapath vlrouter); no BGP is configured for this host " +
	"(netctl bgp create), so only endpoints on this host are reachable on VLAN networks"

// startBgpLocked creates inb01 with the router address, points the datapath at
// it and starts the speaker, then announces every local VLAN endpoint.
func (d *Daemon) startBgpLocked(ctx context.Context, cfg bgp.Config) error {
	ip := cfg.RouterIP.Addr().As4()
	mac := net.HardwareAddr{0x02, 0x02, ip[0], ip[1], ip[2], ip[3]}
	port, err := d.drv.CreateEndpoint(ctx, ovsdriver.EndpointSpec{EndpointID: bgpPortName, Bridge: ovsdriver.VlanBridge,
		Infra: true, InfraName: bgpPortName, MAC: mac})
	if err != nil {
		return err
	}
	link, err := netlink.LinkByName(bgpPortName)
	if err == nil {
		addr := &netlink.Addr{IPNet: &net.IPNet{IP: net.IP(ip[:]), Mask: net.CIDRMask(cfg.RouterIP.Bits(), 32)}}
		if err = netlink.AddrReplace(link, addr); err == nil {
			err = netlink.LinkSetUp(link)
		}
	}
	if err == nil {
		err = d.vl.SetBgpPort(ctx, port.OFPort, net.IP(ip[:]))
	}
	if err != nil {
		d.dropBgpPort(ctx)
		return err
	}
	sp, err := bgp.Start(ctx, cfg, bgp.Options{}, bgp.Events{
		Route:   func(pfx netip.Prefix, add bool) { d.bgpRoute(ctx, pfx, add) },
		Session: func(up bool) { d.bgpSession(ctx, cfg, up) },
	}, d.log)
	if err != nil {
		d.dropBgpPort(ctx)
		return err
	}
	d.bgp.sp, d.bgp.cfg, d.bgp.port = sp, cfg, port.OFPort
	d.bgp.routes, d.bgp.announced = sp, map[netip.Addr]bool{}
	d.log.WithFields(map[string]any{"router-ip": cfg.RouterIP, "as": cfg.AS, "neighbor": cfg.Neighbor,
		"neighbor-as": cfg.NeighborAS}).Info("BGP started: VLAN endpoints are announced to the neighbor, its routes installed")
	for a := range d.localVlanAddrs() {
		d.rec.Enqueue(kindBgpRoute, a.String())
	}
	return nil
}

// localVlanAddrs are the IPv4 addresses of the local endpoints on the VLAN
// bridge: what BGP announces.
func (d *Daemon) localVlanAddrs() map[netip.Addr]bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[netip.Addr]bool{}
	for _, le := range d.locals {
		if le.bridge != ovsdriver.VlanBridge {
			continue
		}
		if a, err := netip.ParseAddr(le.ep.IPAddress); err == nil {
			out[a] = true
		}
	}
	return out
}

// reconcileBgpRoute announces the address of a local VLAN endpoint to the
// BGP neighbor, or withdraws one that no local endpoint has any more (key
// bgproute/<address>, docs/dataplane.md §3.4). Desired: the local
// endpoints; applied: what the running speaker announced. A failed
// announcement or withdrawal is retried by the queue until it converges.
// With no speaker running nothing is announced; a speaker that starts
// enqueues every local address again.
func (d *Daemon) reconcileBgpRoute(ctx context.Context, name string) error {
	a, err := netip.ParseAddr(name)
	if err != nil {
		d.log.WithField("key", name).Error("BGP route key is not an address; dropped")
		return nil
	}
	want := d.localVlanAddrs()[a]
	d.bgp.mu.Lock()
	defer d.bgp.mu.Unlock()
	if d.bgp.routes == nil {
		return nil
	}
	have := d.bgp.announced[a]
	switch {
	case want && !have:
		if err := d.bgp.routes.Announce(ctx, a); err != nil {
			return fmt.Errorf("announce %s: %w", a, err)
		}
		d.bgp.announced[a] = true
	case !want && have:
		if err := d.bgp.routes.Withdraw(ctx, a); err != nil {
			return fmt.Errorf("withdraw %s: %w", a, err)
		}
		delete(d.bgp.announced, a)
	}
	return nil
}

// bgpRouteKeys are the addresses the resync puts back: those announced and
// those to announce.
func (d *Daemon) bgpRouteKeys() []string {
	want := d.localVlanAddrs()
	d.bgp.mu.Lock()
	defer d.bgp.mu.Unlock()
	if d.bgp.routes == nil {
		return nil
	}
	for a := range d.bgp.announced {
		want[a] = true
	}
	keys := make([]string, 0, len(want))
	for a := range want {
		keys = append(keys, kindBgpRoute+"/"+a.String())
	}
	return keys
}

func (d *Daemon) stopBgpLocked(ctx context.Context) {
	if d.bgp.sp == nil {
		return
	}
	d.bgp.sp.Stop()
	d.bgp.sp, d.bgp.routes, d.bgp.announced = nil, nil, nil
	if err := d.vl.FlushBgpRoutes(ctx); err != nil {
		d.log.WithError(err).Warn("flush BGP routes")
	}
	if err := d.vl.SetBgpPeerMAC(ctx, nil); err != nil {
		d.log.WithError(err).Warn("clear the BGP peer")
	}
	d.dropBgpPort(ctx)
}

func (d *Daemon) dropBgpPort(ctx context.Context) {
	if err := d.vl.SetBgpPort(ctx, 0, nil); err != nil {
		d.log.WithError(err).Warn("clear the BGP port")
	}
	if err := d.drv.DeleteEndpoint(ctx, ovsdriver.VlanBridge, bgpPortName); err != nil {
		d.log.WithError(err).Warn("delete the BGP port")
	}
}

// stopBgp ends the speaker at shutdown; the port and flows stay (as every
// datapath flow does across a restart).
func (d *Daemon) stopBgp() {
	d.bgp.mu.Lock()
	defer d.bgp.mu.Unlock()
	if d.bgp.sp != nil {
		d.bgp.sp.Stop()
		d.bgp.sp, d.bgp.routes, d.bgp.announced = nil, nil, nil
	}
}

// bgpRoute installs or removes a route learned from the neighbor.
func (d *Daemon) bgpRoute(ctx context.Context, pfx netip.Prefix, add bool) {
	n := &net.IPNet{IP: net.IP(pfx.Addr().AsSlice()), Mask: net.CIDRMask(pfx.Bits(), 32)}
	var err error
	if add {
		err = d.vl.AddBgpRoute(ctx, n)
	} else {
		err = d.vl.RemoveBgpRoute(ctx, n)
	}
	if err != nil {
		d.log.WithError(err).Warnf("BGP route %s", pfx)
	}
}

// bgpSession learns the neighbor's MAC from the kernel (the session's own ARP on
// inb01) once the session is up, so learned routes can be installed.
func (d *Daemon) bgpSession(ctx context.Context, cfg bgp.Config, up bool) {
	if !up {
		return
	}
	for i := 0; i < 20 && ctx.Err() == nil; i++ {
		if mac := neighborMAC(cfg.Neighbor); mac != nil {
			if err := d.vl.SetBgpPeerMAC(ctx, mac); err != nil {
				d.log.WithError(err).Warn("set the BGP peer MAC")
			}
			return
		}
		if !ctxutil.Sleep(ctx, 250*time.Millisecond) {
			return
		}
	}
	d.log.WithField("neighbor", cfg.Neighbor).Warn("BGP session up but the neighbor's MAC is not in the ARP table of " + bgpPortName)
}

func neighborMAC(ip netip.Addr) net.HardwareAddr {
	link, err := netlink.LinkByName(bgpPortName)
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

// bgpEndpoint asks for a local VLAN endpoint's address to be announced or
// withdrawn, as d.locals now says (reconcileBgpRoute), when a speaker runs.
func (d *Daemon) bgpEndpoint(le *localEndpoint) {
	if le.bridge != ovsdriver.VlanBridge {
		return
	}
	a, err := netip.ParseAddr(le.ep.IPAddress)
	if err != nil {
		return
	}
	d.bgp.mu.Lock()
	running := d.bgp.routes != nil
	d.bgp.mu.Unlock()
	if running {
		d.rec.Enqueue(kindBgpRoute, a.String())
	}
}

// inspectBgp serves /inspect/bgp (docs/daemons.md §6.5).
func (d *Daemon) inspectBgp(w http.ResponseWriter, r *http.Request) {
	if !d.vlanRouting() {
		http.Error(w, "Error fetching bgp: the VLAN bridge does not route (forwarding mode "+d.glob.FwdMode+")", http.StatusInternalServerError)
		return
	}
	d.bgp.mu.Lock()
	sp, problem := d.bgp.sp, d.bgp.problem
	d.bgp.mu.Unlock()
	out := map[string]any{"datapath": "vlrouter", "installedRoutes": d.vl.BgpRoutes()}
	switch {
	case sp != nil:
		st := sp.State(r.Context())
		out["state"], out["routerIP"], out["as"] = "running", st.RouterIP, st.AS
		out["neighbors"], out["announced"], out["learned"] = st.Neighbors, st.Announced, st.Learned
	case problem != "":
		out["state"], out["message"] = "error", problem
	default:
		out["state"], out["message"] = "not configured", bgpNotConfigured
	}
	writeJSON(w, out)
}
