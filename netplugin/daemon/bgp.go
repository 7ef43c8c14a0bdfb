package daemon

import (
	"net/http"
	"net/netip"

	"github.com/contiv/netplugin/netplugin/bgprec"
	"github.com/contiv/netplugin/netplugin/ovsdriver"
)

// vlanRouting reports whether the VLAN bridge routes (routing mode with uplinks).
func (d *Daemon) vlanRouting() bool {
	return d.glob.FwdMode == "routing" && len(d.cfg.VlanUplinks) > 0
}

// newBgp makes the BGP reconciler (netplugin/bgprec) over the VLAN bridge.
func (d *Daemon) newBgp() *bgprec.Reconciler {
	return bgprec.New(bgprec.Config{Host: d.cfg.HostLabel, Routing: d.vlanRouting(), Entries: d.want.bgp,
		Local: d.localVlanAddrs, Queue: d.rec, Datapath: d.vl, Ports: d.drv, Log: d.log})
}

// localVlanAddrs are the IPv4 addresses of the local endpoints on the VLAN
// bridge: what BGP announces.
func (d *Daemon) localVlanAddrs() map[netip.Addr]bool {
	out := map[netip.Addr]bool{}
	for _, le := range d.eps.All() {
		if le.Bridge != ovsdriver.VlanBridge {
			continue
		}
		if a, err := netip.ParseAddr(le.EP.IPAddress); err == nil {
			out[a] = true
		}
	}
	return out
}

// bgpEndpoint asks for a local VLAN endpoint's address to be announced or
// withdrawn, as the attach service now says, when a speaker runs.
func (d *Daemon) bgpEndpoint(le localEndpoint) {
	if le.Bridge != ovsdriver.VlanBridge {
		return
	}
	if a, err := netip.ParseAddr(le.EP.IPAddress); err == nil {
		d.bgp.Changed(a)
	}
}

// stopBgp ends the speaker at shutdown; the port and flows stay (as every
// datapath flow does across a restart).
func (d *Daemon) stopBgp() {
	if d.bgp != nil {
		d.bgp.Shutdown()
	}
}

// inspectBgp serves /inspect/bgp (docs/daemons.md §6.5).
func (d *Daemon) inspectBgp(w http.ResponseWriter, r *http.Request) {
	if !d.vlanRouting() {
		http.Error(w, "Error fetching bgp: the VLAN bridge does not route (forwarding mode "+d.glob.FwdMode+")", http.StatusInternalServerError)
		return
	}
	writeJSON(w, d.bgp.Inspect(r.Context()))
}
