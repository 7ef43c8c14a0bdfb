package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/contiv/netplugin/ofnet/ofrpc"
)

// flakyMaster refuses the first refuse EndpointDel calls, and the first
// refuseReg RegisterNode and refuseAdd EndpointAdd calls.
type flakyMaster struct {
	mu     sync.Mutex
	refuse int
	dels   []string // accepted deletions
	calls  int

	refuseReg, refuseAdd int
	regCalls, addCalls   int
	adds                 []string // accepted adds
	syncs                int
}

func (s *FlakyMasterService) RegisterNode(n ofrpc.OfnetNode, reply *bool) error {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	if s.m.regCalls++; s.m.regCalls <= s.m.refuseReg {
		return errors.New("not serving yet")
	}
	*reply = true
	return nil
}

func (s *FlakyMasterService) EndpointAdd(ep ofrpc.OfnetEndpoint, reply *bool) error {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	if s.m.addCalls++; s.m.addCalls <= s.m.refuseAdd {
		return errors.New("busy")
	}
	s.m.adds = append(s.m.adds, ep.EndpointID)
	*reply = true
	return nil
}

func (s *FlakyMasterService) EndpointSync(sync ofrpc.OfnetEndpointSync, reply *bool) error {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	s.m.syncs++
	*reply = true
	return nil
}

type FlakyMasterService struct{ m *flakyMaster }

func (s *FlakyMasterService) EndpointDel(ep ofrpc.OfnetEndpoint, reply *bool) error {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	s.m.calls++
	if s.m.calls <= s.m.refuse {
		return errors.New("not the leader")
	}
	s.m.dels = append(s.m.dels, ep.EndpointID)
	*reply = true
	return nil
}

// A deletion a master refused is sent again until it takes it (it used to
// be dropped, and the master kept the endpoint for ever); a master that is
// no longer this agent's gets no retry.
func TestPushDelRetried(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fm := &flakyMaster{refuse: 2}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = ofrpc.Serve(ctx, ln, map[string]any{"OfnetMaster": &FlakyMasterService{m: fm}}) })
	pool := ofrpc.NewPool()
	defer func() { cancel(); wg.Wait(); pool.Close() }()

	m := ofrpc.OfnetNode{HostAddr: "127.0.0.1", HostPort: uint16(ln.Addr().(*net.TCPAddr).Port)}
	gone := ofrpc.OfnetNode{HostAddr: "127.0.0.1", HostPort: 1} // nothing listens there
	a := &Agent{log: testLogger(t), pool: pool, pushes: newPushQueue(),
		masters: map[string]ofrpc.OfnetNode{masterAddr(m): m}}
	wg.Go(func() { _ = a.pushLoop(ctx) })
	ep := ofrpc.OfnetEndpoint{EndpointID: "198.18.10.7:default", OriginatorIp: net.ParseIP("198.18.0.11"), Timestamp: time.Now()}
	a.pushes.put(pushJob{del: &ep, targets: []ofrpc.OfnetNode{m, gone}})

	deadline := time.Now().Add(20 * time.Second)
	for {
		fm.mu.Lock()
		dels, calls := len(fm.dels), fm.calls
		fm.mu.Unlock()
		if dels == 1 && calls == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("master took %d deletion(s) in %d calls, want 1 in 3", dels, calls)
		}
		time.Sleep(50 * time.Millisecond)
	}
	a.pushes.mu.Lock()
	left := len(a.pushes.later) + len(a.pushes.jobs)
	a.pushes.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d push job(s) still queued: the master that is not ours was retried", left)
	}
}

