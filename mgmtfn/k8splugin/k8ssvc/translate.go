// Package k8ssvc turns Kubernetes Services and their EndpointSlices into
// contiv service load balancers (docs/k8s.md, "Services"): a pure
// Translate, and a Controller that follows the API server with client-go
// informers and hands each service's load balancer to a Sink.
package k8ssvc

import (
	"fmt"
	"net"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Port is one port of a load balancer: connections to the ClusterIP on
// SvcPort go to a provider on ProvPort.
type Port struct {
	Protocol string // "TCP" or "UDP"
	SvcPort  uint16
	ProvPort uint16
}

// LB is the contiv service load balancer of one Kubernetes Service.
type LB struct {
	// Name is "<namespace>/<name>": Services of two namespaces never meet.
	Name string
	// VIP is the Service's IPv4 ClusterIP.
	VIP   string
	Ports []Port
	// Providers are the IPv4 addresses of the ready endpoints, sorted.
	Providers []string
	// AffinityTimeout is, for a Service with sessionAffinity ClientIP, how long
	// (seconds) a client stays with the provider it got: the Service's
	// sessionAffinityConfig.clientIP.timeoutSeconds, 10800 when unset. 0: no
	// session affinity (docs/k8s.md, "Services").
	AffinityTimeout uint32
}

// Key is the "<namespace>/<name>" a Service's load balancer is known by.
func Key(namespace, name string) string { return namespace + "/" + name }

// Translate makes the load balancer of svc from the EndpointSlices of the
// Service (those labelled kubernetes.io/service-name with its name in its
// namespace; others are ignored). ok is false for a Service that has no load
// balancer here: no IPv4 ClusterIP (headless, ExternalName, IPv6) or no TCP
// or UDP port. Only ready endpoints (ready unset counts as ready) of IPv4
// slices are providers. A port's provider port is the number the slices
// resolved its targetPort to (a named targetPort names a container port); as
// one service port has one provider port here, when slices disagree the
// numbers that cover the most ready endpoints win and the endpoints of the
// other slices are left out (docs/compat.md). With no slice, a numeric
// targetPort (or the port itself) is used and there are no providers.
func Translate(svc *corev1.Service, slices []*discoveryv1.EndpointSlice) (LB, bool) {
	lb := LB{Name: Key(svc.Namespace, svc.Name)}
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return lb, false
	}
	vip := net.ParseIP(svc.Spec.ClusterIP).To4()
	if vip == nil {
		return lb, false
	}
	lb.VIP = vip.String()
	lb.AffinityTimeout = affinityTimeout(svc.Spec)
	var ports []svcPort
	for _, p := range svc.Spec.Ports {
		proto := strings.ToUpper(string(p.Protocol))
		if proto == "" {
			proto = "TCP"
		}
		if (proto != "TCP" && proto != "UDP") || p.Port <= 0 || p.Port > 65535 {
			continue
		}
		prov := uint16(p.Port)
		if p.TargetPort.Type == intstr.Int && p.TargetPort.IntVal > 0 && p.TargetPort.IntVal <= 65535 {
			prov = uint16(p.TargetPort.IntVal)
		}
		ports = append(ports, svcPort{Port: Port{Protocol: proto, SvcPort: uint16(p.Port), ProvPort: prov}, name: p.Name})
	}
	if len(ports) == 0 {
		return lb, false
	}

	// Each usable slice resolves every service port to a number; the
	// resolution (a signature) with the most ready endpoints wins.
	type candidate struct {
		provs []int32
		ips   map[string]bool
	}
	bySig := map[string]*candidate{}
	for _, s := range slices {
		if s == nil || s.Namespace != svc.Namespace || s.Labels[discoveryv1.LabelServiceName] != svc.Name ||
			s.AddressType != discoveryv1.AddressTypeIPv4 {
			continue
		}
		provs, ok := resolve(s, ports)
		if !ok {
			continue
		}
		sig := fmt.Sprint(provs)
		c := bySig[sig]
		if c == nil {
			c = &candidate{provs: provs, ips: map[string]bool{}}
			bySig[sig] = c
		}
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			for _, a := range ep.Addresses {
				if ip := net.ParseIP(a).To4(); ip != nil {
					c.ips[ip.String()] = true
				}
			}
		}
	}
	var best *candidate
	sigs := make([]string, 0, len(bySig))
	for sig := range bySig {
		sigs = append(sigs, sig)
	}
	sort.Strings(sigs) // equal counts: the same winner every time
	for _, sig := range sigs {
		if c := bySig[sig]; len(c.ips) > 0 && (best == nil || len(c.ips) > len(best.ips)) {
			best = c
		}
	}
	for i, p := range ports {
		if best != nil {
			p.ProvPort = uint16(best.provs[i])
		}
		lb.Ports = append(lb.Ports, p.Port)
	}
	if best != nil {
		for ip := range best.ips {
			lb.Providers = append(lb.Providers, ip)
		}
		sort.Slice(lb.Providers, func(i, j int) bool {
			return string(net.ParseIP(lb.Providers[i]).To4()) < string(net.ParseIP(lb.Providers[j]).To4())
		})
	}
	return lb, true
}

// affinityTimeout is a Service's ClientIP session affinity in seconds (0: none).
func affinityTimeout(spec corev1.ServiceSpec) uint32 {
	if spec.SessionAffinity != corev1.ServiceAffinityClientIP {
		return 0
	}
	if c := spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil &&
		*c.ClientIP.TimeoutSeconds > 0 {
		return uint32(*c.ClientIP.TimeoutSeconds)
	}
	return uint32(corev1.DefaultClientIPServiceAffinitySeconds)
}

// svcPort is a port of the Service with its name (the key of the
// EndpointSlice ports).
type svcPort struct {
	Port
	name string
}

// resolve finds, for each service port, the slice's port of the same name
// and protocol; a slice lacking one (or with a number out of range) is not
// usable.
func resolve(s *discoveryv1.EndpointSlice, ports []svcPort) ([]int32, bool) {
	out := make([]int32, len(ports))
	for i, p := range ports {
		found := false
		for _, sp := range s.Ports {
			name, proto := "", "TCP"
			if sp.Name != nil {
				name = *sp.Name
			}
			if sp.Protocol != nil {
				proto = strings.ToUpper(string(*sp.Protocol))
			}
			if name != p.name || proto != p.Protocol || sp.Port == nil || *sp.Port <= 0 || *sp.Port > 65535 {
				continue
			}
			out[i], found = *sp.Port, true
			break
		}
		if !found {
			return nil, false
		}
	}
	return out, true
}
