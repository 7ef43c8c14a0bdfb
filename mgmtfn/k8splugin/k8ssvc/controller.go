package k8ssvc

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Sink receives the load balancers. Put adds or replaces one, Delete
// removes one (unknown names are no error). An error is retried with
// backoff, so both must be idempotent.
type Sink interface {
	Put(ctx context.Context, lb LB) error
	Delete(ctx context.Context, name string) error
}

// Options tune a Controller; zero values take the defaults.
type Options struct {
	// Resync is the informers' resync period: every Service is handed to
	// the sink again this often (default 30 s), which also retries a
	// Service whose providers the datapath did not know yet.
	Resync time.Duration
	// RetryBase and RetryMax bound the per-Service retry backoff (default
	// 100 ms and 30 s).
	RetryBase, RetryMax time.Duration
	Log                 logrus.FieldLogger
}

// Controller follows Services and EndpointSlices in all namespaces and
// keeps the sink's load balancers in step: one rate-limited work queue
// keyed "<namespace>/<name>", one worker.
type Controller struct {
	sink     Sink
	log      logrus.FieldLogger
	factory  informers.SharedInformerFactory
	services corelisters.ServiceLister
	slices   discoverylisters.EndpointSliceLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	applied  map[string]LB     // what the sink holds, touched by the worker only
	lastErr  map[string]string // the error last logged per Service (worker only)
}

// maxRetries bounds the backoff retries of one failing Service (about a
// minute with the default backoff); after them the informers' resync
// brings it back every Resync.
const maxRetries = 12

// New makes the controller's informers and queue; Run starts them.
func New(client kubernetes.Interface, sink Sink, opt Options) (*Controller, error) {
	if opt.Resync <= 0 {
		opt.Resync = 30 * time.Second
	}
	if opt.RetryBase <= 0 {
		opt.RetryBase = 100 * time.Millisecond
	}
	if opt.RetryMax <= 0 {
		opt.RetryMax = 30 * time.Second
	}
	if opt.Log == nil {
		opt.Log = logrus.StandardLogger()
	}
	f := informers.NewSharedInformerFactory(client, opt.Resync)
	c := &Controller{sink: sink, log: opt.Log, factory: f, applied: map[string]LB{}, lastErr: map[string]string{},
		services: f.Core().V1().Services().Lister(),
		slices:   f.Discovery().V1().EndpointSlices().Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](opt.RetryBase, opt.RetryMax),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "k8s-services"}),
	}
	svcInf := f.Core().V1().Services().Informer()
	sliceInf := f.Discovery().V1().EndpointSlices().Informer()
	enqueue := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if s, ok := obj.(*discoveryv1.EndpointSlice); ok {
			if name := s.Labels[discoveryv1.LabelServiceName]; name != "" {
				c.queue.Add(Key(s.Namespace, name))
			}
			return
		}
		if k, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			c.queue.Add(k)
		}
	}
	h := cache.ResourceEventHandlerFuncs{AddFunc: enqueue, DeleteFunc: enqueue,
		UpdateFunc: func(old, cur any) {
			enqueue(cur)
			if os, ok := old.(*discoveryv1.EndpointSlice); ok {
				if cs, ok := cur.(*discoveryv1.EndpointSlice); ok && os.Labels[discoveryv1.LabelServiceName] != cs.Labels[discoveryv1.LabelServiceName] {
					enqueue(old) // a slice moved to another Service
				}
			}
		}}
	for _, inf := range []cache.SharedIndexInformer{svcInf, sliceInf} {
		if _, err := inf.AddEventHandler(h); err != nil {
			return nil, fmt.Errorf("k8s services: event handler: %w", err)
		}
		c.synced = append(c.synced, inf.HasSynced)
	}
	return c, nil
}

// Run runs the informers and the worker until ctx ends, then waits for
// them to stop. Nothing is handed to the sink before the first full list.
func (c *Controller) Run(ctx context.Context) {
	defer c.factory.Shutdown()
	defer c.queue.ShutDown()
	c.factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
	}()
	for c.next(ctx) {
	}
}

func (c *Controller) next(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.sync(ctx, key); err != nil {
		if ctx.Err() != nil {
			return false
		}
		// A lasting condition (providers that are no endpoints here, as
		// the API server's own addresses) is logged once, not per retry.
		if c.lastErr[key] != err.Error() {
			c.lastErr[key] = err.Error()
			c.log.WithError(err).Warnf("k8s service %s: retrying", key)
		} else {
			c.log.WithError(err).Debugf("k8s service %s: retrying", key)
		}
		if c.queue.NumRequeues(key) < maxRetries {
			c.queue.AddRateLimited(key)
		} else {
			c.queue.Forget(key)
		}
		return true
	}
	delete(c.lastErr, key)
	c.queue.Forget(key)
	return true
}

// sync brings one Service's load balancer in the sink in step with the
// API server.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // not a key this controller makes: nothing to retry
	}
	svc, err := c.services.Services(ns).Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("read service: %w", err)
	}
	var lb LB
	ok := false
	if svc != nil {
		sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: name})
		slices, err := c.slices.EndpointSlices(ns).List(sel)
		if err != nil {
			return fmt.Errorf("list endpoint slices: %w", err)
		}
		lb, ok = Translate(svc, slices)
	}
	if !ok {
		if _, had := c.applied[key]; !had {
			return nil
		}
		if err := c.sink.Delete(ctx, key); err != nil {
			return err
		}
		delete(c.applied, key)
		c.log.Infof("k8s service %s removed", key)
		return nil
	}
	if err := c.sink.Put(ctx, lb); err != nil {
		return err
	}
	if prev, had := c.applied[key]; !had || !sameLB(prev, lb) {
		c.log.Infof("k8s service %s: VIP %s ports %v providers %v affinity %ds", key, lb.VIP, lb.Ports, lb.Providers, lb.AffinityTimeout)
	}
	c.applied[key] = lb
	return nil
}

func sameLB(a, b LB) bool {
	return a.VIP == b.VIP && fmt.Sprint(a.Ports) == fmt.Sprint(b.Ports) && fmt.Sprint(a.Providers) == fmt.Sprint(b.Providers) &&
		a.AffinityTimeout == b.AffinityTimeout
}
