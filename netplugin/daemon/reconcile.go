package daemon

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/util/workqueue"

	"github.com/contiv/netplugin/utils/ctxutil"
)

// Level-triggered netplugin (docs/architecture.md, "netplugin reconcilers"):
// store, RPC and runtime events do not change the datapath themselves; they
// put the key of what changed ("network/<id>", "group/<id>", "vtep/<ip>"...)
// on one rate-limited work queue. A reconciler reads the desired state of
// the key (the followers' caches of the store), compares it with what it
// applied to OVS, the agents and the kernel, and applies the difference. A
// failure puts the key back with a growing delay until it converges; a
// periodic resync puts every key back, so nothing stays wrong for good.

// reconcileWorkers is how many keys are reconciled at once (never the same
// key twice at once: the queue sees to that).
const reconcileWorkers = 2

// reconcileFunc converges one object of a kind: name is the key without
// "<kind>/". It is idempotent; an error means "try again later".
type reconcileFunc func(ctx context.Context, name string) error

// reconciler is the work queue and its workers.
type reconciler struct {
	q     workqueue.TypedRateLimitingInterface[string]
	kinds map[string]reconcileFunc
	log   logrus.FieldLogger
	// keys lists every key the periodic resync puts back (nil: none).
	keys func() []string
	// resync is the period of the full resync (0: none).
	resync time.Duration
	// failed is told of every failed attempt (nil: not counted).
	failed func(kind string)
}

// newReconciler makes a queue whose failed keys come back after base,
// 2·base, 4·base... up to max.
func newReconciler(log logrus.FieldLogger, base, max time.Duration) *reconciler {
	return &reconciler{
		q: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](base, max),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "netplugin"}),
		kinds: map[string]reconcileFunc{},
		log:   log,
	}
}

// handle registers the reconciler of a kind. Call it before any key of
// that kind is enqueued.
func (r *reconciler) handle(kind string, fn reconcileFunc) { r.kinds[kind] = fn }

// enqueue asks for kind/name to be reconciled; a key already waiting is
// not added twice.
func (r *reconciler) enqueue(kind, name string) { r.q.Add(kind + "/" + name) }

// splitKey cuts "<kind>/<name>".
func splitKey(key string) (kind, name string) {
	kind, name, _ = strings.Cut(key, "/")
	return kind, name
}

// process reconciles one key taken from the queue: success forgets its
// failures, a failure puts it back after its backoff. A key taken after ctx
// ended is dropped (the queue is shutting down).
func (r *reconciler) process(ctx context.Context, key string) {
	defer r.q.Done(key)
	if ctx.Err() != nil {
		return
	}
	kind, name := splitKey(key)
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
	if r.failed != nil {
		r.failed(kind)
	}
	r.log.WithError(err).WithFields(logrus.Fields{"key": key, "attempt": attempt}).
		Warn("reconcile failed; retrying with backoff")
	r.q.AddRateLimited(key)
}

// drain reconciles, on the calling goroutine, every key waiting now (keys
// that fail come back later, after their backoff). The replay at start uses
// it to apply one kind of state before the next (replay.go has the order).
// Only call it while no worker runs.
func (r *reconciler) drain(ctx context.Context) {
	for n := r.q.Len(); n > 0 && ctx.Err() == nil; n-- {
		key, shutdown := r.q.Get()
		if shutdown {
			return
		}
		r.process(ctx, key)
	}
}

// run serves the queue with workers goroutines and resyncs every r.resync
// until ctx ends; then it shuts the queue down and returns once every
// worker has stopped.
func (r *reconciler) run(ctx context.Context, workers int) {
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
	if r.resync > 0 && r.keys != nil {
		for ctxutil.Sleep(ctx, r.resync) {
			for _, k := range r.keys() {
				r.q.Add(k)
			}
		}
	} else {
		<-ctx.Done()
	}
	r.q.ShutDown()
	wg.Wait()
}

// shutdown stops a queue that run never served (start-up failed).
func (r *reconciler) shutdown() { r.q.ShutDown() }
