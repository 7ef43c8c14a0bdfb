package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/contiv/netplugin/mgmtfn/k8splugin"
	"github.com/contiv/netplugin/test/testbed"
)

// netpolPort is a second traffic port: policies that allow TrafficPort only
// must block it.
const netpolPort = testbed.TrafficPort + 1

// TestKubernetesNetworkPolicy: NetworkPolicies created, changed and deleted
// in a real kube-apiserver are enforced by the netplugins of two hosts on
// real TCP (and UDP) connections between pods on different hosts
// (docs/k8s.md, "NetworkPolicy").
func TestKubernetesNetworkPolicy(t *testing.T) {
	tool := testbed.FindCnitool(t)
	plugin, err := testbed.BuildCNIPlugin()
	if err != nil {
		t.Fatal(err)
	}
	tb, k := testbed.StartKube(t, 2)
	netctl(t, tb, "net", "create", "--encap", "vxlan", "--subnet", "198.19.31.0/24", "--gateway", "198.19.31.254", "default-net")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cs := k.Client(t)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: "prod", Labels: map[string]string{"team": "prod"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hosts := []*cniHost{newCNIHost(t, tb.Hosts[0], "1.0.0"), newCNIHost(t, tb.Hosts[1], "1.0.0")}
	a := netpolPod(ctx, t, cs, tool, plugin, hosts[0], "default", "client-a", "client")
	b := netpolPod(ctx, t, cs, tool, plugin, hosts[1], "default", "server-b", "server")
	c := netpolPod(ctx, t, cs, tool, plugin, hosts[0], "prod", "other-c", "other")
	for _, p := range []*pod{a, b, c} {
		p.ServeTraffic(t, testbed.TrafficPort, netpolPort)
	}

	tcp := func(from, to *pod, port int) bool {
		return from.TCPEcho(to.ip(), port, 1024, 4*time.Second) == nil
	}
	udp := func(from, to *pod, port int) bool {
		_, err := from.UDPEcho(to.ip(), port, 3*time.Second)
		return err == nil
	}
	type check struct {
		from, to *pod
		port     int
		udp      bool
		want     bool
	}
	// expect waits (at most 30 s) until every check gives its answer, then
	// asks each once more.
	expect := func(name string, checks ...check) {
		t.Helper()
		run := func(ch check) bool {
			if ch.udp {
				return udp(ch.from, ch.to, ch.port)
			}
			return tcp(ch.from, ch.to, ch.port)
		}
		deadline := time.Now().Add(30 * time.Second)
		for _, ch := range checks {
			for run(ch) != ch.want && time.Now().Before(deadline) {
				time.Sleep(200 * time.Millisecond)
			}
		}
		for _, ch := range checks {
			got := run(ch)
			for i := 0; i < 2 && ch.want && !got; i++ { // a slow exchange on the loaded machine is no verdict
				got = run(ch)
			}
			if got != ch.want {
				proto := "TCP"
				if ch.udp {
					proto = "UDP"
				}
				t.Errorf("%s: %s %s → %s port %d: reached %v, want %v", name, proto, ch.from.Name, ch.to.Name, ch.port, got, ch.want)
			}
		}
	}
	pols := cs.NetworkingV1().NetworkPolicies("default")
	apply := func(ps ...*networkingv1.NetworkPolicy) {
		t.Helper()
		list, err := pols.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range list.Items {
			if err := pols.Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		for _, p := range ps {
			if _, err := pols.Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create policy %s: %v", p.Name, err)
			}
		}
	}
	server := metav1.LabelSelector{MatchLabels: map[string]string{"app": "server"}}
	ingress := func(name string, rules ...networkingv1.NetworkPolicyIngressRule) *networkingv1.NetworkPolicy {
		return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: networkingv1.NetworkPolicySpec{PodSelector: server, Ingress: rules,
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}}}
	}
	port := func(p intstr.IntOrString, proto corev1.Protocol) []networkingv1.NetworkPolicyPort {
		return []networkingv1.NetworkPolicyPort{{Port: &p, Protocol: &proto}}
	}
	P := testbed.TrafficPort

	// 1. No policy: everything open.
	expect("no policy", check{a, b, P, false, true}, check{c, b, P, false, true}, check{b, a, P, false, true})
	// 2. Default deny into the server; the server's own connections still get
	// their replies (reverse default deny).
	apply(ingress("deny"))
	expect("default deny", check{a, b, P, false, false}, check{c, b, P, false, false},
		check{b, a, P, false, true}, check{b, c, P, false, true})
	// 3. Allow by pod label.
	apply(ingress("by-label", networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{
		{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "client"}}}}}))
	expect("by pod label", check{a, b, P, false, true}, check{c, b, P, false, false})
	// 4. Allow by namespace.
	apply(ingress("by-ns", networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{
		{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "prod"}}}}}))
	expect("by namespace", check{c, b, P, false, true}, check{a, b, P, false, false})
	// 5. Allow by port (TCP only: the same port on UDP and another TCP port stay shut).
	apply(ingress("by-port", networkingv1.NetworkPolicyIngressRule{Ports: port(intstr.FromInt32(int32(P)), corev1.ProtocolTCP)}))
	expect("by port", check{a, b, P, false, true}, check{a, b, netpolPort, false, false}, check{a, b, P, true, false})
	// 6. Allow by named port (the server's container port "echo").
	apply(ingress("by-name", networkingv1.NetworkPolicyIngressRule{Ports: port(intstr.FromString("echo"), corev1.ProtocolTCP)}))
	expect("by named port", check{c, b, P, false, true}, check{c, b, netpolPort, false, false})
	// 7. UDP port.
	apply(ingress("udp", networkingv1.NetworkPolicyIngressRule{Ports: port(intstr.FromInt32(int32(P)), corev1.ProtocolUDP)}))
	expect("by UDP port", check{a, b, P, true, true}, check{a, b, P, false, false})
	// 8. ipBlock with except.
	block := func(except string) *networkingv1.NetworkPolicy {
		return ingress("ipblock", networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{
			{IPBlock: &networkingv1.IPBlock{CIDR: "198.19.31.0/24", Except: []string{except + "/32"}}}}})
	}
	apply(block(a.ip()))
	expect("ipBlock except client", check{c, b, P, false, true}, check{a, b, P, false, false})
	// 9. The same policy changed at runtime.
	p9 := block(c.ip())
	cur, err := pols.Get(ctx, "ipblock", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec = p9.Spec
	if _, err := pols.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("ipBlock changed", check{a, b, P, false, true}, check{c, b, P, false, false})
	// 10. Egress deny of the client; its server side still answers.
	apply(&networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "egress"},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "client"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}}})
	expect("egress deny", check{a, b, P, false, false}, check{a, c, P, false, false}, check{b, a, P, false, true})
	// 11. Egress allowed to the server's port only.
	apply(&networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "egress"},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "client"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			Egress: []networkingv1.NetworkPolicyEgressRule{{
				To:    []networkingv1.NetworkPolicyPeer{{PodSelector: &server}},
				Ports: port(intstr.FromInt32(int32(P)), corev1.ProtocolTCP)}}}})
	expect("egress to one port", check{a, b, P, false, true}, check{a, b, netpolPort, false, false}, check{a, c, P, false, false})
	// 12. Policies removed: open again.
	apply()
	expect("removed", check{a, b, P, false, true}, check{c, b, P, false, true}, check{a, c, P, false, true})
}

