package ofmaster_test

import (
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/ofnet/ofmaster"
	"github.com/contiv/netplugin/ofnet/ofrpc"
)

// bigEP is endpoint i (0..65535) of the host at origin, its Vrf padded to
// pad bytes (0: "default").
func bigEP(origin string, i, ts, pad int) ofrpc.OfnetEndpoint {
	e := ep(origin, 0, ts)
	ip := net.IPv4(198, 18, byte(i>>8), byte(i)).To4()
	vrf := "default"
	if pad > 0 {
		vrf = strings.Repeat("v", pad)
	}
	e.EndpointID, e.IpAddr, e.Vrf = ip.String()+":"+vrf, ip, vrf
	e.MacAddrStr = fmt.Sprintf("02:02:c6:12:%02x:%02x", byte(i>>8), byte(i))
	return e
}

// addEndpoints makes the master hold n endpoints of hostA (their Vrf
// padded to pad bytes) and returns them.
func addEndpoints(t *testing.T, m *runningMaster, n, pad int) map[string]ofrpc.OfnetEndpoint {
	t.Helper()
	for i := range n {
		m.mustRPC(t, ofrpc.MasterEndpointAdd, bigEP(hostA, i, 1, pad))
	}
	want := m.State().EndpointDb
	if len(want) != n {
		t.Fatalf("master holds %d endpoints, want %d", len(want), n)
	}
	return want
}

func (a *fakeAgent) batchSizes() []int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.batches)
}

