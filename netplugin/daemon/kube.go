package daemon

import (
	"context"
	"sync"

	"k8s.io/client-go/kubernetes"

	"github.com/contiv/netplugin/api/attach"
	"github.com/contiv/netplugin/mgmtfn/k8splugin/k8ssvc"
	"github.com/contiv/netplugin/netplugin/netpolrec"
	"github.com/contiv/netplugin/netplugin/svcrec"
)

// startKubeServices follows the API server's Services and EndpointSlices
// and keeps them as service load balancers in both datapaths (docs/k8s.md,
// "Services").
func (d *Daemon) startKubeServices(ctx context.Context, wg *sync.WaitGroup, cs kubernetes.Interface) error {
	c, err := k8ssvc.New(cs, &svcrec.KubeSink{Datapaths: d.serviceDatapaths()},
		k8ssvc.Options{Log: d.log.WithField("k8s", "services")})
	if err != nil {
		return err
	}
	goRun(ctx, wg, c.Run)
	return nil
}

// startNetpol enforces Kubernetes NetworkPolicy (netplugin/netpolrec) on
// both bridges.
func (d *Daemon) startNetpol(ctx context.Context, wg *sync.WaitGroup, cs kubernetes.Interface) {
	var dps []netpolrec.Datapath
	for _, a := range []datapath{d.vx, d.vl} {
		if a != nil {
			dps = append(dps, a)
		}
	}
	d.netpol = netpolrec.New(cs, dps, d.netpolPeers, d.log, d.met.netpolApplyObserver())
	goRun(ctx, wg, d.netpol.Run)
}

// netpolAttached and netpolDetached are the attach service's hooks: the
// enforcer is set before the CNI server starts, or never (no API server).
func (d *Daemon) netpolAttached(ctx context.Context, req attach.Request, cidr string) error {
	return d.netpol.Attached(ctx, req, cidr)
}

func (d *Daemon) netpolDetached(req attach.DetachRequest) { d.netpol.Detached(req) }
