package attachsvc

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/contivmodel/modeltest"
	"github.com/contiv/netplugin/netplugin/ovsdriver"
	"github.com/contiv/netplugin/netplugin/reconcile"
	"github.com/contiv/netplugin/state"
	"github.com/contiv/netplugin/utils/faulttest"
	"github.com/contiv/netplugin/utils/logtest"
	"github.com/contiv/netplugin/utils/runtest"
)

// stalePorts has OVS ports no endpoint claims; deleting them fails as
// planned.
type stalePorts struct {
	okPorts
	*faulttest.Faults
	mu    sync.Mutex
	ports []ovsdriver.EndpointPort
}

func (p *stalePorts) ExistingEndpoints(_ context.Context, bridge string) ([]ovsdriver.EndpointPort, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if bridge != ovsdriver.VxlanBridge {
		return nil, nil
	}
	return slices.Clone(p.ports), nil
}

func (p *stalePorts) DeleteEndpoint(_ context.Context, _, name string) error {
	if err := p.Call("DeleteEndpoint"); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ports = slices.DeleteFunc(p.ports, func(x ovsdriver.EndpointPort) bool { return x.PortName == name })
	return nil
}

func (p *stalePorts) left() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.ports)
}

// A port found at start that no endpoint claims was only logged when its
// deletion failed (issue 25 item 3): the deletion fails 3 times and
// converges through the queue (staleport/<bridge>/<port>).
func TestStalePortRetriesUntilConverged(t *testing.T) {
	log := logtest.New(t, logrus.DebugLevel)
	q := reconcile.New(log, time.Millisecond, 20*time.Millisecond)
	ports := &stalePorts{Faults: faulttest.New(),
		ports: []ovsdriver.EndpointPort{{EndpointID: "gone.t1-c9", PortName: "vvport9", IntfName: "vport9", OFPort: 19}}}
	s := New(Config{Host: "host1", Datapath: func(string) Datapath { return okDatapath{} }, Ports: ports,
		Store: state.New(modeltest.NewMemKV()), Cluster: vxlanCluster{}, Enqueue: q.Enqueue, Log: log})
	q.Handle(KindStalePort, s.ReconcileStalePort)
	runtest.GoLoop(t, func(ctx context.Context) { q.Run(ctx, reconcile.Workers) })
	ports.FailNext("DeleteEndpoint", 3)
	if err := s.Restore(context.Background(), ports); err != nil {
		t.Fatal(err)
	}
	faulttest.Eventually(t, "stale port deleted", func() bool { return ports.left() == 0 && q.Len() == 0 })
	if n := ports.Count("DeleteEndpoint"); n != 4 {
		t.Errorf("%d deletions, want 4 (3 failures, 1 success)", n)
	}
}