// A replay goes out in EndpointAddBatch calls of at most 512 endpoints
// each, and never larger than an agent's request bound (1 MiB): the large
// endpoints are 3 KB each, so 512 of them would not fit.
func TestReplayInBatches(t *testing.T) {
	for _, c := range []struct {
		name string
		n    int
		pad  int
	}{{"small", 1300, 0}, {"large", 600, 2600}} {
		t.Run(c.name, func(t *testing.T) {
			m := startMaster(t, ofmaster.Config{})
			want := addEndpoints(t, m, c.n, c.pad)
			b := startBatchAgent(t, hostB)
			m.join(t, b)
			_, eps, _ := b.snapshot()
			if !sameEndpoints(eps, want) {
				t.Fatalf("agent holds %d endpoints, want the master's %d", len(eps), len(want))
			}
			enc, err := json.Marshal(bigEP(hostA, c.n-1, 1, c.pad))
			if err != nil {
				t.Fatal(err)
			}
			sizes := b.batchSizes()
			total := 0
			for _, n := range sizes {
				total += n
				if n < 2 || n > 512 || n*(len(enc)+1) >= ofrpc.DefaultMaxMessageBytes {
					t.Errorf("a batch of %d endpoints of %d bytes", n, len(enc))
				}
			}
			if total != c.n {
				t.Errorf("batches %v carry %d endpoints, want %d", sizes, total, c.n)
			}
			if c.pad == 0 && len(sizes) != 3 {
				t.Errorf("batches %v, want 3 (512, 512, 276)", sizes)
			}
			st := m.State().AgentStats[b.node.Addr()]
			if st.Sent[ofrpc.AgentEndpointAdd] != 0 || st.Sent[ofrpc.AgentEndpointAddBatch] != uint64(len(sizes)) {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

// Endpoint adds waiting in an agent's queue go out together, in order with
// the deletions between them.
func TestQueuedAddsBatched(t *testing.T) {
	m := startMaster(t, ofmaster.Config{})
	m.mustRPC(t, ofrpc.MasterEndpointAdd, bigEP(hostA, 999, 1, 0))
	b := startBatchAgent(t, hostB)
	m.join(t, b)
	gate := make(chan struct{})
	b.mu.Lock()
	b.gate = gate
	b.mu.Unlock()
	m.mustRPC(t, ofrpc.MasterEndpointAdd, bigEP(hostA, 1000, 1, 0)) // blocks the sender on the gate
	for i := range 200 {
		m.mustRPC(t, ofrpc.MasterEndpointAdd, bigEP(hostA, i, 1, 0))
		if i%10 == 9 {
			m.mustRPC(t, ofrpc.MasterEndpointDel, bigEP(hostA, i-5, 2, 0))
			m.mustRPC(t, ofrpc.MasterEndpointAdd, bigEP(hostA, i-3, 3, 0)) // newer copy
		}
	}
	b.mu.Lock()
	b.gate = nil
	b.mu.Unlock()
	close(gate)
	want := m.State().EndpointDb
	b.waitFor("the master's endpoints", func(_ []call, eps map[string]ofrpc.OfnetEndpoint, _ map[string]ofrpc.OfnetPolicyRule) bool {
		return sameEndpoints(eps, want)
	})
	b.sync(m.Master, 1)
	if sizes := b.batchSizes(); len(sizes) == 0 || slices.Max(sizes) < 5 {
		t.Errorf("queued adds not batched: %v", sizes)
	}
}

// An agent without EndpointAddBatch ("rpc: can't find method") gets one
// EndpointAdd per endpoint; a new registration tries batches again.
func TestBatchFallbackOlderAgent(t *testing.T) {
	m := startMaster(t, ofmaster.Config{})
	want := addEndpoints(t, m, 10, 0)
	b := startAgent(t, hostB)
	m.join(t, b)
	calls, eps, _ := b.snapshot()
	if !sameEndpoints(eps, want) {
		t.Fatalf("agent holds %d endpoints, want 10", len(eps))
	}
	if got := methods(calls); len(got) != 10 {
		t.Fatalf("calls %v, want 10 EndpointAdd", got)
	}
	st := m.State().AgentStats[b.node.Addr()]
	if st.Failed[ofrpc.AgentEndpointAddBatch] != 1 || st.Sent[ofrpc.AgentEndpointAdd] != 10 {
		t.Fatalf("stats %+v", st)
	}
	m.join(t, b)
	st = m.State().AgentStats[b.node.Addr()]
	if st.Failed[ofrpc.AgentEndpointAddBatch] != 2 || st.Sent[ofrpc.AgentEndpointAdd] != 20 || st.Retrying != 0 {
		t.Fatalf("stats after registering again %+v", st)
	}
}

// refuse makes a refuse calls for id n more times.
func (a *fakeAgent) setRefuse(id string, n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.refuse[id] = n
}

// callsFor lists the calls about one endpoint or rule id.
func callsFor(calls []call, id string) []call {
	var out []call
	for _, c := range calls {
		switch v := c.Arg.(type) {
		case ofrpc.OfnetEndpoint:
			if v.EndpointID == id {
				out = append(out, c)
			}
		case ofrpc.OfnetPolicyRule:
			if v.RuleId == id {
				out = append(out, c)
			}
		}
	}
	return out
}

// Calls an agent's methods refuse (its switch was down) are made again,
// pausing longer each time, until the agent takes them; a newer change of
// the same endpoint supersedes a refused one. Both with and without
// batches.
func TestRefusedCallsRetried(t *testing.T) {
	for _, batch := range []bool{false, true} {
		t.Run(fmt.Sprintf("batch=%v", batch), func(t *testing.T) {
			m := startMaster(t, ofmaster.Config{RetryMin: 20 * time.Millisecond, RetryMax: 100 * time.Millisecond})
			b := startAgentOpt(t, hostB, batch)
			m.join(t, b)
			e1, e2, e3, e4 := bigEP(hostA, 1, 1, 0), bigEP(hostA, 2, 1, 0), bigEP(hostA, 3, 1, 0), bigEP(hostA, 4, 1, 0)

			// Adds refused 3 times, then taken.
			b.setRefuse(e1.EndpointID, 3)
			m.mustRPC(t, ofrpc.MasterEndpointAdd, e1)
			m.mustRPC(t, ofrpc.MasterEndpointAdd, e2)
			b.waitFor("both endpoints", func(_ []call, eps map[string]ofrpc.OfnetEndpoint, _ map[string]ofrpc.OfnetPolicyRule) bool {
				return len(eps) == 2
			})
			calls, _, _ := b.snapshot()
			if n := len(callsFor(calls, e1.EndpointID)); n != 4 {
				t.Errorf("%d calls for the refused endpoint, want 4", n)
			}

			// A rule and a deletion, refused twice.
			b.setRefuse("r1", 2)
			if err := m.AddRule(ctxT(t), rule("r1", 1)); err != nil {
				t.Fatal(err)
			}
			b.setRefuse(e2.EndpointID, 2)
			del2 := e2
			del2.Timestamp = e2.Timestamp.Add(time.Second)
			m.mustRPC(t, ofrpc.MasterEndpointDel, del2)
			b.waitFor("the rule and the deletion", func(_ []call, eps map[string]ofrpc.OfnetEndpoint, rules map[string]ofrpc.OfnetPolicyRule) bool {
				_, has2 := eps[e2.EndpointID]
				return len(rules) == 1 && !has2
			})

			// Superseded: refused once, then a newer copy; the agent ends
			// with the newer one and never gets the older one after it.
			b.setRefuse(e3.EndpointID, 1)
			m.mustRPC(t, ofrpc.MasterEndpointAdd, e3)
			e3b := e3
			e3b.Timestamp = e3.Timestamp.Add(time.Second)
			e3b.EndpointGroup = 9
			m.mustRPC(t, ofrpc.MasterEndpointAdd, e3b)

			// Gone: refused, then deleted at the master: its add is not
			// made again after the deletion.
			b.setRefuse(e4.EndpointID, 2)
			m.mustRPC(t, ofrpc.MasterEndpointAdd, e4)
			del4 := e4
			del4.Timestamp = e4.Timestamp.Add(time.Second)
			m.mustRPC(t, ofrpc.MasterEndpointDel, del4)

			b.waitFor("the newer copy and the deletion", func(_ []call, eps map[string]ofrpc.OfnetEndpoint, _ map[string]ofrpc.OfnetPolicyRule) bool {
				_, has4 := eps[e4.EndpointID]
				return eps[e3.EndpointID].EndpointGroup == 9 && !has4
			})
			waitState(t, m, "no call waiting for a retry", func(st ofmaster.State) bool {
				s := st.AgentStats[b.node.Addr()]
				return s.Retrying == 0 && s.Queued == 0 && !s.Sending
			})
			time.Sleep(300 * time.Millisecond) // longer than RetryMax: a stray retry would show
			calls, eps, _ := b.snapshot()
			seenNew := false
			for _, c := range callsFor(calls, e3.EndpointID) {
				e := c.Arg.(ofrpc.OfnetEndpoint)
				seenNew = seenNew || e.EndpointGroup == 9
				if seenNew && e.EndpointGroup != 9 {
					t.Errorf("the older copy was sent after the newer one:\n%s", dumpCalls(callsFor(calls, e3.EndpointID)))
				}
			}
			c4 := callsFor(calls, e4.EndpointID)
			if len(c4) == 0 || c4[len(c4)-1].Method != ofrpc.AgentEndpointDel {
				t.Errorf("calls for the deleted endpoint:\n%s", dumpCalls(c4))
			}
			if _, ok := eps[e4.EndpointID]; ok {
				t.Error("the agent holds the deleted endpoint")
			}
			st := m.State().AgentStats[b.node.Addr()]
			if st.Failed[ofrpc.PolicyAddRule] != 2 || st.Failed[ofrpc.AgentEndpointDel] < 2 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

// Every endpoint of a replay refused twice (the agent's switch was down
// for a while): the agent still ends with all of them.
func TestRefusedReplayConverges(t *testing.T) {
	m := startMaster(t, ofmaster.Config{RetryMin: 20 * time.Millisecond, RetryMax: 100 * time.Millisecond})
	want := addEndpoints(t, m, 600, 0)
	b := startBatchAgent(t, hostB)
	for id := range want {
		b.setRefuse(id, 2)
	}
	m.register(t, b)
	b.waitFor("the master's endpoints", func(_ []call, eps map[string]ofrpc.OfnetEndpoint, _ map[string]ofrpc.OfnetPolicyRule) bool {
		return sameEndpoints(eps, want)
	})
	waitState(t, m, "no call waiting for a retry", func(st ofmaster.State) bool {
		s := st.AgentStats[b.node.Addr()]
		return s.Retrying == 0 && s.Queued == 0 && !s.Sending
	})
	// The retries go out in batches too (those falling due together).
	calls, _, _ := b.snapshot()
	if sizes := b.batchSizes(); len(calls) != 1800 || len(sizes) > 100 {
		t.Errorf("%d batch calls, %d endpoint adds for 600 endpoints sent 3 times each", len(sizes), len(calls))
	}
}
