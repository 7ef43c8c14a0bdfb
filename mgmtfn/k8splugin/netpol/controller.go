package netpol

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	netlisters "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Sink receives every new Result; an error retries it with backoff.
type Sink func(ctx context.Context, r Result) error

// Logger receives the controller's warnings.
type Logger func(format string, args ...any)

// ApplyObserver is told of every result the sink applied: how long since
// the first change it covers (an informer event, an attach or detach, a
// peer) was seen, and how many pods the result holds.
type ApplyObserver func(latency time.Duration, pods int)

// Controller follows NetworkPolicies, pods and namespaces with informers and
// recomputes the allow sets after each change, through a rate-limited
// workqueue of one key: bursts of events collapse into one computation.
type Controller struct {
	factory  informers.SharedInformerFactory
	synced   []cache.InformerSynced
	pols     netlisters.NetworkPolicyLister
	pods     corelisters.PodLister
	nss      corelisters.NamespaceLister
	queue    workqueue.TypedRateLimitingInterface[string]
	sink     Sink
	log      Logger
	last     Result
	computes int

	// attached are the addresses of pods attached on this host that the
	// API server may not show yet (no status.podIP): CNI ADD gives them
	// before the pod's interface exists, so a pod a policy selects is
	// isolated from its first packet (PodAttached). mu guards both maps.
	mu       sync.Mutex
	attached map[string]netip.Addr      // "namespace/name" → address
	waiters  map[string][]chan struct{} // closed once a result covering the pod is applied
	// peers are the pods attached anywhere in the cluster (FollowPeers);
	// nil: none. attached wins over them for a pod of this host.
	peers *Peers
	// dirtySince is when the oldest change not yet in an applied result
	// was seen (zero: none); observe hears each applied result.
	dirtySince time.Time
	observe    ApplyObserver
}

const queueKey = "all"

// NewController makes the informers of client; Run starts them.
func NewController(client kubernetes.Interface, sink Sink, log Logger) *Controller {
	if log == nil {
		log = func(string, ...any) {}
	}
	f := informers.NewSharedInformerFactory(client, 0)
	c := &Controller{factory: f, sink: sink, log: log,
		attached: map[string]netip.Addr{}, waiters: map[string][]chan struct{}{},
		pols: f.Networking().V1().NetworkPolicies().Lister(),
		pods: f.Core().V1().Pods().Lister(),
		nss:  f.Core().V1().Namespaces().Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](20*time.Millisecond, 10*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "netpol"}),
	}
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.changed() },
		UpdateFunc: func(any, any) { c.changed() },
		DeleteFunc: func(any) { c.changed() },
	}
	for _, inf := range []cache.SharedIndexInformer{
		f.Networking().V1().NetworkPolicies().Informer(),
		f.Core().V1().Pods().Informer(),
		f.Core().V1().Namespaces().Informer(),
	} {
		if _, err := inf.AddEventHandler(h); err != nil {
			log("netpol: event handler: %v", err)
		}
		c.synced = append(c.synced, inf.HasSynced)
	}
	return c
}

// ObserveApplies has f told of every applied result (nil: none). Call it
// before Run.
func (c *Controller) ObserveApplies(f ApplyObserver) {
	c.mu.Lock()
	c.observe = f
	c.mu.Unlock()
}

// changed queues a computation and notes when the oldest change not yet
// applied was seen.
func (c *Controller) changed() {
	c.mu.Lock()
	if c.dirtySince.IsZero() {
		c.dirtySince = time.Now()
	}
	c.mu.Unlock()
	c.queue.Add(queueKey)
}

// Run runs the informers and the worker until ctx ends, then stops both.
func (c *Controller) Run(ctx context.Context) {
	defer c.factory.Shutdown()
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
	}()
	c.factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	c.queue.Add(queueKey)
	for c.processNext(ctx) {
	}
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.sync(ctx); err != nil {
		c.log("netpol: %v (retrying)", err)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// sync computes the result from the caches and hands it to the sink when it
// changed.
func (c *Controller) sync(ctx context.Context) error {
	pols, err := c.pols.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list networkpolicies: %w", err)
	}
	pods, err := c.pods.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	nss, err := c.nss.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list namespaces: %w", err)
	}
	c.mu.Lock()
	// Changes seen from here on are computed again after this one.
	since, observe := c.dirtySince, c.observe
	c.dirtySince = time.Time{}
	var known map[string]netip.Addr
	if c.peers != nil {
		known = c.peers.Known()
	} else {
		known = make(map[string]netip.Addr, len(c.attached))
	}
	for k, v := range c.attached {
		known[k] = v
	}
	c.mu.Unlock()
	res, warns := ComputeKnown(pols, pods, nss, known)
	for _, w := range warns {
		c.log("netpol: %v", w)
	}
	c.computes++
	if c.last == nil || !c.last.Equal(res) {
		if err := c.sink(ctx, res); err != nil {
			c.mu.Lock()
			if !since.IsZero() && (c.dirtySince.IsZero() || since.Before(c.dirtySince)) {
				c.dirtySince = since // still not applied
			}
			c.mu.Unlock()
			return fmt.Errorf("apply networkpolicy result: %w", err)
		}
		c.last = res
		if observe != nil && !since.IsZero() {
			observe(time.Since(since), len(res))
		}
	}
	// Release the ADDs whose pod this result covered: the pod was in the
	// cache (its labels counted) with the address it was attached with.
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range pods {
		key := p.Namespace + "/" + p.Name
		ws := c.waiters[key]
		if len(ws) == 0 || c.attached[key] != known[key] {
			continue
		}
		for _, w := range ws {
			close(w)
		}
		delete(c.waiters, key)
	}
	return nil
}

// FollowPeers has the results admit the pods of peers (attached on any
// host) before their status exists, and recompute on each change of
// peers. Call it before Run; nil follows none.
func (c *Controller) FollowPeers(p *Peers) {
	if p == nil {
		return
	}
	c.mu.Lock()
	c.peers = p
	c.mu.Unlock()
	p.subscribe(c.changed)
}

// PodAttached tells the controller that pod namespace/name has address ip
// on this host, before its interface exists (CNI ADD), and waits until a
// result that counts the pod under that address, with the labels the API
// server has for it, is applied: a policy that selects the pod isolates
// it, and policies that admit it as a peer do, before its status reaches
// the API server. It fails when ctx ends first (the pod is not in the API
// server, or the policy could not be applied).
func (c *Controller) PodAttached(ctx context.Context, namespace, name string, ip netip.Addr) error {
	key := namespace + "/" + name
	done := make(chan struct{})
	c.mu.Lock()
	c.attached[key] = ip
	c.waiters[key] = append(c.waiters[key], done)
	if c.dirtySince.IsZero() {
		c.dirtySince = time.Now()
	}
	c.mu.Unlock()
	c.queue.Add(queueKey)
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		ws := c.waiters[key]
		for i, w := range ws {
			if w == done {
				c.waiters[key] = append(ws[:i:i], ws[i+1:]...)
				break
			}
		}
		if len(c.waiters[key]) == 0 {
			delete(c.waiters, key)
		}
		c.mu.Unlock()
		return fmt.Errorf("networkpolicy of pod %s with %v not applied: %w", key, ip, context.Cause(ctx))
	}
}

// PodDetached forgets the address PodAttached gave (CNI DEL).
func (c *Controller) PodDetached(namespace, name string) {
	key := namespace + "/" + name
	c.mu.Lock()
	_, had := c.attached[key]
	delete(c.attached, key)
	c.mu.Unlock()
	if had {
		c.changed()
	}
}
