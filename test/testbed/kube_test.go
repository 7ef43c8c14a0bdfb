package testbed

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/contiv/netplugin/mgmtfn/k8splugin"
	"github.com/contiv/netplugin/mgmtfn/k8splugin/kubewatch"
)

// TestKubeAPIServer runs the real API server on loopback, creates a pod
// with contiv labels and reads them back through netplugin's informers
// (kubewatch) from the kubeconfig the testbed wrote; both processes are
// gone after the cleanup.
func TestKubeAPIServer(t *testing.T) {
	var k *KubeAPIServer
	t.Run("server", func(t *testing.T) {
		start := time.Now()
		k = StartKubeAPIServer(t, KubeOptions{})
		t.Logf("kube-apiserver ready in %v", time.Since(start).Round(time.Millisecond))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cs := k.Client(t)
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"team": "blue"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p, err := cs.CoreV1().Pods("web").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p1", Labels: map[string]string{k8splugin.LabelTenant: "t1", k8splugin.LabelGroup: "g1"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}

		// netplugin's view: the kubeconfig file, the informers.
		rc, err := kubewatch.RESTConfig(k.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		wcs, err := kubernetes.NewForConfig(rc)
		if err != nil {
			t.Fatal(err)
		}
		w := kubewatch.New(wcs, kubewatch.Options{SyncWait: 30 * time.Second, PodWait: 200 * time.Millisecond})
		wctx, wcancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { w.Run(wctx); close(done) }()
		defer func() { wcancel(); <-done }()
		got, err := w.PodLabels(ctx, k8splugin.PodRef{Namespace: "web", Name: "p1", UID: string(p.UID)})
		if err != nil {
			t.Fatal(err)
		}
		if pl := k8splugin.PlacementFrom(got, nil); pl != (k8splugin.Placement{Tenant: "t1", Network: k8splugin.DefaultNetwork, Group: "g1"}) {
			t.Fatalf("placement %+v from %v", pl, got)
		}
		if l, ok := w.NamespaceLabels("web"); !ok || l["team"] != "blue" {
			t.Fatalf("namespace labels %v %v", l, ok)
		}
		if _, err := w.PodLabels(ctx, k8splugin.PodRef{Namespace: "web", Name: "absent"}); !errors.Is(err, k8splugin.ErrPodNotFound) {
			t.Fatalf("absent pod: %v", err)
		}
	})
	if k == nil {
		return
	}
	for _, d := range []*daemon{k.server, k.etcd} {
		if d.running() {
			t.Errorf("%s still running after the cleanup", d.name)
		}
	}
}