// netpolPod creates a pod in the API server (app label, contiv network,
// a container port "echo" on TrafficPort), attaches it with cnitool on ch
// and records its address in the pod's status as the kubelet would.
func netpolPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, tool, plugin string, ch *cniHost, ns, name, app string) *pod {
	t.Helper()
	kp, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": app, k8splugin.LabelNetwork: "default-net"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause",
			Ports: []corev1.ContainerPort{{Name: "echo", ContainerPort: int32(testbed.TrafficPort)}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s/%s: %v", ns, name, err)
	}
	c := ch.h.NewContainerNS(t, name)
	p := &pod{ctr: &ctr{Container: c, host: ch.h, tenant: "default", network: "default-net"}, ch: ch,
		args: fmt.Sprintf("K8S_POD_NAMESPACE=%s;K8S_POD_NAME=%s;K8S_POD_UID=%s", ns, name, kp.UID)}
	out, err := p.tool(t, tool, plugin, "add")
	if err != nil {
		t.Fatalf("ADD of %s on %s: %v\n%s", name, ch.h.Name, err, out)
	}
	p.res.IPAddress = resultAddress(t, out)
	p.IP = p.ip()
	kp.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: p.ip(), PodIPs: []corev1.PodIP{{IP: p.ip()}}}
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, kp, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("pod %s status: %v", name, err)
	}
	t.Cleanup(func() { _, _ = p.tool(t, tool, plugin, "del") })
	return p
}
