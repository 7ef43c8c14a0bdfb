// Package runtest runs a component's Run loop in the background of a test
// and stops it, cancelled and waited for, before the test ends.
package runtest

import (
	"context"
	"sync"
	"testing"
)

// Go runs run(ctx) in a goroutine until stop is called or the test ends,
// whichever comes first: stop cancels ctx and waits for run to return. A
// non-nil error from run fails the test, tagged with name (a run that
// returns ctx.Err() on cancellation wraps itself to return nil). stop may
// be called more than once.
func Go(t testing.TB, name string, run func(ctx context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := run(ctx); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// GoLoop is Go for a run that returns nothing.
func GoLoop(t testing.TB, run func(ctx context.Context)) (stop func()) {
	return Go(t, "", func(ctx context.Context) error { run(ctx); return nil })
}
