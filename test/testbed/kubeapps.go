package testbed

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// corefile is CoreDNS's configuration in the cluster: the cluster domain
// from the API server, nothing forwarded (no traffic leaves the testbed).
const corefile = `.:53 {
    errors
    health {
        lameduck 5s
    }
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }
    cache 30
    loop
    reload
    loadbalance
}
`

// coreDNSManifest is CoreDNS as kubeadm deploys it, reduced: the
// Corefile's ConfigMap, a Deployment of two replicas with its readiness
// (/ready on 8181) and liveness (/health on 8080) probes, and the
// kube-dns Service at KubeDNSIP. The API server authorises everyone
// (AlwaysAllow), so no RBAC objects.
func coreDNSManifest() string {
	indented := "    " + strings.ReplaceAll(strings.TrimRight(corefile, "\n"), "\n", "\n    ")
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: coredns, namespace: kube-system}
data:
  Corefile: |
%s
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: coredns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  replicas: 2
  selector: {matchLabels: {k8s-app: kube-dns}}
  template:
    metadata: {labels: {k8s-app: kube-dns}}
    spec:
      dnsPolicy: Default
      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 100
            podAffinityTerm:
              topologyKey: kubernetes.io/hostname
              labelSelector: {matchLabels: {k8s-app: kube-dns}}
      containers:
      - name: coredns
        image: %s
        imagePullPolicy: Never
        args: ["-conf", "/etc/coredns/Corefile"]
        ports:
        - {name: dns, containerPort: 53, protocol: UDP}
        - {name: dns-tcp, containerPort: 53, protocol: TCP}
        - {name: metrics, containerPort: 9153, protocol: TCP}
        readinessProbe:
          httpGet: {path: /ready, port: 8181}
          periodSeconds: 5
        livenessProbe:
          httpGet: {path: /health, port: 8080}
          initialDelaySeconds: 30
          periodSeconds: 10
          failureThreshold: 5
        volumeMounts:
        - {name: config, mountPath: /etc/coredns, readOnly: true}
      volumes:
      - name: config
        configMap: {name: coredns}
---
apiVersion: v1
kind: Service
metadata: {name: kube-dns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  clusterIP: %s
  selector: {k8s-app: kube-dns}
  ports:
  - {name: dns, port: 53, protocol: UDP, targetPort: 53}
  - {name: dns-tcp, port: 53, protocol: TCP, targetPort: 53}
`, indented, CoreDNSImage, KubeDNSIP)
}

// deployCoreDNS applies CoreDNS and waits until both replicas are ready.
func (c *KubeCluster) deployCoreDNS(t testing.TB) {
	t.Helper()
	if err := c.KubectlApply(coreDNSManifest()); err != nil {
		t.Fatalf("testbed: coredns: %v", err)
	}
	if _, err := c.Kubectl("-n", "kube-system", "rollout", "status", "deployment/coredns", "--timeout=180s"); err != nil {
		out, _ := c.Kubectl("-n", "kube-system", "get", "pods", "-o", "wide")
		desc, _ := c.Kubectl("-n", "kube-system", "describe", "pods", "-l", "k8s-app=kube-dns")
		t.Fatalf("testbed: coredns not ready: %v\n%s\n%s", err, out, desc)
	}
}

// PodNetNS returns the pod's network namespace as a Container (the pod's
// IP, the namespace containerd made), to send traffic from inside the
// pod with the testbed's helpers.
func (c *KubeCluster) PodNetNS(t testing.TB, namespace, name string) *Container {
	t.Helper()
	pod, err := c.cs.CoreV1().Pods(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("testbed: pod %s/%s: %v", namespace, name, err)
	}
	n := c.Node(pod.Spec.NodeName)
	if n == nil {
		t.Fatalf("testbed: pod %s/%s is on %q, not a testbed node", namespace, name, pod.Spec.NodeName)
	}
	ids, err := n.CRI.Crictl("pods", "-q", "--state", "ready", "--name", "^"+name+"$", "--namespace", "^"+namespace+"$")
	if err != nil || len(strings.Fields(ids)) == 0 {
		t.Fatalf("testbed: sandbox of pod %s/%s on %s: %v %q", namespace, name, n.Name, err, ids)
	}
	ip, netns, err := n.CRI.inspect(strings.Fields(ids)[0])
	if err != nil {
		t.Fatalf("testbed: %v", err)
	}
	return &Container{Name: namespace + "/" + name, NS: filepath.Base(netns), Host: n.Host, IP: ip}
}

// WaitPodsReady waits until every pod matching the label selector in
// namespace is Ready, and at least want of them exist.
func (c *KubeCluster) WaitPodsReady(namespace, selector string, want int, within time.Duration) ([]corev1.Pod, error) {
	var pods []corev1.Pod
	err := poll(within, nil, func() error {
		list, err := c.cs.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return err
		}
		pods = pods[:0]
		for _, p := range list.Items {
			if p.DeletionTimestamp != nil {
				continue
			}
			if !PodReady(&p) {
				return fmt.Errorf("pod %s not ready (%s)", p.Name, p.Status.Phase)
			}
			pods = append(pods, p)
		}
		if len(pods) < want {
			return fmt.Errorf("%d of %d pods", len(pods), want)
		}
		return nil
	})
	if err != nil {
		out, _ := c.Kubectl("-n", namespace, "get", "pods", "-o", "wide", "-l", selector)
		return nil, fmt.Errorf("testbed: pods %s in %s: %w\n%s", selector, namespace, err, out)
	}
	return pods, nil
}

// PodReady reports whether the pod's Ready condition is True.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
