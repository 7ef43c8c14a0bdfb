package vteprec

import (
	"context"
	"maps"
	"net"
	"slices"
	"sync"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/state"
	"github.com/contiv/netplugin/utils/faulttest"
	"github.com/contiv/netplugin/utils/logtest"
)

// fakeOVS holds tunnels in OVSDB and in the datapath.
type fakeOVS struct {
	*faulttest.Faults
	mu   sync.Mutex
	ovs  map[string]uint32
	dp   map[string]uint32
	next uint32
}

func (f *fakeOVS) EnsureVTEP(_ context.Context, _, ip string, _ int) (uint32, error) {
	if err := f.Call("EnsureVTEP"); err != nil {
		return 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.ovs[ip]; ok {
		return p, nil
	}
	f.next++
	f.ovs[ip] = f.next
	return f.next, nil
}

func (f *fakeOVS) DeleteVTEP(_ context.Context, _, ip string) error {
	if err := f.Call("DeleteVTEP"); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.ovs, ip)
	return nil
}

func (f *fakeOVS) VTEPs(context.Context, string) (map[string]uint32, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.ovs), f.Call("VTEPs")
}

func (f *fakeOVS) AddVtepPort(_ context.Context, port uint32, ip net.IP) error {
	if err := f.Call("AddVtepPort"); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dp[ip.String()] = port
	return nil
}

func (f *fakeOVS) RemoveVtepPort(_ context.Context, _ uint32, ip net.IP) error {
	if err := f.Call("RemoveVtepPort"); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.dp, ip.String())
	return nil
}

// tunnel reports whether ip has a tunnel in OVS and in the datapath.
func (f *fakeOVS) tunnel(ip string) (inOVS, inDP bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, inOVS = f.ovs[ip]
	_, inDP = f.dp[ip]
	return inOVS, inDP
}

func newTest(t *testing.T) (*Reconciler, *fakeOVS, *[]string) {
	f := &fakeOVS{Faults: faulttest.New(), ovs: map[string]uint32{}, dp: map[string]uint32{}, next: 10}
	var probed []string
	r := New(Config{VtepIP: "198.18.0.1", VxlanPort: 4789, Datapath: f, Tunnels: f,
		Enqueue: func(string, string) {}, NewPeer: func(ip string) { probed = append(probed, ip) },
		Log: logtest.New(t, logrus.DebugLevel)})
	return r, f, &probed
}

// reconcileUntil runs the key until it converges and returns the failed
// attempts.
func reconcileUntil(t *testing.T, r *Reconciler, ip string) int {
	t.Helper()
	for n := 0; n < 20; n++ {
		if err := r.Reconcile(context.Background(), ip); err == nil {
			return n
		}
	}
	t.Fatalf("vtep/%s never converged", ip)
	return 0
}

// A member's tunnel whose OVSDB transaction fails 3 times and flow install
// twice converges; the path MTU check hears of the peer once. Once the
// peer leaves the cluster the tunnel goes, the delete failing twice.
func TestTunnelFollowsMembership(t *testing.T) {
	r, f, probed := newTest(t)
	const ip = "198.18.0.2"
	ep := state.Endpoint{Common: state.Common{ID: "n1.t1-c9"}, VtepIP: ip}
	r.EndpointPut(ep, nil)
	f.FailNext("EnsureVTEP", 3)
	f.FailNext("AddVtepPort", 2)
	if n := reconcileUntil(t, r, ip); n != 5 {
		t.Errorf("%d failed attempts, want 5", n)
	}
	if ovs, dp := f.tunnel(ip); !ovs || !dp || !r.Applied(ip) {
		t.Fatalf("tunnel in OVS %v, datapath %v, applied %v", ovs, dp, r.Applied(ip))
	}
	if !slices.Equal(*probed, []string{ip}) {
		t.Errorf("path MTU checks %v, want one of %s", *probed, ip)
	}
	r.EndpointDel(ep)
	f.FailNext("DeleteVTEP", 2)
	if n := reconcileUntil(t, r, ip); n != 2 {
		t.Errorf("%d failed removals, want 2", n)
	}
	if ovs, dp := f.tunnel(ip); ovs || dp || r.Applied(ip) || len(r.InOVS()) != 0 {
		t.Errorf("tunnel left: OVS %v, datapath %v, applied %v", ovs, dp, r.Applied(ip))
	}
}

// At start the tunnels OVS has go back into the datapath; one whose peer
// is no member any more is among the resync keys and is removed.
func TestRestoreThenLeftoverRemoved(t *testing.T) {
	r, f, _ := newTest(t)
	f.ovs["198.18.0.9"] = 40
	if err := r.Restore(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !r.Applied("198.18.0.9") || !slices.Contains(r.Keys(), "198.18.0.9") {
		t.Fatalf("restored tunnel not applied (%v) or not in the resync keys %v", r.Applied("198.18.0.9"), r.Keys())
	}
	reconcileUntil(t, r, "198.18.0.9")
	if ovs, dp := f.tunnel("198.18.0.9"); ovs || dp {
		t.Errorf("leftover tunnel stayed: OVS %v, datapath %v", ovs, dp)
	}
}
