package netrec

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/ofnet/agent"
	"github.com/contiv/netplugin/state"
	"github.com/contiv/netplugin/utils/faulttest"
	"github.com/contiv/netplugin/utils/logtest"
)

// fakeDP holds networks by VLAN.
type fakeDP struct {
	*faulttest.Faults
	mu   sync.Mutex
	nets map[uint16]bool
}

func (f *fakeDP) AddNetwork(_ context.Context, vlan uint16, _ uint32, _, _ string) error {
	if err := f.Call("AddNetwork"); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nets[vlan] = true
	return nil
}

func (f *fakeDP) RemoveNetwork(_ context.Context, vlan uint16, _ uint32, _, _ string) error {
	if err := f.Call("RemoveNetwork"); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.nets, vlan)
	return nil
}

func (f *fakeDP) UpdateLocalEndpoint(context.Context, agent.EndpointInfo) error {
	return f.Call("UpdateLocalEndpoint")
}

func (f *fakeDP) has(vlan uint16) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.nets[vlan]
}

type none[T any] struct{}

func (none[T]) Get(string) (T, bool) { var v T; return v, false }

// A network applied but no longer in the store (a delete missed while the
// watch was away) is among the keys the resync puts back, and its
// reconcile removes it, retrying a failed removal.
func TestLeftoverNetworkRemoved(t *testing.T) {
	dp := &fakeDP{Faults: faulttest.New(), nets: map[uint16]bool{}}
	r := New(Config{Networks: none[state.Network]{}, Groups: none[state.EndpointGroup]{},
		Datapath: func(state.Network) Datapath { return dp }, Log: logtest.New(t, logrus.DebugLevel)})
	nw := state.Network{Common: state.Common{ID: "n1.t1"}, Tenant: "t1", PktTagType: "vxlan", PktTag: 100, ExtPktTag: 5000}
	ctx := context.Background()
	if err := dp.AddNetwork(ctx, 100, 5000, "", "t1"); err != nil {
		t.Fatal(err)
	}
	r.applied[nw.ID] = nw
	if keys := r.Applied(); !slices.Equal(keys, []string{"n1.t1"}) {
		t.Fatalf("resync keys %v", keys)
	}
	dp.FailNext("RemoveNetwork", 2)
	for i := range 2 {
		if err := r.ReconcileNetwork(ctx, nw.ID); err == nil {
			t.Fatalf("attempt %d succeeded with the removal failing", i+1)
		}
	}
	if err := r.ReconcileNetwork(ctx, nw.ID); err != nil {
		t.Fatal(err)
	}
	if dp.has(100) || r.IsApplied(nw.ID) {
		t.Errorf("leftover network still in the datapath (%v) or applied (%v)", dp.has(100), r.IsApplied(nw.ID))
	}
}
