package phase_test

import (
	"context"
	"testing"
	"time"

	"github.com/contiv/netplugin/utils/phase"
)

func TestMarks(t *testing.T) {
	ctx, r := phase.With(context.Background())
	time.Sleep(2 * time.Millisecond)
	phase.Mark(ctx, "a")
	phase.Mark(ctx, "b")
	time.Sleep(2 * time.Millisecond)
	phase.Mark(ctx, "a")
	steps := r.Steps()
	if len(steps) != 2 || steps[0].Name != "a" || steps[1].Name != "b" {
		t.Fatalf("steps %+v, want a then b", steps)
	}
	if steps[0].D < 4*time.Millisecond {
		t.Errorf("a took %v, want the two marks added (>= 4ms)", steps[0].D)
	}
	f := r.Fields()
	if _, ok := f["phase.a"].(float64); !ok {
		t.Errorf("fields %v lack phase.a", f)
	}
	if tot, _ := f["phase.total"].(float64); tot < 4 {
		t.Errorf("total %v ms, want >= 4", tot)
	}
}

func TestWithoutRecorder(t *testing.T) {
	ctx := context.Background()
	phase.Mark(ctx, "a") // no recorder: nothing happens
	if r := phase.From(ctx); r != nil || r.Steps() != nil || r.Fields() != nil {
		t.Fatal("a context without a recorder has steps")
	}
}

func TestAddKeepsTheMarkClock(t *testing.T) {
	ctx, r := phase.With(context.Background())
	r.Add("side", time.Hour)
	time.Sleep(2 * time.Millisecond)
	phase.Mark(ctx, "a")
	r.Add("side", time.Hour)
	steps := r.Steps()
	if len(steps) != 2 || steps[0].Name != "side" || steps[0].D != 2*time.Hour {
		t.Fatalf("steps %+v, want side (2h) then a", steps)
	}
	if steps[1].D < 2*time.Millisecond || steps[1].D > time.Minute {
		t.Errorf("a took %v: Add moved the clock of Mark", steps[1].D)
	}
	var nilRec *phase.Recorder
	nilRec.Add("x", time.Second) // does nothing
}
