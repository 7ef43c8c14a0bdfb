package hostaccess

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"go.uber.org/goleak"

	"github.com/contiv/netplugin/netplugin/hostnat"
	"github.com/contiv/netplugin/netplugin/ovsdriver"
	"github.com/contiv/netplugin/netplugin/reconcile"
	"github.com/contiv/netplugin/ofnet/agent"
	"github.com/contiv/netplugin/utils/logtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var errInjected = errors.New("injected failure")

// fakes fails the next N calls of a named operation and counts every call.
type fakes struct {
	mu    sync.Mutex
	fail  map[string]int
	calls map[string]int
	rule  bool // the masquerade rule is in the nat table
}

func newFakes(fail map[string]int) *fakes { return &fakes{fail: fail, calls: map[string]int{}} }

func (f *fakes) call(op string) error {
	f.calls[op]++
	if f.fail[op] > 0 {
		f.fail[op]--
		return errInjected
	}
	return nil
}

func (f *fakes) count(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

func (f *fakes) hasRule() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rule
}

func (f *fakes) EnsureHostPort(context.Context, string) (ovsdriver.EndpointPort, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return ovsdriver.EndpointPort{OFPort: 7, PortName: ovsdriver.HostPortName}, f.call("EnsureHostPort")
}

func (f *fakes) SetHostAccess(context.Context, agent.HostAccess) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.call("SetHostAccess")
}

// iptables keeps one masquerade rule.
func (f *fakes) iptables(_ context.Context, _ string, args ...string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	op := args[4] // -w 5 -t nat <op> <rule...>
	if err := f.call(op); err != nil {
		return []byte("iptables: Resource temporarily unavailable."), err
	}
	switch op {
	case "-C":
		if !f.rule {
			return []byte("iptables: Bad rule."), errors.New("exit status 1")
		}
	case "-A":
		f.rule = true
	case "-D":
		f.rule = false
	}
	return nil, nil
}

// converge runs r on a work queue with a fast backoff until it reaches
// want, and returns the failed attempts the queue saw.
func converge(t *testing.T, r *Reconciler, want string) int {
	t.Helper()
	q := reconcile.New(logtest.New(t, logrus.DebugLevel), time.Millisecond, 20*time.Millisecond)
	var mu sync.Mutex
	failed := 0
	q.Failed = func(string) {
		mu.Lock()
		failed++
		mu.Unlock()
	}
	q.Handle("hostaccess", r.Reconcile)
	q.Enqueue("hostaccess", "host1")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		q.Run(ctx, reconcile.Workers)
	}()
	defer func() {
		cancel()
		<-done
	}()
	for deadline := time.Now().Add(30 * time.Second); r.Applied() != want || q.Len() != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("host access %q, want %q", r.Applied(), want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return failed
}

func newReconciler(t *testing.T, f *fakes, enabled bool, fwdMode string) *Reconciler {
	return New(Config{Enabled: enabled, FwdMode: fwdMode, PvtSubnet: "172.19.0.0/16", Datapath: f, Ports: f,
		NAT: hostnat.Config{Backend: hostnat.BackendIPTables, Run: f.iptables}, Log: logtest.New(t, logrus.DebugLevel)})
}

// Host access on: the host port fails 3 times, the datapath 2, the NAT
// rule 2; the key converges with all three in place after 7 failures, and
// a converged key does nothing more.
func TestRetriesUntilOn(t *testing.T) {
	f := newFakes(map[string]int{"EnsureHostPort": 3, "SetHostAccess": 2, "-A": 2})
	r := newReconciler(t, f, true, "routing")
	if got := converge(t, r, On); got != 7 {
		t.Errorf("%d failed attempts, want 7", got)
	}
	if !f.hasRule() {
		t.Error("no masquerade rule")
	}
	if got := f.count("SetHostAccess"); got != 5 {
		t.Errorf("SetHostAccess called %d times, want 5 (2 failures, then every later attempt)", got)
	}
	n := f.count("EnsureHostPort")
	if err := r.Reconcile(context.Background(), "host1"); err != nil || f.count("EnsureHostPort") != n {
		t.Errorf("a converged reconciler ran again: %v, EnsureHostPort %d → %d", err, n, f.count("EnsureHostPort"))
	}
	r.Cleanup()
	if f.hasRule() {
		t.Error("the masquerade rule survived the shutdown")
	}
}

// Host access off: a rule a previous run left is removed even when its
// deletion fails twice.
func TestRetriesUntilOff(t *testing.T) {
	f := newFakes(map[string]int{"-D": 2})
	f.rule = true
	r := newReconciler(t, f, false, "routing")
	if got := converge(t, r, Off); got != 2 {
		t.Errorf("%d failed attempts, want 2", got)
	}
	if f.hasRule() {
		t.Error("left-over rule still present")
	}
}

// Asked for in bridge mode, or with a private subnet that cannot work:
// reported once, not retried, nothing applied to the datapath.
func TestIgnored(t *testing.T) {
	f := newFakes(nil)
	if got := converge(t, newReconciler(t, f, true, "bridge"), Ignored); got != 0 {
		t.Errorf("bridge mode: %d failed attempts, want none", got)
	}
	r := newReconciler(t, f, true, "routing")
	r.cfg.PvtSubnet = "172.19.0.0/24"
	if got := converge(t, r, Ignored); got != 0 {
		t.Errorf("bad private subnet: %d failed attempts, want none", got)
	}
	if f.count("SetHostAccess") != 0 {
		t.Errorf("SetHostAccess called %d times, want none", f.count("SetHostAccess"))
	}
}
