package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"

	"k8s.io/client-go/kubernetes"

	"github.com/contiv/netplugin/mgmtfn/k8splugin"
	"github.com/contiv/netplugin/mgmtfn/k8splugin/kubewatch"
	"github.com/contiv/netplugin/mgmtfn/mesosplugin"
	"github.com/contiv/netplugin/netplugin/nsutil"
	"github.com/contiv/netplugin/state"
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
	labels := d.cfg.PodLabels
	if labels == nil {
		w, err := d.startKubeWatch(ctx, wg)
		if err != nil {
			return err
		}
		if w != nil {
			labels = w
		}
	}
	srv, err := k8splugin.New(k8splugin.Config{Attacher: d, Checker: d, Labels: labels,
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

// startKubeWatch runs the pod and namespace informers of the API server
// the configuration names (docs/k8s.md, "Informers"); nil when there is
// none. Lookups wait for the first list, so the start does not.
func (d *Daemon) startKubeWatch(ctx context.Context, wg *sync.WaitGroup) (*kubewatch.Watcher, error) {
	if d.cfg.K8sConfig == "" && os.Getenv("KUBERNETES_SERVICE_HOST") == "" {
		d.log.Info("kubernetes: no API server configured (--k8s-config): pods are placed by the labels of their CNI requests")
		return nil, nil
	}
	rc, err := kubewatch.RESTConfig(d.cfg.K8sConfig)
	if err != nil {
		return nil, err
	}
	rc.UserAgent = "contiv-netplugin/" + d.cfg.Version
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client for %s: %w", rc.Host, err)
	}
	w := kubewatch.New(cs, kubewatch.Options{})
	goRun(ctx, wg, w.Run)
	if err := d.startKubeServices(ctx, wg, cs); err != nil {
		return nil, err
	}
	d.startNetpol(ctx, wg, cs)
	d.log.WithField("apiserver", rc.Host).Info("kubernetes: watching pods, namespaces, services, endpoint slices and network policies")
	return w, nil
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
	epID := state.EndpointID(ref.Tenant, ref.Network, ref.ContainerID)
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

// DefaultMesosStateDir holds the Mesos CNI server's attachment records.
const DefaultMesosStateDir = "/var/run/contiv/mesos"

// startMesos serves the Mesos CNI API for netcontiv (docs/mesos.md) in
// every mode, as the original did, unless MesosSocket is "".
func (d *Daemon) startMesos(ctx context.Context, wg *sync.WaitGroup, errc chan<- error) error {
	if d.cfg.MesosSocket == "" {
		return nil
	}
	dir := d.cfg.MesosStateDir
	if dir == "" {
		dir = DefaultMesosStateDir
	}
	srv, err := mesosplugin.New(mesosplugin.Config{Attacher: d, Checker: d, StateDir: dir, Log: d.log.WithField("api", "mesos")})
	if err != nil {
		return err
	}
	goRun(ctx, wg, func(ctx context.Context) {
		if err := srv.Serve(ctx, d.cfg.MesosSocket); err != nil {
			errc <- fmt.Errorf("Mesos CNI server: %w", err)
		}
	})
	return nil
}
