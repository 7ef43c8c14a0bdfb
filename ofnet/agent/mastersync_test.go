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

// rpcAgent is an agent without a switch (its state and desired flows only)
// whose RPC server and master pushes run, reachable at ip (a loopback
// address, so a real master can call it at the address it registers with).
type rpcAgent struct {
	*Agent
	node ofrpc.OfnetNode
	stop func() // ends its RPC server and push loop and waits for them
}

func startRPCAgent(t *testing.T, ctx context.Context, ip string, port uint16, replayed bool) *rpcAgent {
	t.Helper()
	ofln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ofln.Close() })
	rpcln, err := net.Listen("tcp", net.JoinHostPort(ip, fmt.Sprint(port)))
	if err != nil {
		t.Fatal(err)
	}
	p := uint16(rpcln.Addr().(*net.TCPAddr).Port)
	pool := ofrpc.NewPool(ofrpc.WithDialAttempts(2), ofrpc.WithDialInterval(10*time.Millisecond))
	a, err := New(Config{Datapath: DatapathVxlan, LocalIP: net.ParseIP(ip), RPCPort: p, OFListener: ofln,
		Pool: pool, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		_ = ofrpc.Serve(actx, rpcln, map[string]any{"OfnetAgent": &OfnetAgentService{a: a}, "PolicyAgent": &PolicyAgentService{a: a}})
	})
	wg.Go(func() { _ = a.pushLoop(actx) })
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); wg.Wait(); pool.Close() }) }
	t.Cleanup(stop)
	if err := a.AddNetwork(ctx, 1, 5000, "198.19.64.1", "default"); err != nil {
		t.Fatal(err)
	}
	if replayed {
		a.markReplayed() // nothing to replay (FinishRestart says it with a switch)
	}
	return &rpcAgent{Agent: a, node: ofrpc.OfnetNode{HostAddr: ip, HostPort: p}, stop: stop}
}

func hasRemote(a *Agent, id string) bool {
	for _, r := range a.RemoteEndpoints() {
		if r.EndpointID == id {
			return true
		}
	}
	return false
}

// TestMasterDropsEndpointsAgentNoLongerHas reproduces the soak leak
// (docs/soak.md, issue 23): a master holds an endpoint whose deletion it
// never got, and sends it to every agent on each replay, so its remote
// flows (tables 4 and 7) come back on every host. Two ways the deletion
// is missed: (1) the agent deletes the endpoint while the master is not
// in its list (the leader's netmaster.rpc entry expired under the store
// stall and came back: RemoveMaster, AddMaster); (2) the agent restarts
// (netplugin killed) and the endpoint went away while it was down. In both
// the agent then registers again and pushes what it has; the master must
// take that as the agent's complete set, not merge it into what it holds.
func TestMasterDropsEndpointsAgentNoLongerHas(t *testing.T) {
	for _, way := range []string{"master-flap", "agent-restart"} {
		t.Run(way, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			var wg sync.WaitGroup
			defer func() { cancel(); wg.Wait() }()

			mln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			m := ofmaster.New(ofmaster.Config{Logger: testLogger(t)})
			wg.Go(func() { _ = m.Serve(ctx, mln) })
			mnode := ofrpc.OfnetNode{HostAddr: "127.0.0.1", HostPort: uint16(mln.Addr().(*net.TCPAddr).Port)}

			a1 := startRPCAgent(t, ctx, "127.0.0.11", 0, true)
			a2 := startRPCAgent(t, ctx, "127.0.0.12", 0, true)
			gone := EndpointInfo{PortNo: 3, MacAddr: macFor(net.ParseIP("198.19.64.5")), IpAddr: net.ParseIP("198.19.64.5"),
				Vlan: 1, EndpointGroup: 5}
			kept := EndpointInfo{PortNo: 4, MacAddr: macFor(net.ParseIP("198.19.64.6")), IpAddr: net.ParseIP("198.19.64.6"),
				Vlan: 1, EndpointGroup: 5}
			for _, ep := range []EndpointInfo{gone, kept} {
				if err := a1.AddLocalEndpoint(ctx, ep); err != nil {
					t.Fatal(err)
				}
			}
			for _, a := range []*rpcAgent{a1, a2} {
				if err := a.AddMaster(ctx, mnode); err != nil {
					t.Fatal(err)
				}
			}
			goneID, keptID := "198.19.64.5:default", "198.19.64.6:default"
			state := func() string {
				return fmt.Sprintf("master endpoints %v; agent 2 remotes %v", m.State().EndpointDb, a2.RemoteEndpoints())
			}
			waitFor(t, "agent 2 to get both endpoints", func() bool { return hasRemote(a2.Agent, goneID) && hasRemote(a2.Agent, keptID) }, state)

			switch way {
			case "master-flap":
				if err := a1.RemoveMaster(ctx, mnode); err != nil {
					t.Fatal(err)
				}
				if err := a1.RemoveLocalEndpoint(ctx, gone.PortNo); err != nil {
					t.Fatal(err)
				}
				if err := a1.AddMaster(ctx, mnode); err != nil {
					t.Fatal(err)
				}
			case "agent-restart":
				// The same host and port, a fresh agent that never had the
				// endpoint (its container went while netplugin was down).
				// It registers before its owner replayed its endpoints: the
				// master drops nothing until the replay is done.
				a1.stop()
				restarted := startRPCAgent(t, ctx, a1.node.HostAddr, a1.node.HostPort, false)
				if err := restarted.AddMaster(ctx, mnode); err != nil {
					t.Fatal(err)
				}
				waitFor(t, "the restarted agent's registration", func() bool {
					return m.State().AgentStats[restarted.node.Addr()].Resyncs >= 2
				}, state)
				time.Sleep(300 * time.Millisecond)
				if db := m.State().EndpointDb; len(db) != 2 || !hasRemote(a2.Agent, keptID) {
					t.Fatalf("the master dropped endpoints before the restarted agent replayed them: %s", state())
				}
				if err := restarted.AddLocalEndpoint(ctx, kept); err != nil {
					t.Fatal(err)
				}
				restarted.markReplayed()
			}
			waitFor(t, "the master and agent 2 to drop the deleted endpoint, keeping the other",
				func() bool {
					db := m.State().EndpointDb
					_, g := db[goneID]
					_, k := db[keptID]
					return !g && k && !hasRemote(a2.Agent, goneID) && hasRemote(a2.Agent, keptID)
				}, state)
			// A replay (agent 2 registers again) does not bring it back.
			if err := a2.AddMaster(ctx, mnode); err != nil {
				t.Fatal(err)
			}
			time.Sleep(500 * time.Millisecond)
			if hasRemote(a2.Agent, goneID) {
				t.Fatalf("a replay brought the deleted endpoint back: %s", state())
			}
		})
	}
}
