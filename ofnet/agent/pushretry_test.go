package agent

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/contiv/netplugin/ofnet/ofrpc"
)

// flakyMaster refuses the first refuse EndpointDel calls.
type flakyMaster struct {
	mu     sync.Mutex
	refuse int
	dels   []string // accepted deletions
	calls  int
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
