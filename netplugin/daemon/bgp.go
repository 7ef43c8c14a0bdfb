package daemon

import (
	"context"
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
	d.log.WithFields(map[string]any{"router-ip": cfg.RouterIP, "as": cfg.AS, "neighbor": cfg.Neighbor,
		"neighbor-as": cfg.NeighborAS}).Info("BGP started: VLAN endpoints are announced to the neighbor, its routes installed")
	d.mu.Lock()
	var ips []netip.Addr
	for _, le := range d.locals {
		if le.bridge != ovsdriver.VlanBridge {
			continue
		}
		if a, err := netip.ParseAddr(le.ep.IPAddress); err == nil {
			ips = append(ips, a)
		}
	}
	d.mu.Unlock()
	for _, a := range ips {
		if err := sp.Announce(ctx, a); err != nil {
			d.log.WithError(err).Warn("announce endpoint")
		}
	}
	return nil
}

func (d *Daemon) stopBgpLocked(ctx context.Context) {
	if d.bgp.sp == nil {
		return
	}
	d.bgp.sp.Stop()
	d.bgp.sp = nil
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
		d.bgp.sp = nil
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

// bgpEndpoint announces (add) or withdraws a local VLAN endpoint's address.
func (d *Daemon) bgpEndpoint(ctx context.Context, le *localEndpoint, add bool) {
	if le.bridge != ovsdriver.VlanBridge {
		return
	}
	a, err := netip.ParseAddr(le.ep.IPAddress)
	if err != nil {
		return
	}
	d.bgp.mu.Lock()
	sp := d.bgp.sp
	d.bgp.mu.Unlock()
	if sp == nil {
		return
	}
	if add {
		err = sp.Announce(ctx, a)
	} else {
		err = sp.Withdraw(ctx, a)
	}
	if err != nil {
		d.log.WithError(err).Warn("BGP endpoint route")
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
