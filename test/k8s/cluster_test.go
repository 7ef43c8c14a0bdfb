// Package k8s tests contiv under a kubelet-managed Kubernetes cluster in
// the testbed (docs/testbed.md, "Kubernetes cluster"; docs/k8s.md,
// "Pods at default settings"): pods started by kubelets with their
// probes, Services through kube-proxy and contiv, CoreDNS, restarts.
package k8s

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/contiv/netplugin/test/testbed"
)

// trafficTimeout bounds one TCP or UDP exchange (a loaded machine).
const trafficTimeout = 10 * time.Second

// podsTimeout bounds pods' way to Ready.
const podsTimeout = 3 * time.Minute

// echoNodePort is the web Service's NodePort, TCP and UDP.
const echoNodePort = 30700

// webManifest is a Deployment of two kubepod servers at default settings
// (the kubelet's HTTP liveness and readiness probes), one per node, and
// two Services: web (ClusterIP: HTTP 80 and the echo 7000 TCP and UDP)
// and web-np (NodePort echoNodePort, TCP and UDP).
func webManifest() string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 100
            podAffinityTerm:
              topologyKey: kubernetes.io/hostname
              labelSelector: {matchLabels: {app: web}}
      terminationGracePeriodSeconds: 2
      containers:
      - name: web
        image: %[1]s
        imagePullPolicy: Never
        args: ["serve", "-http", ":8080", "-echo", "7000"]
        env:
        - name: POD_NAME
          valueFrom: {fieldRef: {fieldPath: metadata.name}}
        ports:
        - {name: http, containerPort: 8080}
        - {name: echo, containerPort: 7000}
        - {name: echo-udp, containerPort: 7000, protocol: UDP}
        livenessProbe:
          httpGet: {path: /healthz, port: http}
          periodSeconds: 5
        readinessProbe:
          httpGet: {path: /readyz, port: http}
          periodSeconds: 2
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: http}
  - {name: echo, port: 7000, targetPort: echo}
  - {name: echo-udp, port: 7000, protocol: UDP, targetPort: echo-udp}
---
apiVersion: v1
kind: Service
metadata: {name: web-np, namespace: default}
spec:
  type: NodePort
  selector: {app: web}
  ports:
  - {name: echo, port: 7001, targetPort: 7000, nodePort: %[2]d}
  - {name: echo-udp, port: 7001, protocol: UDP, targetPort: 7000, nodePort: %[2]d}
`, testbed.KubepodImage, echoNodePort)
}

// checkPod runs "kubepod check args" as a pod on node (restartPolicy
// Never) and returns its report; a failed check fails the test.
func checkPod(t *testing.T, c *testbed.KubeCluster, name, node string, args ...string) string {
	t.Helper()
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default}
spec:
  nodeName: %s
  restartPolicy: Never
  containers:
  - name: check
    image: %s
    imagePullPolicy: Never
    args: ["check", %s]
`, name, node, testbed.KubepodImage, strings.Join(quoted, ", "))
	if err := c.KubectlApply(manifest); err != nil {
		t.Fatal(err)
	}
	cs := c.Client(t)
	var pod *corev1.Pod
	deadline := time.Now().Add(podsTimeout)
	for time.Now().Before(deadline) {
		p, err := cs.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if err == nil && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed) {
			pod = p
			break
		}
		time.Sleep(time.Second)
	}
	if pod == nil {
		out, _ := c.Kubectl("describe", "pod", name)
		t.Fatalf("check pod %s did not finish within %v\n%s", name, podsTimeout, out)
	}
	var msg string
	for _, st := range pod.Status.ContainerStatuses {
		if st.State.Terminated != nil {
			msg = st.State.Terminated.Message
		}
	}
	if pod.Status.Phase != corev1.PodSucceeded {
		t.Errorf("check pod %s on %s failed:\n%s", name, node, msg)
	}
	cs.CoreV1().Pods("default").Delete(context.Background(), name, metav1.DeleteOptions{})
	return msg
}

// webPods returns the ready web pods by node name.
func webPods(t *testing.T, c *testbed.KubeCluster, want int) map[string]corev1.Pod {
	t.Helper()
	pods, err := c.WaitPodsReady("default", "app=web", want, podsTimeout)
	if err != nil {
		t.Fatal(err)
	}
	byNode := map[string]corev1.Pod{}
	for _, p := range pods {
		byNode[p.Spec.NodeName] = p
	}
	return byNode
}

