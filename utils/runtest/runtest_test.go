package runtest

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

func TestStopCancelsAndWaits(t *testing.T) {
	var ended atomic.Bool
	stop := Go(t, "loop", func(ctx context.Context) error {
		<-ctx.Done()
		ended.Store(true)
		return nil
	})
	stop()
	if !ended.Load() {
		t.Fatal("stop returned before run did")
	}
	stop() // a second stop is a no-op
}

func TestEndOfTestStops(t *testing.T) {
	var ended atomic.Bool
	t.Run("inner", func(t *testing.T) {
		Go(t, "loop", func(ctx context.Context) error {
			<-ctx.Done()
			ended.Store(true)
			return nil
		})
	})
	if !ended.Load() {
		t.Fatal("run still going after its test ended")
	}
}

// recorder is a testing.TB that keeps what Errorf reports.
type recorder struct {
	testing.TB
	msgs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.msgs = append(r.msgs, format)
}

func TestRunErrorFailsTheTest(t *testing.T) {
	r := &recorder{TB: t}
	stop := Go(r, "loop", func(ctx context.Context) error { return errors.New("broken") })
	stop()
	if len(r.msgs) != 1 {
		t.Fatalf("reported %q, want one error", r.msgs)
	}
}
