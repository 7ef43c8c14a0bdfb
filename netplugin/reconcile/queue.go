// Package reconcile is netplugin's work queue (docs/architecture.md,
// "netplugin reconcilers", decision 9): store, RPC and runtime events do not
// change the datapath themselves; they put the key of what changed
// ("network/<id>", "group/<id>", "vtep/<ip>"...) on one rate-limited work
// queue. The reconciler registered for the key's kind reads the desired
// state of the key, compares it with what it applied to OVS, the agents and
// the kernel, and applies the difference. A failure puts the key back with
// a growing delay until it converges; a periodic resync puts every key
// back, so nothing stays wrong for good.
//
// The package knows no datapath and no store: it only runs the Funcs it is
// given, so every side effect that must converge can go through it.
package reconcile

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/util/workqueue"

	"github.com/contiv/netplugin/utils/ctxutil"
)

// Workers is how many keys netplugin reconciles at once (never the same key
// twice at once: the queue sees to that).
const Workers = 2

// Func converges one object of a kind: name is the key without "<kind>/".
// It is idempotent; an error means "try again later".
type Func func(ctx context.Context, name string) error

// Queue is the work queue and its workers.
type Queue struct {
	q     workqueue.TypedRateLimitingInterface[string]
	kinds map[string]Func
	log   logrus.FieldLogger

	// Keys lists every key the periodic resync puts back (nil: none).
	Keys func() []string
	// Resync is the period of the full resync (0: none).
	Resync time.Duration
	// Failed is told of every failed attempt (nil: not counted).
	Failed func(kind string)
}

// New makes a queue whose failed keys come back after base, 2·base,
// 4·base... up to max. Set Keys, Resync and Failed before Run.
func New(log logrus.FieldLogger, base, max time.Duration) *Queue {
	return &Queue{
		q: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](base, max),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "netplugin"}),
		kinds: map[string]Func{},
		log:   log,
	}
}

// Handle registers the reconciler of a kind. Call it before any key of
// that kind is enqueued.
func (r *Queue) Handle(kind string, fn Func) { r.kinds[kind] = fn }

// Enqueue asks for kind/name to be reconciled; a key already waiting is
// not added twice.
func (r *Queue) Enqueue(kind, name string) { r.q.Add(kind + "/" + name) }

// Len is how many keys wait now.
func (r *Queue) Len() int { return r.q.Len() }

// Retries is how many times key failed since it last converged.
func (r *Queue) Retries(key string) int { return r.q.NumRequeues(key) }

// ShuttingDown reports whether the queue was shut down.
func (r *Queue) ShuttingDown() bool { return r.q.ShuttingDown() }

// SplitKey cuts "<kind>/<name>".
func SplitKey(key string) (kind, name string) {
	kind, name, _ = strings.Cut(key, "/")
	return kind, name
}

// process reconciles one key taken from the queue: success forgets its
// failures, a failure puts it back after its backoff. A key taken after ctx
// ended is dropped (the queue is shutting down).
func (r *Queue) process(ctx context.Context, key string) {
	defer r.q.Done(key)
	if ctx.Err() != nil {
		return
	}
	kind, name := SplitKey(key)
	fn, ok := r.kinds[kind]
	if !ok {
		r.log.WithField("key", key).Error("no reconciler for this kind of key; dropped")
		r.q.Forget(key)
		return
	}
	err := fn(ctx, name)
	if err == nil {
		r.q.Forget(key)
		return
	}
	if ctx.Err() != nil {
		return
	}
	attempt := r.q.NumRequeues(key) + 1
	if r.Failed != nil {
		r.Failed(kind)
	}
	r.log.WithError(err).WithFields(logrus.Fields{"key": key, "attempt": attempt}).
		Warn("reconcile failed; retrying with backoff")
	r.q.AddRateLimited(key)
}

// Drain reconciles, on the calling goroutine, every key waiting now (keys
// that fail come back later, after their backoff). netplugin's replay at
// start uses it to apply one kind of state before the next. Only call it
// while no worker runs.
func (r *Queue) Drain(ctx context.Context) {
	for n := r.q.Len(); n > 0 && ctx.Err() == nil; n-- {
		key, shutdown := r.q.Get()
		if shutdown {
			return
		}
		r.process(ctx, key)
	}
}

// Run serves the queue with workers goroutines and resyncs every Resync
// until ctx ends; then it shuts the queue down and returns once every
// worker has stopped.
func (r *Queue) Run(ctx context.Context, workers int) {
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				key, shutdown := r.q.Get()
				if shutdown {
					return
				}
				r.process(ctx, key)
			}
		}()
	}
	if r.Resync > 0 && r.Keys != nil {
		for ctxutil.Sleep(ctx, r.Resync) {
			for _, k := range r.Keys() {
				r.q.Add(k)
			}
		}
	} else {
		<-ctx.Done()
	}
	r.q.ShutDown()
	wg.Wait()
}

// Shutdown stops a queue that Run never served (start-up failed).
func (r *Queue) Shutdown() { r.q.ShutDown() }
