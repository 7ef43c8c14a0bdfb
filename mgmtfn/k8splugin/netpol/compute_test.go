package netpol

import (
	"context"
	"net/netip"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/contiv/netplugin/utils/runtest"
)

func mkPod(ns, name, ip string, lbl map[string]string, ports ...corev1.ContainerPort) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbl},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Ports: ports}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip}}
}

func mkNS(name string, lbl map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbl}}
}

func sel(kv ...string) *metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return &metav1.LabelSelector{MatchLabels: m}
}

func tcp(p int) networkingv1.NetworkPolicyPort {
	v := intstr.FromInt32(int32(p))
	return networkingv1.NetworkPolicyPort{Port: &v}
}

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }

var (
	podA = mkPod("default", "a", "198.19.0.1", map[string]string{"app": "a"})
	podB = mkPod("default", "b", "198.19.0.2", map[string]string{"app": "b"},
		corev1.ContainerPort{Name: "http", ContainerPort: 8080})
	podC   = mkPod("other", "c", "198.19.0.3", map[string]string{"app": "c"})
	nsDef  = mkNS("default", map[string]string{"team": "x"})
	nsOth  = mkNS("other", map[string]string{"team": "y"})
	allNSs = []*corev1.Namespace{nsDef, nsOth}
	allPod = []*corev1.Pod{podA, podB, podC}
	ipA    = netip.MustParseAddr("198.19.0.1")
	ipB    = netip.MustParseAddr("198.19.0.2")
	ipC    = netip.MustParseAddr("198.19.0.3")
)

func pol(name string, spec networkingv1.NetworkPolicySpec) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: spec}
}