// An EndpointAdd a connected master refused N times is sent again until it
// takes it (it was sent once, and the master missed the endpoint for as
// long as it stayed connected); so is a registration with its replay and
// sync. An add whose endpoint went meanwhile is not retried.
func TestPushAddRetried(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fm := &flakyMaster{refuseReg: 2, refuseAdd: 1}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = ofrpc.Serve(ctx, ln, map[string]any{"OfnetMaster": &FlakyMasterService{m: fm}}) })
	pool := ofrpc.NewPool()
	defer func() { cancel(); wg.Wait(); pool.Close() }()

	m := ofrpc.OfnetNode{HostAddr: "127.0.0.1", HostPort: uint16(ln.Addr().(*net.TCPAddr).Port)}
	a := offlineAgent(t, DatapathVxlan)
	a.cfg.RPCPort = 9002
	a.pool = pool
	a.replayed = true // its state is complete: registrations end with EndpointSync
	wg.Go(func() { _ = a.pushLoop(ctx) })
	if err := a.AddNetwork(ctx, 1, 5000, "198.19.64.1", "default"); err != nil {
		t.Fatal(err)
	}
	// Registration refused twice, then its replay (one endpoint) refused
	// once (7 s of pauses); then the second endpoint's add refused twice.
	ep1 := EndpointInfo{PortNo: 3, MacAddr: macFor(net.ParseIP("198.19.64.5")), IpAddr: net.ParseIP("198.19.64.5"), Vlan: 1, EndpointGroup: 5}
	if err := a.AddLocalEndpoint(ctx, ep1); err != nil {
		t.Fatal(err)
	}
	if err := a.AddMaster(ctx, m); err != nil {
		t.Fatal(err)
	}
	waitLong(t, "the registration and its replay to be taken", func() bool {
		fm.mu.Lock()
		defer fm.mu.Unlock()
		return fm.syncs == 1 && len(fm.adds) == 1
	})
	fm.mu.Lock()
	fm.refuseAdd = fm.addCalls + 2
	fm.mu.Unlock()
	ep2 := EndpointInfo{PortNo: 4, MacAddr: macFor(net.ParseIP("198.19.64.6")), IpAddr: net.ParseIP("198.19.64.6"), Vlan: 1, EndpointGroup: 5}
	if err := a.AddLocalEndpoint(ctx, ep2); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		fm.mu.Lock()
		adds, calls, regs := append([]string(nil), fm.adds...), fm.addCalls, fm.regCalls
		fm.mu.Unlock()
		if len(adds) == 2 {
			if adds[0] != "198.19.64.5:default" || adds[1] != "198.19.64.6:default" || calls != 5 || regs != 4 {
				t.Fatalf("master took adds %v in %d add and %d register calls, want both in 5 and 4", adds, calls, regs)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("master took adds %v in %d calls, want 2 in 5", adds, calls)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// An add refused once whose endpoint is removed before its retry is
	// not sent again (its deletion is).
	fm.mu.Lock()
	fm.refuseAdd = fm.addCalls + 1
	fm.mu.Unlock()
	ep3 := EndpointInfo{PortNo: 5, MacAddr: macFor(net.ParseIP("198.19.64.7")), IpAddr: net.ParseIP("198.19.64.7"), Vlan: 1, EndpointGroup: 5}
	if err := a.AddLocalEndpoint(ctx, ep3); err != nil {
		t.Fatal(err)
	}
	waitLong(t, "the refused add", func() bool {
		fm.mu.Lock()
		defer fm.mu.Unlock()
		return fm.addCalls == fm.refuseAdd
	})
	if err := a.RemoveLocalEndpoint(ctx, ep3.PortNo); err != nil {
		t.Fatal(err)
	}
	waitLong(t, "the deletion", func() bool {
		fm.mu.Lock()
		defer fm.mu.Unlock()
		return len(fm.dels) == 1
	})
	time.Sleep(1500 * time.Millisecond) // past the first retry's pause
	a.pushes.mu.Lock()
	left := len(a.pushes.later) + len(a.pushes.jobs)
	a.pushes.mu.Unlock()
	fm.mu.Lock()
	defer fm.mu.Unlock()
	if left != 0 || len(fm.adds) != 2 {
		t.Fatalf("%d push job(s) queued, adds taken %v: the add of a removed endpoint was retried", left, fm.adds)
	}
}

// waitLong polls cond for up to a minute (the retries' pauses add up).
func waitLong(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Pushes to a live master are not held up by one that is gone: the push
// loop is serial, and each call to a master whose port refuses took the
// pool's dial attempts (about 4 s), so with a dead master still listed
// (its netmaster.rpc entry not expired yet) or dropped after its jobs were
// queued, a churn of one push a second backed up without end and a new
// leader's registration waited behind it for minutes (the soak's failure
// after a netplugin restart and a leader kill, docs/soak.md, "Findings").
func TestPushNotHeldUpByUnreachableMaster(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fm := &flakyMaster{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = ofrpc.Serve(ctx, ln, map[string]any{"OfnetMaster": &FlakyMasterService{m: fm}}) })
	pool := ofrpc.NewPool() // the default dial policy: 5 attempts 1 s apart
	defer func() { cancel(); wg.Wait(); pool.Close() }()

	live := ofrpc.OfnetNode{HostAddr: "127.0.0.1", HostPort: uint16(ln.Addr().(*net.TCPAddr).Port)}
	dead := ofrpc.OfnetNode{HostAddr: "127.0.0.1", HostPort: 1}    // listed, nothing listens there
	dropped := ofrpc.OfnetNode{HostAddr: "127.0.0.1", HostPort: 2} // no longer a master
	a := &Agent{log: testLogger(t), pool: pool, pushes: newPushQueue(),
		masters: map[string]ofrpc.OfnetNode{masterAddr(live): live, masterAddr(dead): dead}}
	wg.Go(func() { _ = a.pushLoop(ctx) })
	const n = 8
	start := time.Now()
	for i := range n {
		ep := ofrpc.OfnetEndpoint{EndpointID: fmt.Sprintf("198.18.10.%d:default", i+1), OriginatorIp: net.ParseIP("198.18.0.11"), Timestamp: time.Now()}
		a.pushes.put(pushJob{del: &ep, targets: []ofrpc.OfnetNode{dropped, dead, live}})
	}
	deadline := start.Add(12 * time.Second) // one failed call to the dead master, then none
	for {
		fm.mu.Lock()
		dels := len(fm.dels)
		fm.mu.Unlock()
		if dels == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the live master took %d of %d deletions in %v: the loop waited on the masters that are gone", dels, n, time.Since(start).Round(time.Millisecond))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("%d deletions taken by the live master in %v", n, time.Since(start).Round(time.Millisecond))
}
