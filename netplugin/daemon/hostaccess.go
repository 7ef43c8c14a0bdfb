package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/contiv/netplugin/netplugin/hostnat"
	"github.com/contiv/netplugin/netplugin/ovsdriver"
	"github.com/contiv/netplugin/ofnet/agent"
)

// Host access states (applied.hostAccess): what reconcileHostAccess last
// converged to.
const (
	hostAccessOn      = "on"      // contivh0 NAT flows and the host masquerade rule in place
	hostAccessOff     = "off"     // no rule of a previous run left
	hostAccessIgnored = "ignored" // asked for, but it cannot work here (reported once)
)

// wantHostAccess is the desired host access state: --host-access asks for it,
// and only the routing datapath can give it (docs/dataplane.md §3.7). Both
// are fixed for the life of the process.
func (d *Daemon) wantHostAccess() string {
	switch {
	case !d.cfg.HostAccess:
		return hostAccessOff
	case d.glob.FwdMode != "routing":
		return hostAccessIgnored
	}
	return hostAccessOn
}

// reconcileHostAccess ensures the host port contivh0 and turns host access
// on or off (docs/dataplane.md §3.7), key hostaccess/<host>. With --host-access in routing mode the VXLAN
// routing datapath NATs container traffic to contivh0 and the host
// masquerades it; without it, a NAT rule a previous run left is removed and
// nothing is added. Every step is idempotent; a failed one (the host port,
// the datapath, iptables or nft) is retried by the queue until it
// converges. A setting that cannot work is reported once and not retried.
// Both settings are fixed for the life of the process, so once converged
// the key does nothing.
func (d *Daemon) reconcileHostAccess(ctx context.Context, _ string) error {
	want := d.wantHostAccess()
	d.mu.Lock()
	have := d.applied.hostAccess
	d.mu.Unlock()
	if have == want {
		return nil
	}
	// contivh0 is there in every mode (docs/dataplane.md §3.7).
	hp, err := d.drv.EnsureHostPort(ctx, d.glob.PvtSubnet)
	if err != nil {
		return fmt.Errorf("host port contivh0: %w", err)
	}
	switch want {
	case hostAccessIgnored:
		d.log.Warn("host access needs forwarding mode routing; --host-access ignored")
	case hostAccessOff:
		err = d.hostAccessOff(ctx)
	default:
		err = d.hostAccessOn(ctx, hp)
	}
	if errors.Is(err, errHostAccessRefused) {
		d.log.WithError(err).Error("host access refused")
		want, err = hostAccessIgnored, nil
	}
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.applied.hostAccess = want
	d.mu.Unlock()
	return nil
}

// errHostAccessRefused marks a host access setting that retrying cannot fix.
var errHostAccessRefused = errors.New("host access cannot work with this configuration")

// newHostNAT is the host masquerade rule of the private subnet; d.natOpts
// (tests) picks the backend and runs the commands.
func (d *Daemon) newHostNAT() (*hostnat.NAT, error) {
	cfg := d.natOpts
	cfg.Subnet, cfg.HostIf = d.glob.PvtSubnet, ovsdriver.HostPortName
	nat, err := hostnat.New(cfg)
	if err != nil && !errors.Is(err, hostnat.ErrNoTool) {
		return nil, fmt.Errorf("%w: %w", errHostAccessRefused, err)
	}
	return nat, err
}

// hostAccessOff removes a NAT rule a previous run left.
func (d *Daemon) hostAccessOff(ctx context.Context) error {
	nat, err := d.newHostNAT()
	if errors.Is(err, hostnat.ErrNoTool) {
		return nil // no firewall tool: no rule can be left either
	}
	if err != nil {
		return err
	}
	if err := nat.Remove(ctx); err != nil {
		return fmt.Errorf("host access off: remove a left-over NAT rule: %w", err)
	}
	return nil
}

// hostAccessOn ensures the datapath's NAT flows to the host port hp and the
// host's masquerade rule, in that order.
func (d *Daemon) hostAccessOn(ctx context.Context, hp ovsdriver.EndpointPort) error {
	addr, mac, err := ovsdriver.PrivateAddr(d.glob.PvtSubnet, 0xfffe)
	if err != nil {
		return fmt.Errorf("%w: private subnet: %w", errHostAccessRefused, err)
	}
	nat, err := d.newHostNAT()
	if err != nil {
		return fmt.Errorf("host access: host NAT: %w", err)
	}
	if err := d.vx.SetHostAccess(ctx, agent.HostAccess{Port: hp.OFPort, MAC: mac, Addr: addr}); err != nil {
		return fmt.Errorf("host access: datapath: %w", err)
	}
	if err := nat.Ensure(ctx); err != nil {
		return fmt.Errorf("host access: host NAT rule: %w", err)
	}
	d.mu.Lock()
	d.hostNAT = nat
	d.mu.Unlock()
	d.log.WithField("backend", nat.Backend()).WithField("subnet", (&net.IPNet{IP: addr.IP.Mask(addr.Mask), Mask: addr.Mask}).String()).
		Info("host access on: contivh0 NAT flows and the host masquerade rule are in place")
	return nil
}

// cleanupHostAccess removes the host NAT rule when netplugin stops.
func (d *Daemon) cleanupHostAccess() {
	d.mu.Lock()
	nat := d.hostNAT
	d.mu.Unlock()
	if nat == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := nat.Remove(ctx); err != nil {
		d.log.WithError(err).Warn("remove the host NAT rule")
	}
}
