package attachsvc

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/contivmodel/modeltest"
	"github.com/contiv/netplugin/netplugin/ovsdriver"
	"github.com/contiv/netplugin/netplugin/reconcile"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/ofnet/agent"
	"github.com/contiv/netplugin/state"
	"github.com/contiv/netplugin/utils/faulttest"
	"github.com/contiv/netplugin/utils/logtest"
	"github.com/contiv/netplugin/utils/runtest"
)

// operKV is a store whose writes and deletes of oper state fail as planned.
type operKV struct {
	*modeltest.MemKV
	*faulttest.Faults
}

func (k operKV) Put(ctx context.Context, key string, v []byte, opts ...objdb.OpOption) (int64, error) {
	if strings.HasPrefix(key, state.PrefixEndpointOper) {
		if err := k.Call("Put"); err != nil {
			return 0, err
		}
	}
	return k.MemKV.Put(ctx, key, v, opts...)
}

func (k operKV) Delete(ctx context.Context, key string, opts ...objdb.OpOption) error {
	if strings.HasPrefix(key, state.PrefixEndpointOper) {
		if err := k.Call("Delete"); err != nil {
			return err
		}
	}
	return k.MemKV.Delete(ctx, key, opts...)
}

// okPorts, okDatapath and vxlanCluster never fail.
type okPorts struct{}

func (okPorts) CreateEndpoint(_ context.Context, spec ovsdriver.EndpointSpec) (ovsdriver.EndpointPort, error) {
	return ovsdriver.EndpointPort{EndpointID: spec.EndpointID, PortName: "vvport1", IntfName: "vport1", OFPort: 11}, nil
}
func (okPorts) DeleteEndpoint(context.Context, string, string) error { return nil }

type okDatapath struct{}

func (okDatapath) AddLocalEndpoint(context.Context, agent.EndpointInfo) error { return nil }
func (okDatapath) RemoveLocalEndpoint(context.Context, uint32) error          { return nil }

type vxlanCluster struct{}

func (vxlanCluster) Network(context.Context, string) (state.Network, error) {
	return state.Network{}, nil
}
func (vxlanCluster) KnownNetwork(string) (state.Network, bool) { return state.Network{}, false }
func (vxlanCluster) Group(string) (state.EndpointGroup, bool)  { return state.EndpointGroup{}, false }
func (vxlanCluster) EndpointInfo(Local, state.Network) agent.EndpointInfo {
	return agent.EndpointInfo{}
}
func (vxlanCluster) Release(context.Context, string) error { return nil }

// The oper state of a local endpoint was only logged when its write
// failed (issue 25 item 3): the write fails 3 times and the clear at
// removal twice, and both converge through the queue.
func TestOperStateRetriesUntilConverged(t *testing.T) {
	log := logtest.New(t, logrus.DebugLevel)
	kv := operKV{MemKV: modeltest.NewMemKV(), Faults: faulttest.New()}
	st := state.New(kv)
	q := reconcile.New(log, time.Millisecond, 20*time.Millisecond)
	var mu sync.Mutex
	failed := 0
	q.Failed = func(string) { mu.Lock(); failed++; mu.Unlock() }
	s := New(Config{Host: "host1", Datapath: func(string) Datapath { return okDatapath{} }, Ports: okPorts{},
		Store: st, Cluster: vxlanCluster{}, Enqueue: q.Enqueue, Log: log})
	q.Handle(KindOper, s.ReconcileOper)
	runtest.GoLoop(t, func(ctx context.Context) { q.Run(ctx, reconcile.Workers) })
	ctx := context.Background()

	kv.FailNext("Put", 3)
	ep := state.Endpoint{Common: state.Common{ID: "n1.t1-c1"}, NetID: "n1.t1", EndpointID: "c1", HomingHost: "host1",
		IPAddress: "198.18.10.5", MacAddress: "02:02:c6:12:0a:05"}
	if _, err := s.AddLocal(ctx, ep, state.Network{Common: state.Common{ID: "n1.t1"}, PktTagType: "vxlan"}); err != nil {
		t.Fatal(err)
	}
	faulttest.Eventually(t, "oper state written", func() bool {
		o, err := st.EndpointOper.Read(ctx, ep.ID)
		return err == nil && o.PortName == "vvport1" && q.Len() == 0
	})
	kv.FailNext("Delete", 2)
	if err := s.RemoveLocal(ctx, ep.ID); err != nil {
		t.Fatal(err)
	}
	faulttest.Eventually(t, "oper state cleared", func() bool {
		_, err := st.EndpointOper.Read(ctx, ep.ID)
		return errors.Is(err, objdb.ErrNotFound) && q.Len() == 0
	})
	if kv.Count("Put") != 4 || kv.Count("Delete") != 3 {
		t.Errorf("%d writes and %d clears, want 4 and 3", kv.Count("Put"), kv.Count("Delete"))
	}
	mu.Lock()
	defer mu.Unlock()
	if failed != 2+1 { // the first write and clear fail outside the queue
		t.Errorf("%d failed reconciles, want 3", failed)
	}
}
