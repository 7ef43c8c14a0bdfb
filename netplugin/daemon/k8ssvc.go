package daemon

import (
	"context"
	"sync"

	"k8s.io/client-go/kubernetes"

	"github.com/contiv/netplugin/mgmtfn/k8splugin/k8ssvc"
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
