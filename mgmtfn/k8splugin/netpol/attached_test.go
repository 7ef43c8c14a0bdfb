package netpol

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/contiv/netplugin/utils/runtest"
)

// A pod attached on this host (CNI ADD) without status.podIP yet: once
// PodAttached returns, the applied result isolates it under its new
// address if a policy selects it, and admits it as a peer of the
// policies that name it; PodDetached takes it out again.
func TestPodAttachedBeforeStatus(t *testing.T) {
	server := mkPod("default", "server", "", map[string]string{"app": "server"})
	server.Status = corev1.PodStatus{Phase: corev1.PodPending} // the kubelet has not written it
	client := mkPod("default", "client", "", map[string]string{"app": "client"})
	client.Status = corev1.PodStatus{Phase: corev1.PodPending}
	cs := fake.NewSimpleClientset(podA, server, client, nsDef,
		pol("deny-server", networkingv1.NetworkPolicySpec{PodSelector: *sel("app", "server"),
			Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: sel("app", "client")}}}}}))
	var mu sync.Mutex
	var last Result
	c := NewController(cs, func(_ context.Context, r Result) error {
		mu.Lock()
		last = r
		mu.Unlock()
		return nil
	}, t.Logf)
	runtest.GoLoop(t, c.Run)
	applied := func() Result {
		mu.Lock()
		defer mu.Unlock()
		return last
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()

	srvIP, cliIP := ipB, ipC
	if err := c.PodAttached(ctx, "default", "server", srvIP); err != nil {
		t.Fatal(err)
	}
	if r := applied()[srvIP]; !r.IngressIsolated || len(r.Ingress) != 0 {
		t.Fatalf("server attached without status: applied %+v, want isolated and nothing admitted", r)
	}
	if err := c.PodAttached(ctx, "default", "client", cliIP); err != nil {
		t.Fatal(err)
	}
	r := applied()[srvIP]
	if len(r.Ingress) != 1 || r.Ingress[0].Peer != pfx("198.19.0.3/32") {
		t.Fatalf("client attached without status is not admitted as the server's peer: %+v", r)
	}

	// A pod the API server does not have is never covered.
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancelShort()
	if err := c.PodAttached(short, "default", "nosuchpod", ipA); err == nil {
		t.Fatal("PodAttached of a pod unknown to the API server returned nil")
	}

	c.PodDetached("default", "server")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := applied()[srvIP]; !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("detached pod still in the result: %+v", applied())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Every applied result is reported with its latency and pod count; a
// result the sink refused is reported when a later attempt applies it,
// with the latency counted from the first change it covers.
func TestObserveApplies(t *testing.T) {
	cs := fake.NewSimpleClientset(podA, podB, nsDef)
	var mu sync.Mutex
	var lats []time.Duration
	var pods []int
	fail := true
	c := NewController(cs, func(_ context.Context, r Result) error {
		mu.Lock()
		defer mu.Unlock()
		if fail && len(r) > 0 {
			fail = false
			return context.DeadlineExceeded // refused once
		}
		return nil
	}, t.Logf)
	c.ObserveApplies(func(d time.Duration, n int) {
		mu.Lock()
		lats = append(lats, d)
		pods = append(pods, n)
		mu.Unlock()
	})
	runtest.GoLoop(t, c.Run)
	t0 := time.Now()
	if _, err := cs.NetworkingV1().NetworkPolicies("default").Create(t.Context(),
		pol("deny", networkingv1.NetworkPolicySpec{}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(pods)
		last := 0
		if n > 0 {
			last = pods[n-1]
		}
		mu.Unlock()
		if last == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no applied result isolating both pods observed: pods %v", pods)
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := lats[len(lats)-1]; got <= 0 || got > time.Since(t0) {
		t.Fatalf("latency %v: want within (0, %v]", got, time.Since(t0))
	}
	if fail {
		t.Fatal("the sink never refused: the retry path was not taken")
	}
}
