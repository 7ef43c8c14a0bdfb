// Package faulttest injects failures into the fakes of unit tests: a
// Faults fails the next N calls of a named method and counts every call,
// so a test can fail a step N times and see it converge (Eventually).
package faulttest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// ErrInjected is the failure Faults injects.
var ErrInjected = errors.New("injected failure")

// Faults fails the first N calls of named methods and counts every call;
// safe for concurrent use.
type Faults struct {
	mu    sync.Mutex
	fail  map[string]int // method → failures left (<0: fail forever)
	calls map[string]int
}

// New has no failure planned.
func New() *Faults { return &Faults{fail: map[string]int{}, calls: map[string]int{}} }

// FailNext makes the next n calls of method fail (n < 0: all of them).
func (f *Faults) FailNext(method string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[method] = n
}

// Call records a call of method and says whether it fails.
func (f *Faults) Call(method string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[method]++
	switch n := f.fail[method]; {
	case n < 0:
		return fmt.Errorf("%s: %w", method, ErrInjected)
	case n > 0:
		f.fail[method] = n - 1
		return fmt.Errorf("%s: %w", method, ErrInjected)
	}
	return nil
}

// Count is how many times method was called.
func (f *Faults) Count(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

// Eventually waits up to 10 s for cond (checked every 2 ms): what the
// injected failures delayed converges.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never happened: %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
