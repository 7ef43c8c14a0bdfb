// Package k8s holds benchmarks on the testbed's kubelet-managed cluster
// (testbed.StartKubeCluster, docs/testbed.md "Kubernetes cluster").
package k8s

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/contiv/netplugin/test/bench/benchstat"
	"github.com/contiv/netplugin/test/testbed"
)

// podsPerNode is the burst of pods created on each node per phase.
const podsPerNode = 50

// refPlugins is where Debian's containernetworking-plugins puts the
// reference plugins.
const refPlugins = "/usr/lib/cni"

// BenchmarkPodReady measures pod create → Ready through the kubelet: a
// burst of podsPerNode pods per node (two nodes), each with an HTTP
// readiness probe (the kubelet reaches the pod from the node), from the
// create call to the watch seeing the pod Ready. The same kubelets then run
// the same burst with Debian's bridge plugin (host-local IPAM, the bridge
// as the node's gateway to its pods) in place of contivk8s: containerd
// reloads the CNI configuration it is given. Two bursts each, in the order
// contiv, bridge, bridge, contiv. The ratio contiv / bridge is the figure
// (issue 26, docs/scale.md).
//
//	flock /tmp/contiv-nettest.lock env CI=true go test ./test/bench/k8s -run '^$' -bench PodReady -benchtime 1x -timeout 30m -v
func BenchmarkPodReady(b *testing.B) {
	for _, p := range []string{"bridge", "host-local"} {
		if _, err := os.Stat(filepath.Join(refPlugins, p)); err != nil {
			testbed.RequireComponent(b, "reference "+p+" plugin (containernetworking-plugins)", err)
		}
	}
	c := testbed.StartKubeCluster(b, testbed.KubeClusterOptions{NoCoreDNS: true})
	cfg := c.API.RESTConfig(b)
	cfg.QPS, cfg.Burst = 200, 400
	cfg.Timeout = 0 // the watch of a burst lasts minutes
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		// ABBA: each plugin runs once right after the cluster's first
		// burst and once after the other's, so neither gains from order.
		var ctn, brg []time.Duration
		for r, plugin := range []string{"contiv", "bridge", "bridge", "contiv"} {
			for j, n := range c.Nodes {
				if plugin == "bridge" {
					useBridge(b, n, j)
				} else if err := n.CRI.InstallConfig(); err != nil {
					b.Fatal(err)
				}
			}
			ds := burst(b, cs, c, fmt.Sprintf("%s-%d-%d", plugin, i, r))
			if plugin == "bridge" {
				brg = append(brg, ds...)
			} else {
				ctn = append(ctn, ds...)
			}
		}
		r := benchstat.ReportPair(b, "contiv", ctn, "bridge", brg)
		b.Logf("pod create → Ready, bursts of %d pods per node on %d nodes, two bursts each: contiv p50 %.0f ms p99 %.0f ms; bridge p50 %.0f ms p99 %.0f ms; ratio p50 %.2f p99 %.2f",
			podsPerNode, len(c.Nodes), r.A50, r.A99, r.B50, r.B99, r.Ratio50(), r.Ratio99())
	}
}

// useBridge links the reference plugins into node n's runtime and gives
// it a bridge configuration (subnet 198.18.(100+j).0/24).
func useBridge(b *testing.B, n *testbed.KubeNode, j int) {
	b.Helper()
	for _, p := range []string{"bridge", "host-local"} {
		link := filepath.Join(n.CRI.BinDir, p)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join(refPlugins, p), link); err != nil {
			b.Fatal(err)
		}
	}
	conf := fmt.Sprintf(`{"cniVersion":"1.0.0","name":"ref-bridge","plugins":[{"type":"bridge","bridge":"kbr%d","isGateway":true,`+
		`"ipMasq":false,"ipam":{"type":"host-local","ranges":[[{"subnet":"198.18.%d.0/24"}]],"dataDir":%q}}]}`,
		j, 100+j, filepath.Join(n.CRI.Dir, "host-local"))
	if err := os.WriteFile(filepath.Join(n.CRI.ConfDir, "10-net.conflist"), []byte(conf), 0o644); err != nil {
		b.Fatal(err)
	}
}

// burst creates podsPerNode pods on every node at once and returns each
// one's create → Ready time; the pods are deleted (untimed) and gone
// before it returns.
func burst(b *testing.B, cs kubernetes.Interface, c *testbed.KubeCluster, label string) []time.Duration {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ns := "default" // its service account exists from the start
	sel := "burst=" + label
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { w.Stop() }()
	var mu sync.Mutex
	created := map[string]time.Time{}
	var wg sync.WaitGroup
	errs := make(chan error, podsPerNode*len(c.Nodes))
	for _, n := range c.Nodes {
		for k := range podsPerNode {
			name := fmt.Sprintf("%s-%s-%d", label, n.Name, k)
			wg.Add(1)
			go func() {
				defer wg.Done()
				mu.Lock()
				created[name] = time.Now()
				mu.Unlock()
				if _, err := cs.CoreV1().Pods(ns).Create(ctx, benchPod(name, n.Name, label), metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("create %s: %w", name, err)
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	want := podsPerNode * len(c.Nodes)
	var out []time.Duration
	ready := map[string]bool{}
	for len(ready) < want {
		select {
		case <-ctx.Done():
			b.Fatalf("%s: %d of %d pods Ready before the deadline\n%s", label, len(ready), want, c.Nodes[0].KubeletLogs(30))
		case ev, ok := <-w.ResultChan():
			if !ok || ev.Type == watch.Error {
				// The API server ends watches now and then: a new one
				// starts with the current list (as Added events).
				b.Logf("%s: watch ended (%v), %d of %d Ready: watching again", label, ev.Object, len(ready), want)
				w.Stop()
				if w, err = cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: sel}); err != nil {
					b.Fatal(err)
				}
				continue
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod || ev.Type == watch.Deleted || ready[p.Name] || !testbed.PodReady(p) {
				continue
			}
			ready[p.Name] = true
			mu.Lock()
			out = append(out, time.Since(created[p.Name]))
			mu.Unlock()
		}
	}
	zero := int64(0)
	if err := cs.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero},
		metav1.ListOptions{LabelSelector: sel}); err != nil {
		b.Fatal(err)
	}
	for {
		l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err == nil && len(l.Items) == 0 {
			break
		}
		if ctx.Err() != nil {
			b.Fatalf("%s: pods not gone: %v", label, err)
		}
		time.Sleep(time.Second)
	}
	return out
}

func benchPod(name, node, label string) *corev1.Pod {
	grace := int64(1)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"burst": label}},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name: "web", Image: testbed.KubepodImage, ImagePullPolicy: corev1.PullNever,
				Args:  []string{"serve", "-http", ":8080"},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("http")}},
					PeriodSeconds: 1,
				},
			}},
		},
	}
}