func TestCompute(t *testing.T) {
	udp := corev1.ProtocolUDP
	named := intstr.FromString("http")
	p9000 := intstr.FromInt32(9000)
	end := int32(9010)
	cases := []struct {
		name  string
		pols  []*networkingv1.NetworkPolicy
		want  Result
		warns int
	}{
		{name: "no policy isolates nothing", want: Result{}},
		{name: "default deny ingress",
			pols: []*networkingv1.NetworkPolicy{pol("deny", networkingv1.NetworkPolicySpec{})},
			want: Result{
				ipA: {Namespace: "default", Name: "a", IngressIsolated: true},
				ipB: {Namespace: "default", Name: "b", IngressIsolated: true}}},
		{name: "allow by pod label on a port",
			pols: []*networkingv1.NetworkPolicy{pol("p", networkingv1.NetworkPolicySpec{
				PodSelector: *sel("app", "b"),
				Ingress: []networkingv1.NetworkPolicyIngressRule{{
					From:  []networkingv1.NetworkPolicyPeer{{PodSelector: sel("app", "a")}},
					Ports: []networkingv1.NetworkPolicyPort{tcp(80)}}}})},
			want: Result{ipB: {Namespace: "default", Name: "b", IngressIsolated: true,
				Ingress: []Allow{{Peer: pfx("198.19.0.1/32"), Proto: ProtoTCP, PortMin: 80, PortMax: 80}}}}},
		{name: "allow by namespace",
			pols: []*networkingv1.NetworkPolicy{pol("p", networkingv1.NetworkPolicySpec{
				PodSelector: *sel("app", "b"),
				Ingress: []networkingv1.NetworkPolicyIngressRule{{
					From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: sel("team", "y")}}}}})},
			want: Result{ipB: {Namespace: "default", Name: "b", IngressIsolated: true,
				Ingress: []Allow{{Peer: pfx("198.19.0.3/32")}}}}},
		{name: "named port resolves against the selected pod",
			pols: []*networkingv1.NetworkPolicy{pol("p", networkingv1.NetworkPolicySpec{
				Ingress: []networkingv1.NetworkPolicyIngressRule{{
					Ports: []networkingv1.NetworkPolicyPort{{Port: &named}}}}})},
			want: Result{
				ipA: {Namespace: "default", Name: "a", IngressIsolated: true},
				ipB: {Namespace: "default", Name: "b", IngressIsolated: true,
					Ingress: []Allow{{Peer: pfx("0.0.0.0/0"), Proto: ProtoTCP, PortMin: 8080, PortMax: 8080}}}}},
		{name: "egress named port resolves against each peer pod",
			pols: []*networkingv1.NetworkPolicy{pol("p", networkingv1.NetworkPolicySpec{
				PodSelector: *sel("app", "a"), PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
				Egress: []networkingv1.NetworkPolicyEgressRule{{
					To:    []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}},
					Ports: []networkingv1.NetworkPolicyPort{{Port: &named}}}}})},
			want: Result{ipA: {Namespace: "default", Name: "a", EgressIsolated: true,
				Egress: []Allow{{Peer: pfx("198.19.0.2/32"), Proto: ProtoTCP, PortMin: 8080, PortMax: 8080}}}}},
		{name: "egress named port without peers resolves against every pod naming it",
			pols: []*networkingv1.NetworkPolicy{pol("p", networkingv1.NetworkPolicySpec{
				PodSelector: *sel("app", "a"), PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
				Egress: []networkingv1.NetworkPolicyEgressRule{{
					Ports: []networkingv1.NetworkPolicyPort{{Port: &named}}}}})},
			want: Result{ipA: {Namespace: "default", Name: "a", EgressIsolated: true,
				Egress: []Allow{{Peer: pfx("198.19.0.2/32"), Proto: ProtoTCP, PortMin: 8080, PortMax: 8080}}}}},
		{name: "egress named port to an ipBlock resolves against the pods inside it",
			pols: []*networkingv1.NetworkPolicy{pol("p", networkingv1.NetworkPolicySpec{
				PodSelector: *sel("app", "a"), PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
				Egress: []networkingv1.NetworkPolicyEgressRule{
					{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "198.19.0.2/32"}}},
						Ports: []networkingv1.NetworkPolicyPort{{Port: &named}}},
					{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "198.19.0.3/32"}}},
						Ports: []networkingv1.NetworkPolicyPort{{Port: &named}}}}})},
			want: Result{ipA: {Namespace: "default", Name: "a", EgressIsolated: true,
				Egress: []Allow{{Peer: pfx("198.19.0.2/32"), Proto: ProtoTCP, PortMin: 8080, PortMax: 8080}}}}},
		{name: "egress default deny",
			pols: []*networkingv1.NetworkPolicy{pol("p", networkingv1.NetworkPolicySpec{
				PodSelector: *sel("app", "a"), PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}})},
			want: Result{ipA: {Namespace: "default", Name: "a", EgressIsolated: true}}},
		{name: "ipBlock with except, UDP port range",
			pols: []*networkingv1.NetworkPolicy{pol("p", networkingv1.NetworkPolicySpec{
				PodSelector: *sel("app", "a"),
				Ingress: []networkingv1.NetworkPolicyIngressRule{{
					From: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{
						CIDR: "198.19.0.0/30", Except: []string{"198.19.0.2/32"}}}},
					Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: &p9000, EndPort: &end}}}}})},
			want: Result{ipA: {Namespace: "default", Name: "a", IngressIsolated: true,
				Ingress: []Allow{
					{Peer: pfx("198.19.0.0/31"), Proto: ProtoUDP, PortMin: 9000, PortMax: 9010},
					{Peer: pfx("198.19.0.3/32"), Proto: ProtoUDP, PortMin: 9000, PortMax: 9010}}}}},
		{name: "bad cidr allows nothing and warns",
			pols: []*networkingv1.NetworkPolicy{pol("p", networkingv1.NetworkPolicySpec{
				PodSelector: *sel("app", "a"),
				Ingress: []networkingv1.NetworkPolicyIngressRule{{
					From: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "nonsense"}}}}}})},
			want:  Result{ipA: {Namespace: "default", Name: "a", IngressIsolated: true}},
			warns: 1},
		{name: "two policies add up",
			pols: []*networkingv1.NetworkPolicy{
				pol("p1", networkingv1.NetworkPolicySpec{PodSelector: *sel("app", "a"),
					Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: sel("app", "b")}}}}}),
				pol("p2", networkingv1.NetworkPolicySpec{PodSelector: *sel("app", "a"),
					Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{
						NamespaceSelector: &metav1.LabelSelector{}, PodSelector: sel("app", "c")}}}}})},
			want: Result{ipA: {Namespace: "default", Name: "a", IngressIsolated: true,
				Ingress: []Allow{{Peer: pfx("198.19.0.2/32")}, {Peer: pfx("198.19.0.3/32")}}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, warns := Compute(tc.pols, allPod, allNSs)
			if len(warns) != tc.warns {
				t.Errorf("warnings %v, want %d", warns, tc.warns)
			}
			if !got.Equal(tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestSubtract(t *testing.T) {
	got := subtract(pfx("10.0.0.0/24"), []netip.Prefix{pfx("10.0.0.128/25"), pfx("10.0.0.0/26")})
	want := []netip.Prefix{pfx("10.0.0.64/26")}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got := subtract(pfx("10.0.0.0/24"), []netip.Prefix{pfx("10.0.0.0/8")}); len(got) != 0 {
		t.Fatalf("inside an exception: got %v", got)
	}
}

// TestControllerFollowsChanges runs the controller on a fake clientset: a
// policy created and then deleted reaches the sink both times.
func TestControllerFollowsChanges(t *testing.T) {
	cs := fake.NewSimpleClientset(podA, podB, nsDef)
	got := make(chan Result, 16)
	c := NewController(cs, func(_ context.Context, r Result) error { got <- r; return nil }, t.Logf)
	runtest.GoLoop(t, c.Run)
	ctx := t.Context()
	wait := func(pred func(Result) bool) {
		t.Helper()
		timeout := time.After(20 * time.Second)
		for {
			select {
			case r := <-got:
				if pred(r) {
					return
				}
			case <-timeout:
				t.Fatal("sink never got the expected result")
			}
		}
	}
	wait(func(r Result) bool { return len(r) == 0 })
	p := pol("deny", networkingv1.NetworkPolicySpec{PodSelector: *sel("app", "a")})
	if _, err := cs.NetworkingV1().NetworkPolicies("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait(func(r Result) bool { return r[ipA].IngressIsolated && len(r) == 1 })
	if err := cs.NetworkingV1().NetworkPolicies("default").Delete(ctx, "deny", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait(func(r Result) bool { return len(r) == 0 })
}
