package agent

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/contiv/netplugin/ofnet/ofmaster"
	"github.com/contiv/netplugin/ofnet/ofrpc"
)

// remoteEP is remote endpoint i (of host origin) in the network of
// startRPCAgent (VNI 5000, VRF default).
func remoteEP(origin string, i int, ts time.Time) ofrpc.OfnetEndpoint {
	ip := net.IPv4(198, 19, 64+byte(i>>8), byte(i))
	return ofrpc.OfnetEndpoint{EndpointID: ip.String() + ":default", EndpointType: ofrpc.EndpointTypeInternal,
		EndpointGroup: 5, IpAddr: ip, IpMask: net.IPv4(255, 255, 255, 255), Vrf: "default",
		MacAddrStr: macFor(ip).String(), Vlan: 1, Vni: 5000, OriginatorIp: net.ParseIP(origin), Timestamp: ts}
}

// OfnetAgent.EndpointAddBatch adds each endpoint as EndpointAdd would
// (its own and stale ones ignored) and answers which it refused.
func TestEndpointAddBatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := startRPCAgent(t, ctx, "127.0.0.21", 0, true)
	pool := ofrpc.NewPool()
	defer pool.Close()
	ts := time.Now().UTC()
	newer := remoteEP("198.18.0.2", 1, ts.Add(time.Second))
	if err := a.AddRemoteEndpoint(ctx, newer); err != nil {
		t.Fatal(err)
	}
	stale := remoteEP("198.18.0.2", 1, ts)
	stale.EndpointGroup = 9
	bad := remoteEP("198.18.0.2", 2, ts)
	bad.MacAddrStr = "not a mac"
	own := remoteEP("127.0.0.21", 3, ts)
	batch := ofrpc.OfnetEndpointBatch{Endpoints: []ofrpc.OfnetEndpoint{stale, bad, own}}
	for i := 10; i < 20; i++ {
		batch.Endpoints = append(batch.Endpoints, remoteEP("198.18.0.2", i, ts))
	}
	var reply ofrpc.OfnetBatchReply
	if err := pool.Call(ctx, a.node.Addr(), ofrpc.AgentEndpointAddBatch, batch, &reply); err != nil {
		t.Fatal(err)
	}
	if len(reply.Failed) != 1 || reply.Failed[0].EndpointID != bad.EndpointID {
		t.Fatalf("failed %+v, want only %s", reply.Failed, bad.EndpointID)
	}
	got := map[string]ofrpc.OfnetEndpoint{}
	for _, r := range a.RemoteEndpoints() {
		got[r.EndpointID] = r
	}
	if len(got) != 11 || got[newer.EndpointID].EndpointGroup != 5 {
		t.Fatalf("remotes %v: want the newer copy of %s and the 10 others", got, newer.EndpointID)
	}
	if _, ok := got[own.EndpointID]; ok {
		t.Fatal("an endpoint of this host was added")
	}
}

// A real master replays a few thousand endpoints to a real agent in
// batches.
func TestMasterReplaysInBatches(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	mln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := ofmaster.New(ofmaster.Config{Logger: testLogger(t)})
	wg.Go(func() { _ = m.Serve(ctx, mln) })
	pool := ofrpc.NewPool()
	defer pool.Close()
	const n = 2000
	ts := time.Now().UTC()
	for i := range n {
		var ok bool
		if err := pool.Call(ctx, mln.Addr().String(), ofrpc.MasterEndpointAdd, remoteEP("198.18.0.2", i, ts), &ok); err != nil {
			t.Fatal(err)
		}
	}
	a := startRPCAgent(t, ctx, "127.0.0.22", 0, true)
	if err := a.AddMaster(ctx, ofrpc.OfnetNode{HostAddr: "127.0.0.1", HostPort: uint16(mln.Addr().(*net.TCPAddr).Port)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the replay", func() bool { return len(a.RemoteEndpoints()) == n }, func() string {
		return fmt.Sprintf("agent holds %d remote endpoints; master stats %+v", len(a.RemoteEndpoints()), m.State().AgentStats)
	})
	st := m.State().AgentStats[a.node.Addr()]
	if st.Sent[ofrpc.AgentEndpointAddBatch] == 0 || st.Sent[ofrpc.AgentEndpointAdd] != 0 {
		t.Fatalf("master stats %+v: want batches only", st)
	}
}
