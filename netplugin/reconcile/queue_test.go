package reconcile

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"go.uber.org/goleak"

	"github.com/contiv/netplugin/utils/logtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// flaky fails its first n calls per name, then succeeds.
type flaky struct {
	mu    sync.Mutex
	n     int
	calls map[string]int
}

func (f *flaky) fn(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[name]++
	if f.calls[name] <= f.n {
		return errors.New("injected failure")
	}
	return nil
}

func (f *flaky) count(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[name]
}

func newQueue(t *testing.T) *Queue {
	return New(logtest.New(t, logrus.DebugLevel), time.Millisecond, 20*time.Millisecond)
}

// run serves q until the test ends.
func run(t *testing.T, q *Queue) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		q.Run(ctx, Workers)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// A key that fails N times converges on attempt N+1, every failure counted.
func TestRetryUntilConverged(t *testing.T) {
	const n = 5
	q := newQueue(t)
	f := &flaky{n: n, calls: map[string]int{}}
	var mu sync.Mutex
	failed := 0
	q.Failed = func(kind string) {
		mu.Lock()
		defer mu.Unlock()
		if kind == "thing" {
			failed++
		}
	}
	q.Handle("thing", f.fn)
	q.Enqueue("thing", "a")
	run(t, q)
	eventually(t, "convergence", func() bool { return f.count("a") == n+1 && q.Len() == 0 })
	mu.Lock()
	defer mu.Unlock()
	if failed != n {
		t.Errorf("Failed told of %d failures, want %d", failed, n)
	}
	if r := q.Retries("thing/a"); r != 0 {
		t.Errorf("a converged key keeps %d retries", r)
	}
}

// Drain works off what waits now on the caller's goroutine and leaves a
// failed key to its backoff.
func TestDrain(t *testing.T) {
	q := newQueue(t)
	defer q.Shutdown()
	f := &flaky{n: 1, calls: map[string]int{}}
	q.Handle("thing", f.fn)
	q.Enqueue("thing", "a")
	q.Enqueue("thing", "a") // waiting already: not added twice
	q.Drain(context.Background())
	if f.count("a") != 1 {
		t.Fatalf("drain made %d attempts, want 1", f.count("a"))
	}
	eventually(t, "the failed key back after its backoff", func() bool { return q.Len() == 1 })
	q.Drain(context.Background())
	if f.count("a") != 2 || q.Len() != 0 {
		t.Fatalf("after the second drain: %d attempts, %d waiting", f.count("a"), q.Len())
	}
}

// A key of a kind nobody handles is dropped, not retried; the resync puts
// back every key Keys lists.
func TestUnknownKindAndResync(t *testing.T) {
	q := newQueue(t)
	f := &flaky{calls: map[string]int{}}
	q.Handle("thing", f.fn)
	q.Resync = 10 * time.Millisecond
	q.Keys = func() []string { return []string{"thing/r"} }
	q.Enqueue("nobody", "x")
	run(t, q)
	eventually(t, "resynced key run twice", func() bool { return f.count("r") >= 2 })
	if q.Retries("nobody/x") != 0 {
		t.Error("a key of an unknown kind was retried")
	}
}

func TestShutdown(t *testing.T) {
	q := newQueue(t)
	q.Shutdown()
	if !q.ShuttingDown() {
		t.Fatal("not shut down")
	}
}

func TestSplitKey(t *testing.T) {
	for key, want := range map[string][2]string{
		"network/n1.t1":   {"network", "n1.t1"},
		"vtep/198.18.0.2": {"vtep", "198.18.0.2"},
		"global/global":   {"global", "global"},
		"odd":             {"odd", ""},
	} {
		if k, n := SplitKey(key); k != want[0] || n != want[1] {
			t.Errorf("SplitKey(%q) = %q, %q", key, k, n)
		}
	}
}
