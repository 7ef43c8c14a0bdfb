// Package phase times the steps of one request as it passes through
// several packages: the front end puts a Recorder into the request's
// context, the code on the path marks the end of each step with Mark, and
// the front end logs the steps with the request (docs/scale.md, "CNI ADD
// against the bridge plugin"). Without a Recorder in the context Mark does
// nothing, so callers outside a timed request pay one context lookup.
package phase

import (
	"context"
	"sync"
	"time"
)

// Recorder holds the steps of one request.
type Recorder struct {
	mu    sync.Mutex
	start time.Time
	last  time.Time
	steps []Step
}

// Step is one named step and how long it took.
type Step struct {
	Name string
	D    time.Duration
}

type ctxKey struct{}

// With returns ctx carrying a new Recorder, started now.
func With(ctx context.Context) (context.Context, *Recorder) {
	now := time.Now()
	r := &Recorder{start: now, last: now}
	return context.WithValue(ctx, ctxKey{}, r), r
}

// From returns the Recorder of ctx, or nil.
func From(ctx context.Context) *Recorder {
	r, _ := ctx.Value(ctxKey{}).(*Recorder)
	return r
}

// Mark ends the step name of ctx's Recorder: the time since the previous
// mark (or the start). A name marked twice adds up.
func Mark(ctx context.Context, name string) { From(ctx).Mark(name) }

// Mark ends step name; a nil Recorder does nothing.
func (r *Recorder) Mark(name string) {
	if r == nil {
		return
	}
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	d := now.Sub(r.last)
	r.last = now
	for i := range r.steps {
		if r.steps[i].Name == name {
			r.steps[i].D += d
			return
		}
	}
	r.steps = append(r.steps, Step{Name: name, D: d})
}

// Add adds d to step name without ending a step: the time of work done
// alongside the marked steps (by another goroutine, with its own
// Recorder). A nil Recorder does nothing.
func (r *Recorder) Add(name string, d time.Duration) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.steps {
		if r.steps[i].Name == name {
			r.steps[i].D += d
			return
		}
	}
	r.steps = append(r.steps, Step{Name: name, D: d})
}

// Steps returns the steps marked so far, in the order first marked.
func (r *Recorder) Steps() []Step {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Step(nil), r.steps...)
}

// Fields returns the steps as log fields "phase.<name>" in milliseconds
// (to 0.01 ms), with "phase.total" the time since the start.
func (r *Recorder) Fields() map[string]any {
	if r == nil {
		return nil
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()/10) / 100 }
	f := map[string]any{}
	for _, s := range r.Steps() {
		f["phase."+s.Name] = ms(s.D)
	}
	f["phase.total"] = ms(time.Since(r.start))
	return f
}
