package k8ssvc

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func service(ns, name, clusterIP string, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{ClusterIP: clusterIP, Ports: ports}}
}

func svcPortOf(name string, proto corev1.Protocol, port int32, target intstr.IntOrString) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Protocol: proto, Port: port, TargetPort: target}
}

type epState int

const (
	ready epState = iota
	notReady
	unknown // conditions.ready unset
)

type ep struct {
	ip    string
	state epState
}

type slicePort struct {
	name  string
	proto corev1.Protocol
	port  int32
}

func slice(ns, svc, name string, af discoveryv1.AddressType, ports []slicePort, eps ...ep) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{discoveryv1.LabelServiceName: svc}}, AddressType: af}
	for _, p := range ports {
		n, pr, po := p.name, p.proto, p.port
		s.Ports = append(s.Ports, discoveryv1.EndpointPort{Name: &n, Protocol: &pr, Port: &po})
	}
	for _, e := range eps {
		var r *bool
		switch e.state {
		case ready:
			r = new(bool)
			*r = true
		case notReady:
			r = new(bool)
		}
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{e.ip},
			Conditions: discoveryv1.EndpointConditions{Ready: r}})
	}
	return s
}

func TestTranslate(t *testing.T) {
	v4 := discoveryv1.AddressTypeIPv4
	http := []slicePort{{"http", corev1.ProtocolTCP, 8080}}
	for _, tc := range []struct {
		name   string
		svc    *corev1.Service
		slices []*discoveryv1.EndpointSlice
		want   LB
		ok     bool
	}{
		{
			name: "numeric targetPort, ready endpoints of two slices",
			svc:  service("ns", "web", "198.19.200.10", svcPortOf("http", corev1.ProtocolTCP, 80, intstr.FromInt32(8080))),
			slices: []*discoveryv1.EndpointSlice{
				slice("ns", "web", "web-a", v4, http, ep{"198.19.1.3", ready}, ep{"198.19.1.2", unknown}),
				slice("ns", "web", "web-b", v4, http, ep{"198.19.1.10", ready}, ep{"198.19.1.4", notReady}),
			},
			want: LB{Name: "ns/web", VIP: "198.19.200.10", Ports: []Port{{"TCP", 80, 8080}},
				Providers: []string{"198.19.1.2", "198.19.1.3", "198.19.1.10"}},
			ok: true,
		},
		{
			name: "named targetPort resolved by the slice; UDP; protocol defaults to TCP",
			svc: service("ns", "dns", "198.19.200.11",
				svcPortOf("dns", corev1.ProtocolUDP, 53, intstr.FromString("dns-port")),
				svcPortOf("tcp", "", 53, intstr.FromString("dns-tcp"))),
			slices: []*discoveryv1.EndpointSlice{
				slice("ns", "dns", "dns-a", v4, []slicePort{{"dns", corev1.ProtocolUDP, 5353}, {"tcp", corev1.ProtocolTCP, 5354}},
					ep{"198.19.1.5", ready}),
			},
			want: LB{Name: "ns/dns", VIP: "198.19.200.11", Ports: []Port{{"UDP", 53, 5353}, {"TCP", 53, 5354}},
				Providers: []string{"198.19.1.5"}},
			ok: true,
		},
		{
			name: "slices resolving a named port differently: the larger set wins",
			svc:  service("ns", "web", "198.19.200.12", svcPortOf("http", corev1.ProtocolTCP, 80, intstr.FromString("web"))),
			slices: []*discoveryv1.EndpointSlice{
				slice("ns", "web", "old", v4, []slicePort{{"http", corev1.ProtocolTCP, 8000}}, ep{"198.19.1.7", ready}),
				slice("ns", "web", "new", v4, http, ep{"198.19.1.8", ready}, ep{"198.19.1.9", ready}),
			},
			want: LB{Name: "ns/web", VIP: "198.19.200.12", Ports: []Port{{"TCP", 80, 8080}},
				Providers: []string{"198.19.1.8", "198.19.1.9"}},
			ok: true,
		},
		{
			name: "no slice: the numeric target port, no providers",
			svc:  service("ns", "web", "198.19.200.13", svcPortOf("", corev1.ProtocolTCP, 80, intstr.FromInt32(8081))),
			want: LB{Name: "ns/web", VIP: "198.19.200.13", Ports: []Port{{"TCP", 80, 8081}}},
			ok:   true,
		},
		{
			name: "targetPort unset: the port",
			svc:  service("ns", "web", "198.19.200.13", svcPortOf("", corev1.ProtocolTCP, 80, intstr.IntOrString{})),
			want: LB{Name: "ns/web", VIP: "198.19.200.13", Ports: []Port{{"TCP", 80, 80}}},
			ok:   true,
		},
		{
			name: "slices of other services, namespaces, families, or lacking a port are ignored",
			svc:  service("ns", "web", "198.19.200.14", svcPortOf("http", corev1.ProtocolTCP, 80, intstr.FromInt32(8080))),
			slices: []*discoveryv1.EndpointSlice{
				slice("ns", "other", "o", v4, http, ep{"198.19.1.20", ready}),
				slice("ns2", "web", "w", v4, http, ep{"198.19.1.21", ready}),
				slice("ns", "web", "v6", discoveryv1.AddressTypeIPv6, http, ep{"2001:db8::1", ready}),
				slice("ns", "web", "noport", v4, []slicePort{{"metrics", corev1.ProtocolTCP, 9090}}, ep{"198.19.1.22", ready}),
				slice("ns", "web", "good", v4, http, ep{"198.19.1.23", ready}),
				nil,
			},
			want: LB{Name: "ns/web", VIP: "198.19.200.14", Ports: []Port{{"TCP", 80, 8080}}, Providers: []string{"198.19.1.23"}},
			ok:   true,
		},
		{
			name: "SCTP ports are left out",
			svc: service("ns", "mixed", "198.19.200.15", svcPortOf("s", corev1.ProtocolSCTP, 9, intstr.FromInt32(9)),
				svcPortOf("t", corev1.ProtocolTCP, 10, intstr.FromInt32(10))),
			want: LB{Name: "ns/mixed", VIP: "198.19.200.15", Ports: []Port{{"TCP", 10, 10}}},
			ok:   true,
		},
		{name: "headless", svc: service("ns", "h", "None", svcPortOf("", corev1.ProtocolTCP, 80, intstr.FromInt32(80))),
			want: LB{Name: "ns/h"}},
		{name: "no ClusterIP", svc: service("ns", "h", "", svcPortOf("", corev1.ProtocolTCP, 80, intstr.FromInt32(80))),
			want: LB{Name: "ns/h"}},
		{name: "IPv6 ClusterIP", svc: service("ns", "h", "2001:db8::10", svcPortOf("", corev1.ProtocolTCP, 80, intstr.FromInt32(80))),
			want: LB{Name: "ns/h"}},
		{name: "only SCTP", svc: service("ns", "h", "198.19.200.16", svcPortOf("", corev1.ProtocolSCTP, 80, intstr.FromInt32(80))),
			want: LB{Name: "ns/h", VIP: "198.19.200.16"}},
		{name: "ExternalName", svc: func() *corev1.Service {
			s := service("ns", "x", "198.19.200.17", svcPortOf("", corev1.ProtocolTCP, 80, intstr.FromInt32(80)))
			s.Spec.Type = corev1.ServiceTypeExternalName
			return s
		}(), want: LB{Name: "ns/x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Translate(tc.svc, tc.slices)
			if ok != tc.ok || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Translate = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestTranslateAffinity: sessionAffinity ClientIP gives the load balancer its
// timeout (10800 s when the Service names none); None or unset gives none.
func TestTranslateAffinity(t *testing.T) {
	secs := func(n int32) *corev1.SessionAffinityConfig {
		return &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: &n}}
	}
	for _, tc := range []struct {
		name     string
		affinity corev1.ServiceAffinity
		config   *corev1.SessionAffinityConfig
		want     uint32
	}{
		{"unset", "", nil, 0},
		{"None", corev1.ServiceAffinityNone, secs(60), 0},
		{"ClientIP, default timeout", corev1.ServiceAffinityClientIP, nil, 10800},
		{"ClientIP, config without clientIP", corev1.ServiceAffinityClientIP, &corev1.SessionAffinityConfig{}, 10800},
		{"ClientIP, 10 s", corev1.ServiceAffinityClientIP, secs(10), 10},
		{"ClientIP, a day", corev1.ServiceAffinityClientIP, secs(86400), 86400},
		{"ClientIP, 0 s (invalid): default", corev1.ServiceAffinityClientIP, secs(0), 10800},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := service("ns", "web", "198.19.200.20", svcPortOf("http", corev1.ProtocolTCP, 80, intstr.FromInt32(8080)))
			svc.Spec.SessionAffinity, svc.Spec.SessionAffinityConfig = tc.affinity, tc.config
			lb, ok := Translate(svc, []*discoveryv1.EndpointSlice{slice("ns", "web", "a", discoveryv1.AddressTypeIPv4,
				[]slicePort{{"http", corev1.ProtocolTCP, 8080}}, ep{"198.19.1.3", ready})})
			want := LB{Name: "ns/web", VIP: "198.19.200.20", Ports: []Port{{"TCP", 80, 8080}},
				Providers: []string{"198.19.1.3"}, AffinityTimeout: tc.want}
			if !ok || !reflect.DeepEqual(lb, want) {
				t.Errorf("Translate = %+v, %v; want %+v", lb, ok, want)
			}
		})
	}
}
