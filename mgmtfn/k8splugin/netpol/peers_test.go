package netpol

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/contiv/netplugin/utils/runtest"
)

// A pod attached on another host, without status.podIP yet, is admitted as
// a peer as soon as its endpoint record names it (Peers), and forgotten
// when the record goes; a pod the policy does not select as a peer stays
// refused.
func TestRemotePeerFromEndpointRecord(t *testing.T) {
	server := mkPod("default", "server", "198.19.0.2", map[string]string{"app": "server"})
	client := mkPod("default", "client", "", map[string]string{"app": "client"})
	client.Status = corev1.PodStatus{Phase: corev1.PodPending}
	other := mkPod("default", "other", "", map[string]string{"app": "other"})
	other.Status = corev1.PodStatus{Phase: corev1.PodPending}
	cs := fake.NewSimpleClientset(server, client, other, nsDef,
		pol("allow-client", networkingv1.NetworkPolicySpec{PodSelector: *sel("app", "server"),
			Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: sel("app", "client")}}}}}))
	var mu sync.Mutex
	var last Result
	c := NewController(cs, func(_ context.Context, r Result) error {
		mu.Lock()
		last = r
		mu.Unlock()
		return nil
	}, t.Logf)
	peers := NewPeers()
	c.FollowPeers(peers)
	runtest.GoLoop(t, c.Run)
	srvIP := netip.MustParseAddr("198.19.0.2")
	waitFor := func(what string, ok func(PodRules) bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			mu.Lock()
			r, have := last[srvIP]
			mu.Unlock()
			if have && ok(r) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: server's applied result is %+v", what, r)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	admits := func(peer string) func(PodRules) bool {
		return func(r PodRules) bool {
			return r.IngressIsolated && len(r.Ingress) == 1 && r.Ingress[0].Peer == pfx(peer)
		}
	}
	nothing := func(r PodRules) bool { return r.IngressIsolated && len(r.Ingress) == 0 }

	waitFor("no client known", nothing)
	peers.Put("other.default-c2", "default", "other", "198.19.0.8")
	peers.Put("net.default-c1", "default", "client", "198.19.0.9/16") // the record's form may carry a length
	waitFor("client's record written", admits("198.19.0.9/32"))
	peers.Delete("net.default-c1")
	waitFor("client's record deleted", nothing)

	// A record without pod fields (an older netmaster, or not a CNI attach)
	// names nobody.
	peers.Put("net.default-c3", "", "", "198.19.0.10")
	if k := peers.Known(); len(k) != 1 || k["default/other"] != netip.MustParseAddr("198.19.0.8") {
		t.Fatalf("known = %v, want only default/other", k)
	}
}

// Of two records naming one pod, the newest wins; removing it falls back
// to the other.
func TestPeersNewestRecordWins(t *testing.T) {
	p := NewPeers()
	p.Put("e1", "ns", "p", "198.19.1.1")
	p.Put("e2", "ns", "p", "198.19.1.2")
	if got := p.Known()["ns/p"]; got != netip.MustParseAddr("198.19.1.2") {
		t.Fatalf("ns/p = %v, want the newest record's 198.19.1.2", got)
	}
	p.Delete("e2")
	if got := p.Known()["ns/p"]; got != netip.MustParseAddr("198.19.1.1") {
		t.Fatalf("ns/p = %v after the newest record went, want 198.19.1.1", got)
	}
	p.Put("e1", "ns", "p", "2001:db8::1") // IPv6 only: not here
	if k := p.Known(); len(k) != 0 {
		t.Fatalf("known = %v, want empty", k)
	}
}
