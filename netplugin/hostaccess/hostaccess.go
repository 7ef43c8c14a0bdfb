// Package hostaccess is netplugin's host access reconciler (docs/dataplane.md
// §3.7, key hostaccess/<host> of docs/architecture.md "netplugin
// reconcilers"): it ensures the host port contivh0 and, with --host-access in
// routing mode, the VXLAN routing datapath's NAT flows to it and the host's
// masquerade rule; without --host-access it removes a rule a previous run
// left. Desired state comes from the configuration (fixed for the life of
// the process), applied state is kept here. Every step is idempotent; a
// failed one returns an error so the work queue (netplugin/reconcile) retries
// it until it converges. A setting that cannot work is reported once and
// not retried.
package hostaccess

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/netplugin/hostnat"
	"github.com/contiv/netplugin/netplugin/ovsdriver"
	"github.com/contiv/netplugin/ofnet/agent"
)

// States the reconciler converges to (Applied).
const (
	On      = "on"      // contivh0 NAT flows and the host masquerade rule in place
	Off     = "off"     // no rule of a previous run left
	Ignored = "ignored" // asked for, but it cannot work here (reported once)
)

// Datapath is what host access asks of the VXLAN bridge's agent.
type Datapath interface {
	SetHostAccess(ctx context.Context, h agent.HostAccess) error
}

// HostPort is what host access asks of OVSDB (*ovsdriver.Driver).
type HostPort interface {
	EnsureHostPort(ctx context.Context, pvtSubnet string) (ovsdriver.EndpointPort, error)
}

// Config is the desired state and what the reconciler drives.
type Config struct {
	Enabled   bool   // --host-access
	FwdMode   string // the cluster's forwarding mode
	PvtSubnet string // the host-private subnet (a /16)
	Datapath  Datapath
	Ports     HostPort
	// NAT picks the host NAT backend and runs its commands (zero: detect
	// the backend, run in this namespace); Subnet and HostIf are set here.
	NAT hostnat.Config
	Log logrus.FieldLogger
}

// Reconciler converges host access; its methods are safe for concurrent use.
type Reconciler struct {
	cfg Config

	mu      sync.Mutex
	applied string       // "" until converged once
	nat     *hostnat.NAT // the rule this run added
}

// New makes the reconciler of cfg.
func New(cfg Config) *Reconciler { return &Reconciler{cfg: cfg} }

// Want is the desired state: --host-access asks for it, and only the
// routing datapath can give it.
func (r *Reconciler) Want() string {
	switch {
	case !r.cfg.Enabled:
		return Off
	case r.cfg.FwdMode != "routing":
		return Ignored
	}
	return On
}

// Applied is the state last converged to ("" for none yet).
func (r *Reconciler) Applied() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.applied
}

// errRefused marks a setting that retrying cannot fix.
var errRefused = errors.New("host access cannot work with this configuration")

// Reconcile converges host access (a reconcile.Func; the name is the host
// label). Once converged it does nothing: the desired state never changes.
func (r *Reconciler) Reconcile(ctx context.Context, _ string) error {
	want := r.Want()
	if r.Applied() == want {
		return nil
	}
	// contivh0 is there in every mode (docs/dataplane.md §3.7).
	hp, err := r.cfg.Ports.EnsureHostPort(ctx, r.cfg.PvtSubnet)
	if err != nil {
		return fmt.Errorf("host port contivh0: %w", err)
	}
	switch want {
	case Ignored:
		r.cfg.Log.Warn("host access needs forwarding mode routing; --host-access ignored")
	case Off:
		err = r.off(ctx)
	default:
		err = r.on(ctx, hp)
	}
	if errors.Is(err, errRefused) {
		r.cfg.Log.WithError(err).Error("host access refused")
		want, err = Ignored, nil
	}
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.applied = want
	r.mu.Unlock()
	return nil
}

// newNAT is the host masquerade rule of the private subnet.
func (r *Reconciler) newNAT() (*hostnat.NAT, error) {
	cfg := r.cfg.NAT
	cfg.Subnet, cfg.HostIf = r.cfg.PvtSubnet, ovsdriver.HostPortName
	nat, err := hostnat.New(cfg)
	if err != nil && !errors.Is(err, hostnat.ErrNoTool) {
		return nil, fmt.Errorf("%w: %w", errRefused, err)
	}
	return nat, err
}

// off removes a NAT rule a previous run left.
func (r *Reconciler) off(ctx context.Context) error {
	nat, err := r.newNAT()
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

// on ensures the datapath's NAT flows to the host port hp and the host's
// masquerade rule, in that order.
func (r *Reconciler) on(ctx context.Context, hp ovsdriver.EndpointPort) error {
	addr, mac, err := ovsdriver.PrivateAddr(r.cfg.PvtSubnet, 0xfffe)
	if err != nil {
		return fmt.Errorf("%w: private subnet: %w", errRefused, err)
	}
	nat, err := r.newNAT()
	if err != nil {
		return fmt.Errorf("host access: host NAT: %w", err)
	}
	if err := r.cfg.Datapath.SetHostAccess(ctx, agent.HostAccess{Port: hp.OFPort, MAC: mac, Addr: addr}); err != nil {
		return fmt.Errorf("host access: datapath: %w", err)
	}
	if err := nat.Ensure(ctx); err != nil {
		return fmt.Errorf("host access: host NAT rule: %w", err)
	}
	r.mu.Lock()
	r.nat = nat
	r.mu.Unlock()
	r.cfg.Log.WithField("backend", nat.Backend()).WithField("subnet", (&net.IPNet{IP: addr.IP.Mask(addr.Mask), Mask: addr.Mask}).String()).
		Info("host access on: contivh0 NAT flows and the host masquerade rule are in place")
	return nil
}

// Cleanup removes the host NAT rule this run added, when netplugin stops.
func (r *Reconciler) Cleanup() {
	r.mu.Lock()
	nat := r.nat
	r.mu.Unlock()
	if nat == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := nat.Remove(ctx); err != nil {
		r.cfg.Log.WithError(err).Warn("remove the host NAT rule")
	}
}
