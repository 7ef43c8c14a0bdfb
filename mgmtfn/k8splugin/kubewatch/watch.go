// Package kubewatch follows the Kubernetes API server for netplugin in
// kubernetes mode (docs/k8s.md, "Informers"): client-go informers on pods
// and namespaces, and the pod labels the CNI server places pods by
// (k8splugin.LabelSource).
package kubewatch

import (
	"context"
	"fmt"
	"maps"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/contiv/netplugin/mgmtfn/k8splugin"
)

// Options tune a Watcher; zero values take the defaults.
type Options struct {
	// Resync is the informers' resync period (default 0: none).
	Resync time.Duration
	// SyncWait bounds how long a lookup waits for the first full list of
	// the caches (default 10 s).
	SyncWait time.Duration
	// PodWait bounds how long a lookup waits for a pod missing from the
	// cache to appear before asking the API server directly (default 2 s).
	PodWait time.Duration
	// Poll is how often a waiting lookup looks again (default 50 ms).
	Poll time.Duration
}

func (o *Options) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.SyncWait, 10*time.Second)
	def(&o.PodWait, 2*time.Second)
	def(&o.Poll, 50*time.Millisecond)
}

// Watcher holds the pod and namespace informers.
type Watcher struct {
	client  kubernetes.Interface
	opt     Options
	factory informers.SharedInformerFactory
	podInf  cache.SharedIndexInformer
	nsInf   cache.SharedIndexInformer
	pods    corelisters.PodLister
	nss     corelisters.NamespaceLister
}

var _ k8splugin.LabelSource = (*Watcher)(nil)

// New makes the informers; Run starts them.
func New(client kubernetes.Interface, opt Options) *Watcher {
	opt.setDefaults()
	f := informers.NewSharedInformerFactory(client, opt.Resync)
	w := &Watcher{client: client, opt: opt, factory: f}
	w.podInf = f.Core().V1().Pods().Informer()
	w.nsInf = f.Core().V1().Namespaces().Informer()
	w.pods = f.Core().V1().Pods().Lister()
	w.nss = f.Core().V1().Namespaces().Lister()
	return w
}

// Run runs the informers until ctx ends, then waits for them to stop.
func (w *Watcher) Run(ctx context.Context) {
	w.factory.Start(ctx.Done())
	<-ctx.Done()
	w.factory.Shutdown()
}

// WaitSynced waits, at most SyncWait and while ctx lasts, for the first
// full list of pods and namespaces.
func (w *Watcher) WaitSynced(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, w.opt.SyncWait)
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), w.podInf.HasSynced, w.nsInf.HasSynced) {
		return fmt.Errorf("kubernetes pod and namespace caches not filled within %s", w.opt.SyncWait)
	}
	return nil
}

// PodLabels gives a pod's labels from the cache (k8splugin.LabelSource).
// A pod not yet in the cache (the runtime may call CNI just after the pod
// was created) is waited for up to PodWait, then asked of the API server;
// a pod it does not know either is k8splugin.ErrPodNotFound. A cached pod
// whose UID differs from the request's is an older pod of that name and
// is asked of the API server too.
func (w *Watcher) PodLabels(ctx context.Context, ref k8splugin.PodRef) (map[string]string, error) {
	if ref.Namespace == "" || ref.Name == "" {
		return nil, k8splugin.ErrPodNotFound
	}
	if err := w.WaitSynced(ctx); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(w.opt.PodWait)
	for {
		pod, err := w.pods.Pods(ref.Namespace).Get(ref.Name)
		if err == nil && (ref.UID == "" || string(pod.UID) == ref.UID) {
			return maps.Clone(pod.Labels), nil
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("pod %s/%s from the cache: %w", ref.Namespace, ref.Name, err)
		}
		if !time.Now().Before(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("pod %s/%s: %w", ref.Namespace, ref.Name, ctx.Err())
		case <-time.After(w.opt.Poll):
		}
	}
	return w.podFromServer(ctx, ref)
}

func (w *Watcher) podFromServer(ctx context.Context, ref k8splugin.PodRef) (map[string]string, error) {
	pod, err := w.client.CoreV1().Pods(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, k8splugin.ErrPodNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s from the API server: %w", ref.Namespace, ref.Name, err)
	}
	if ref.UID != "" && string(pod.UID) != ref.UID {
		return nil, k8splugin.ErrPodNotFound
	}
	return maps.Clone(pod.Labels), nil
}

// NamespaceLabels gives a namespace's labels from the cache; false when
// the namespace is unknown.
func (w *Watcher) NamespaceLabels(name string) (map[string]string, bool) {
	ns, err := w.nss.Get(name)
	if err != nil {
		return nil, false
	}
	return maps.Clone(ns.Labels), true
}
