package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/contiv/netplugin/mgmtfn/k8splugin"
	"github.com/contiv/netplugin/test/testbed"
)

// TestNetworkPolicyFirstPacketPeer (issue 23; docs/k8s.md "NetworkPolicy"):
// a new client pod attached on another host than the server is admitted by
// the server's policy from its first packets, before its status.podIP
// exists (the server's host learns the pod from its endpoint record). A
// new pod without the admitted label is refused all the same.
func TestNetworkPolicyFirstPacketPeer(t *testing.T) {
	tool := testbed.FindCnitool(t)
	plugin, err := testbed.BuildCNIPlugin()
	if err != nil {
		t.Fatal(err)
	}
	tb, k := testbed.StartKube(t, 2)
	netctl(t, tb, "net", "create", "--encap", "vxlan", "--subnet", "198.19.33.0/24", "--gateway", "198.19.33.254", "default-net")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cs := k.Client(t)
	hosts := []*cniHost{newCNIHost(t, tb.Hosts[0], "1.0.0"), newCNIHost(t, tb.Hosts[1], "1.0.0")}
	server := netpolPod(ctx, t, cs, tool, plugin, hosts[0], "default", "server", "server")
	server.ServeTraffic(t)
	probe := netpolPod(ctx, t, cs, tool, plugin, hosts[1], "default", "probe", "other")
	if _, err := cs.NetworkingV1().NetworkPolicies("default").Create(ctx, &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "allow-client"},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "server"}},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{
				{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "client"}}}}}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Once the probe pod (status written, not a client) is refused, the
	// server's host has the policy.
	deadline := time.Now().Add(30 * time.Second)
	for probe.TCPEcho(server.ip(), testbed.TrafficPort, 64, 1500*time.Millisecond) == nil {
		if time.Now().After(deadline) {
			t.Fatal("the policy never isolated the server")
		}
		time.Sleep(200 * time.Millisecond)
	}

	for _, tc := range []struct {
		name, app string
		admitted  bool
	}{{"client-new", "client", true}, {"other-new", "other", false}} {
		kp, err := cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: tc.name, Labels: map[string]string{"app": tc.app, k8splugin.LabelNetwork: "default-net"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c := hosts[1].h.NewContainerNS(t, tc.name)
		p := &pod{ctr: &ctr{Container: c, host: hosts[1].h, tenant: "default", network: "default-net"}, ch: hosts[1],
			args: "K8S_POD_NAMESPACE=default;K8S_POD_NAME=" + tc.name + ";K8S_POD_UID=" + string(kp.UID)}
		t.Cleanup(func() { _, _ = p.tool(t, tool, plugin, "del") })
		ifUp := func() bool {
			out, err := exec.Command("ip", "-n", c.NS, "-o", "-4", "addr", "show", "dev", "eth0", "up").Output()
			return err == nil && strings.Contains(string(out), " inet ")
		}
		addDone := make(chan error, 1)
		var addOut string
		go func() {
			out, err := p.tool(t, tool, plugin, "add")
			addOut = out
			addDone <- err
		}()
		// Probe the moment the interface is up, while the ADD may still run.
		for !ifUp() {
			select {
			case err := <-addDone:
				if !ifUp() {
					t.Fatalf("ADD of %s ended (%v) without its interface up:\n%s", tc.name, err, addOut)
				}
				addDone <- err
			case <-ctx.Done():
				t.Fatal("interface never appeared")
			case <-time.After(2 * time.Millisecond):
			}
		}
		at := time.Now()
		tcpErr := p.TCPEcho(server.ip(), testbed.TrafficPort, 64, 1500*time.Millisecond)
		_, udpErr := p.UDPEcho(server.ip(), testbed.TrafficPort, 1500*time.Millisecond)
		took := time.Since(at).Round(time.Millisecond)
		cur, err := cs.CoreV1().Pods("default").Get(ctx, tc.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cur.Status.PodIP != "" {
			t.Fatalf("%s has status.podIP %q during the first probes", tc.name, cur.Status.PodIP)
		}
		for _, r := range []struct {
			proto string
			err   error
		}{{"TCP", tcpErr}, {"UDP", udpErr}} {
			switch {
			case tc.admitted && r.err != nil:
				t.Errorf("first packets: %s %s (%s, no status) → server (%s): %v; want admitted", r.proto, tc.name, hosts[1].h.Name, hosts[0].h.Name, r.err)
			case !tc.admitted && r.err == nil:
				t.Errorf("first packets: %s %s (no client label) reached the server; want refused", r.proto, tc.name)
			default:
				t.Logf("first packets: %s %s → server: %v (admitted=%v, both probes within %v of the interface)", r.proto, tc.name, r.err, tc.admitted, took)
			}
		}
		if err := <-addDone; err != nil {
			t.Fatalf("ADD of %s: %v\n%s", tc.name, err, addOut)
		}
	}
}
