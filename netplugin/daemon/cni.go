package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/contiv/netplugin/mgmtfn/k8splugin"
	"github.com/contiv/netplugin/netplugin/nsutil"
	"github.com/contiv/netplugin/utils/daemonflags"
)

// DefaultCNIStateDir holds the CNI server's attachment records.
const DefaultCNIStateDir = "/var/run/contiv/cni"

// startCNI serves the Kubernetes CNI API in kubernetes mode (docs/daemons.md
// §8.2): pods are placed by their labels and attached through Attach.
func (d *Daemon) startCNI(ctx context.Context, wg *sync.WaitGroup, errc chan<- error) error {
	if d.cfg.Common.Mode != daemonflags.ModeKubernetes {
		return nil
	}
	srv, err := k8splugin.New(k8splugin.Config{Attacher: d, Checker: d, Labels: d.cfg.PodLabels,
		StateDir: d.cfg.CNIStateDir, Ready: d.cniReady, Log: d.log.WithField("api", "cni")})
	if err != nil {
		return err
	}
	goRun(ctx, wg, func(ctx context.Context) {
		if err := srv.Serve(ctx, d.cfg.CNISocket); err != nil {
			errc <- fmt.Errorf("CNI server: %w", err)
		}
	})
	return nil
}

// cniReady answers CNI STATUS: ADD needs a known netmaster.
func (d *Daemon) cniReady(context.Context) error {
	select {
	case <-d.mastersSeen:
		return nil
	default:
		return errors.New("netplugin knows no netmaster yet")
	}
}

// CheckAttachment verifies a CNI attachment: its endpoint is local to this
// host, and its interface is in the namespace, up, with its MAC and
// address.
func (d *Daemon) CheckAttachment(_ context.Context, ref k8splugin.AttachmentRef) error {
	epID := ref.Network + "." + ref.Tenant + "-" + ref.ContainerID
	d.mu.Lock()
	_, ok := d.locals[epID]
	d.mu.Unlock()
	if !ok {
		return fmt.Errorf("endpoint %s is not attached on this host", epID)
	}
	var addr *net.IPNet
	if ref.IPAddress != "" {
		ip, n, err := net.ParseCIDR(ref.IPAddress)
		if err != nil {
			return fmt.Errorf("recorded address %q: %w", ref.IPAddress, err)
		}
		addr = &net.IPNet{IP: ip, Mask: n.Mask}
	}
	var mac net.HardwareAddr
	if ref.MacAddress != "" {
		mac, _ = net.ParseMAC(ref.MacAddress)
	}
	return nsutil.CheckInNS(ref.NetNS, ref.IfName, addr, mac)
}

var _ k8splugin.Checker = (*Daemon)(nil)