// reach checks TCP and UDP from c to ip:port, retrying until within ends.
func reach(c *testbed.Container, ip string, port int, within time.Duration) error {
	deadline := time.Now().Add(within)
	var err error
	for {
		if err = c.CheckTraffic(ip, port, trafficTimeout); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	if err != nil {
		return fmt.Errorf("%s → %s:%d: %w", c.Name, ip, port, err)
	}
	return nil
}

// TestCluster is issue 26's pods-at-default-settings acceptance on a
// two-node kubelet-managed cluster: nodes go Ready only once contiv serves
// them; pods with HTTP probes get Ready on both nodes; pod ↔ pod across
// nodes, pod → node, pod → the kubernetes Service, pod → CoreDNS by name,
// ClusterIP and NodePort (from the other node) carry TCP and UDP; a
// deleted pod comes back, a pod is rescheduled off a cordoned node, and a
// node's reboot (kubelet, kube-proxy and netplugin stopped and started)
// loses no traffic between the other pods.
func TestCluster(t *testing.T) {
	c := testbed.StartKubeCluster(t, testbed.KubeClusterOptions{})
	n0, n1 := c.Nodes[0], c.Nodes[1]
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range c.Nodes {
				t.Logf("--- kubelet %s ---\n%s", n.Name, n.KubeletLogs(40))
				t.Logf("--- kube-proxy %s ---\n%s", n.Name, n.ProxyLogs(15))
				t.Logf("--- netplugin %s ---\n%s", n.Name, lastLines(n.Host.Logs(), 30))
			}
			out, _ := c.Kubectl("get", "pods", "-A", "-o", "wide")
			t.Logf("--- pods ---\n%s", out)
		}
	})

	t.Run("nodes not ready before contiv", func(t *testing.T) {
		for _, n := range c.Nodes {
			if n.ReadyBeforeCNI.Status == corev1.ConditionTrue {
				t.Errorf("node %s was Ready before the CNI configuration: %+v", n.Name, n.ReadyBeforeCNI)
			}
			t.Logf("%s before contiv: %s %s", n.Name, n.ReadyBeforeCNI.Reason, n.ReadyBeforeCNI.Message)
		}
	})

	if err := c.KubectlApply(webManifest()); err != nil {
		t.Fatal(err)
	}
	byNode := webPods(t, c, 2)
	if len(byNode) != 2 {
		t.Fatalf("web pods on %d nodes, want 2: %v", len(byNode), byNode)
	}
	p0 := c.PodNetNS(t, "default", byNode[n0.Name].Name)
	p1 := c.PodNetNS(t, "default", byNode[n1.Name].Name)
	t.Logf("web pods: %s %s on %s, %s %s on %s", p0.Name, p0.IP, n0.Name, p1.Name, p1.IP, n1.Name)

	t.Run("pod to pod across nodes", func(t *testing.T) {
		for _, pair := range [][2]*testbed.Container{{p0, p1}, {p1, p0}} {
			if err := reach(pair[0], pair[1].IP, 7000, 30*time.Second); err != nil {
				t.Error(err)
			}
		}
	})

	t.Run("node to pod", func(t *testing.T) {
		for _, n := range c.Nodes {
			for _, p := range []*testbed.Container{p0, p1} {
				if err := reach(n.Host.AsContainer(), p.IP, 7000, 30*time.Second); err != nil {
					t.Error(err)
				}
			}
		}
	})

	t.Run("pod to node", func(t *testing.T) {
		const port = 7100
		for _, n := range c.Nodes {
			n.Host.AsContainer().ServeTrafficOn(t, n.Host.IP, port)
		}
		for _, p := range []*testbed.Container{p0, p1} {
			for _, n := range c.Nodes {
				if err := reach(p, n.Host.IP, port, 30*time.Second); err != nil {
					t.Error(err)
				}
			}
		}
	})

	t.Run("services and dns from pods", func(t *testing.T) {
		for i, n := range c.Nodes {
			msg := checkPod(t, c, fmt.Sprintf("check-%d", i), n.Name,
				"-lookup", "kubernetes.default.svc.cluster.local",
				"-lookup", "web.default.svc.cluster.local",
				"-lookup", "web",
				"-http", "https://kubernetes.default.svc/healthz",
				"-http", "http://web/name",
				"-tcp", "web:7000", "-udp", "web:7000")
			t.Logf("check pod on %s:\n%s", n.Name, msg)
		}
	})

	t.Run("nodeport from the other node", func(t *testing.T) {
		for _, pair := range [][2]*testbed.KubeNode{{n0, n1}, {n1, n0}} {
			if err := reach(pair[0].Host.AsContainer(), pair[1].Host.IP, echoNodePort, 30*time.Second); err != nil {
				t.Error(err)
			}
		}
	})

	t.Run("deleted pod comes back", func(t *testing.T) {
		cs := c.Client(t)
		if err := cs.CoreV1().Pods("default").Delete(context.Background(), byNode[n1.Name].Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		var np corev1.Pod
		deadline := time.Now().Add(podsTimeout)
		for time.Now().Before(deadline) {
			got := webPods(t, c, 2)
			if p, ok := got[n1.Name]; ok && p.Name != byNode[n1.Name].Name {
				np = p
				break
			}
			time.Sleep(time.Second)
		}
		if np.Name == "" {
			t.Fatal("no new web pod on " + n1.Name)
		}
		p1 = c.PodNetNS(t, "default", np.Name)
		if err := reach(p0, p1.IP, 7000, 30*time.Second); err != nil {
			t.Error(err)
		}
	})

	t.Run("node reboot keeps the pods' traffic", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
		defer cancel()
		cs := c.Client(t)
		before, err := cs.CoreV1().Pods("default").Get(ctx, p1.Name[len("default/"):], metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var ws []*testbed.Watcher
		for _, pair := range [][2]*testbed.Container{{p0, p1}, {p1, p0}} {
			w, err := pair[0].StartWatch(ctx, pair[1].IP, 200*time.Millisecond, 6*time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			ws = append(ws, w)
		}
		time.Sleep(3 * time.Second)
		start := time.Now()
		n1.Reboot(t, 5*time.Second)
		t.Logf("%s rebooted (kube-proxy, kubelet, netplugin) and Ready again in %v", n1.Name, time.Since(start).Round(time.Second))
		// A new pod on the rebooted node reaches the Services.
		checkPod(t, c, "check-reboot", n1.Name, "-lookup", "web.default.svc.cluster.local", "-tcp", "web:7000", "-udp", "web:7000")
		time.Sleep(3 * time.Second)
		for _, w := range ws {
			w.Stop()
			for _, proto := range []string{"tcp", "udp"} {
				st := w.Stats(proto, time.Time{}, time.Time{})
				t.Logf("%s → %s across the reboot: %v", w.From, w.To, st)
				if st.Sent < 10 || len(st.Failures) != 0 {
					t.Errorf("%s → %s %s lost probes across the reboot: %v %+v", w.From, w.To, proto, st, st.Failures)
				}
			}
		}
		// A restarted kubelet starts every pod's readiness at false until a
		// probe passes (the node → pod path): wait for it, bounded.
		var after *corev1.Pod
		for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(time.Second) {
			if after, err = cs.CoreV1().Pods("default").Get(ctx, before.Name, metav1.GetOptions{}); err != nil {
				t.Fatal(err)
			}
			if testbed.PodReady(after) || time.Now().After(deadline) {
				break
			}
		}
		if !testbed.PodReady(after) || after.Status.PodIP != before.Status.PodIP {
			t.Errorf("pod %s after the reboot: ready %v, address %s (was %s)", after.Name, testbed.PodReady(after), after.Status.PodIP, before.Status.PodIP)
		}
	})

	t.Run("rescheduled off a cordoned node", func(t *testing.T) {
		if _, err := c.Kubectl("cordon", n1.Name); err != nil {
			t.Fatal(err)
		}
		defer c.Kubectl("uncordon", n1.Name)
		cs := c.Client(t)
		if err := cs.CoreV1().Pods("default").Delete(context.Background(), p1.Name[len("default/"):], metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		pods, err := c.WaitPodsReady("default", "app=web", 2, podsTimeout)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods {
			if p.Spec.NodeName != n0.Name {
				continue
			}
			pc := c.PodNetNS(t, "default", p.Name)
			for _, other := range pods {
				if other.Name != p.Name {
					if err := reach(pc, other.Status.PodIP, 7000, 30*time.Second); err != nil {
						t.Error(err)
					}
				}
			}
		}
	})
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
