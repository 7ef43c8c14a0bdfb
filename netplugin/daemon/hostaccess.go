package daemon

import (
	"context"
	"net"
	"time"

	"github.com/contiv/netplugin/netplugin/hostnat"
	"github.com/contiv/netplugin/netplugin/ovsdriver"
	"github.com/contiv/netplugin/ofnet/agent"
)

// setupHostAccess turns host access on or off (docs/dataplane.md §3.7). With
// --host-access in routing mode the VXLAN routing datapath NATs container
// traffic to contivh0 and the host masquerades it; without it, a NAT rule a
// previous run left is removed and nothing is added.
func (d *Daemon) setupHostAccess(ctx context.Context, hp ovsdriver.EndpointPort) {
	nat, err := hostnat.New(hostnat.Config{Subnet: d.glob.PvtSubnet, HostIf: ovsdriver.HostPortName})
	if err != nil {
		if d.cfg.HostAccess {
			d.log.WithError(err).Error("host access: no host NAT")
		}
		return
	}
	if !d.cfg.HostAccess {
		if err := nat.Remove(ctx); err != nil {
			d.log.WithError(err).Debug("host access off: remove a left-over NAT rule")
		}
		return
	}
	if d.glob.FwdMode != "routing" {
		d.log.Warn("host access needs forwarding mode routing; --host-access ignored")
		return
	}
	addr, mac, err := ovsdriver.PrivateAddr(d.glob.PvtSubnet, 0xfffe)
	if err != nil {
		d.log.WithError(err).Error("host access: private subnet")
		return
	}
	if err := d.vx.SetHostAccess(ctx, agent.HostAccess{Port: hp.OFPort, MAC: mac, Addr: addr}); err != nil {
		d.log.WithError(err).Error("host access: datapath")
		return
	}
	if err := nat.Ensure(ctx); err != nil {
		d.log.WithError(err).Error("host access: host NAT rule")
		return
	}
	d.hostNAT = nat
	d.log.WithField("backend", nat.Backend()).WithField("subnet", (&net.IPNet{IP: addr.IP.Mask(addr.Mask), Mask: addr.Mask}).String()).
		Info("host access on: contivh0 NAT flows and the host masquerade rule are in place")
}

// cleanupHostAccess removes the host NAT rule when netplugin stops.
func (d *Daemon) cleanupHostAccess() {
	if d.hostNAT == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.hostNAT.Remove(ctx); err != nil {
		d.log.WithError(err).Warn("remove the host NAT rule")
	}
}
