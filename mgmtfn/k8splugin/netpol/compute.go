// Package netpol turns Kubernetes NetworkPolicy objects into the per-pod allow
// sets the datapath enforces (docs/k8s.md, "NetworkPolicy"): Compute is a pure
// function of the policies, pods and namespaces; Controller follows them in the
// API server with client-go informers and hands every new result to a sink.
package netpol

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// IP protocol numbers of the allow entries.
const (
	ProtoTCP  uint8 = 6
	ProtoUDP  uint8 = 17
	ProtoSCTP uint8 = 132
)

// Allow is one allowed peer: an IPv4 prefix, a protocol (0: any) and a
// destination port range (PortMin 0: every port of the protocol).
type Allow struct {
	Peer    netip.Prefix
	Proto   uint8
	PortMin uint16
	PortMax uint16
}

func (a Allow) String() string {
	s := a.Peer.String()
	if a.Proto != 0 {
		s += fmt.Sprintf(" proto %d", a.Proto)
	}
	if a.PortMin != 0 {
		s += fmt.Sprintf(" port %d", a.PortMin)
		if a.PortMax != a.PortMin {
			s += fmt.Sprintf("-%d", a.PortMax)
		}
	}
	return s
}

// PodRules is what the policies say of one pod. An isolated direction lets
// only what its allow list names through; a direction no policy selects the
// pod for is open.
type PodRules struct {
	Namespace, Name string
	IngressIsolated bool
	EgressIsolated  bool
	Ingress         []Allow // sources the pod accepts new connections from, and to which of its ports
	Egress          []Allow // destinations the pod may open connections to
}

// Result maps a pod's IPv4 address to its rules. Only pods selected by at
// least one policy appear.
type Result map[netip.Addr]PodRules

// Equal reports whether two results enforce the same thing.
func (r Result) Equal(o Result) bool {
	if len(r) != len(o) {
		return false
	}
	for ip, a := range r {
		b, ok := o[ip]
		if !ok || a.IngressIsolated != b.IngressIsolated || a.EgressIsolated != b.EgressIsolated ||
			!slices.Equal(a.Ingress, b.Ingress) || !slices.Equal(a.Egress, b.Egress) {
			return false
		}
	}
	return true
}

// podInfo is a running pod with an IPv4 address.
type podInfo struct {
	pod *corev1.Pod
	ip  netip.Addr
}

// Compute evaluates the policies against the pods and namespaces. Pods
// without an IPv4 address, host-network pods and finished pods are neither
// selected nor peers. Problems that make a policy part unusable (a bad
// selector or CIDR) make that part allow nothing and are returned as
// warnings; they never widen what is allowed.
func Compute(policies []*networkingv1.NetworkPolicy, pods []*corev1.Pod, namespaces []*corev1.Namespace) (Result, []error) {
	return ComputeKnown(policies, pods, namespaces, nil)
}

// ComputeKnown is Compute where a pod without an address in its status
// has the one known gives ("namespace/name" → address): a pod attached a
// moment ago, whose status the kubelet has not written yet, is selected
// and admitted as a peer all the same.
func ComputeKnown(policies []*networkingv1.NetworkPolicy, pods []*corev1.Pod, namespaces []*corev1.Namespace, known map[string]netip.Addr) (Result, []error) {
	var warns []error
	nsLabels := map[string]labels.Set{}
	for _, ns := range namespaces {
		nsLabels[ns.Name] = labels.Set(ns.Labels)
	}
	var running []podInfo
	for _, p := range pods {
		if p.Spec.HostNetwork || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed ||
			p.DeletionTimestamp != nil {
			continue
		}
		if ip, ok := podIPv4(p); ok {
			running = append(running, podInfo{pod: p, ip: ip})
		} else if ip, ok := known[p.Namespace+"/"+p.Name]; ok && ip.Is4() {
			running = append(running, podInfo{pod: p, ip: ip})
		}
	}
	sort.Slice(running, func(i, j int) bool { return running[i].ip.Less(running[j].ip) })

	res := Result{}
	sorted := slices.Clone(policies)
	sort.Slice(sorted, func(i, j int) bool {
		return sorted[i].Namespace+"/"+sorted[i].Name < sorted[j].Namespace+"/"+sorted[j].Name
	})
	for _, pol := range sorted {
		name := pol.Namespace + "/" + pol.Name
		sel, err := metav1.LabelSelectorAsSelector(&pol.Spec.PodSelector)
		if err != nil {
			warns = append(warns, fmt.Errorf("networkpolicy %s: pod selector: %w", name, err))
			sel = nil // still isolates nothing: a selector we cannot read selects no pod
		}
		ingress, egress := policyTypes(pol)
		for _, target := range running {
			if sel == nil || target.pod.Namespace != pol.Namespace || !sel.Matches(labels.Set(target.pod.Labels)) {
				continue
			}
			r := res[target.ip]
			r.Namespace, r.Name = target.pod.Namespace, target.pod.Name
			if ingress {
				r.IngressIsolated = true
				for i, rule := range pol.Spec.Ingress {
					a, w := ruleAllows(pol.Namespace, rule.From, rule.Ports, &target, running, nsLabels)
					warns = appendWarns(warns, fmt.Sprintf("networkpolicy %s ingress rule %d", name, i), w)
					r.Ingress = append(r.Ingress, a...)
				}
			}
			if egress {
				r.EgressIsolated = true
				for i, rule := range pol.Spec.Egress {
					a, w := ruleAllows(pol.Namespace, rule.To, rule.Ports, nil, running, nsLabels)
					warns = appendWarns(warns, fmt.Sprintf("networkpolicy %s egress rule %d", name, i), w)
					r.Egress = append(r.Egress, a...)
				}
			}
			res[target.ip] = r
		}
	}
	for ip, r := range res {
		r.Ingress = normalize(r.Ingress)
		r.Egress = normalize(r.Egress)
		res[ip] = r
	}
	return res, warns
}

func appendWarns(warns []error, where string, w []error) []error {
	for _, e := range w {
		warns = append(warns, fmt.Errorf("%s: %w", where, e))
	}
	return warns
}

// policyTypes gives the directions a policy isolates: its policyTypes, or
// when empty Ingress always and Egress when it has egress rules.
func policyTypes(pol *networkingv1.NetworkPolicy) (ingress, egress bool) {
	if len(pol.Spec.PolicyTypes) == 0 {
		return true, len(pol.Spec.Egress) > 0
	}
	for _, t := range pol.Spec.PolicyTypes {
		switch t {
		case networkingv1.PolicyTypeIngress:
			ingress = true
		case networkingv1.PolicyTypeEgress:
			egress = true
		}
	}
	return ingress, egress
}

func podIPv4(p *corev1.Pod) (netip.Addr, bool) {
	cands := []string{p.Status.PodIP}
	for _, ip := range p.Status.PodIPs {
		cands = append(cands, ip.IP)
	}
	for _, c := range cands {
		if ip, err := netip.ParseAddr(c); err == nil && ip.Is4() {
			return ip, true
		}
	}
	return netip.Addr{}, false
}

// peerAddr is one peer: a prefix and, for a pod, the pod (for named ports).
type peerAddr struct {
	prefix netip.Prefix
	pod    *corev1.Pod
}

// ruleAllows expands one rule. target is the selected pod for ingress rules
// (named ports resolve against it) and nil for egress rules (named ports
// resolve against each peer pod; for a prefix peer, against each running pod
// inside it).
func ruleAllows(ns string, peers []networkingv1.NetworkPolicyPeer, ports []networkingv1.NetworkPolicyPort,
	target *podInfo, running []podInfo, nsLabels map[string]labels.Set) ([]Allow, []error) {
	var warns []error
	var addrs []peerAddr
	if len(peers) == 0 {
		addrs = []peerAddr{{prefix: netip.MustParsePrefix("0.0.0.0/0")}}
	}
	for _, peer := range peers {
		switch {
		case peer.IPBlock != nil:
			cidr, err := netip.ParsePrefix(peer.IPBlock.CIDR)
			if err != nil {
				warns = append(warns, fmt.Errorf("ipBlock cidr %q: %w", peer.IPBlock.CIDR, err))
				continue
			}
			if !cidr.Addr().Is4() {
				continue // IPv6 blocks: the datapath enforces IPv4 only
			}
			var except []netip.Prefix
			bad := false
			for _, e := range peer.IPBlock.Except {
				p, err := netip.ParsePrefix(e)
				if err != nil {
					warns = append(warns, fmt.Errorf("ipBlock except %q: %w", e, err))
					bad = true
					continue
				}
				if p.Addr().Is4() {
					except = append(except, p.Masked())
				}
			}
			if bad {
				continue
			}
			for _, p := range subtract(cidr.Masked(), except) {
				addrs = append(addrs, peerAddr{prefix: p})
			}
		case peer.PodSelector != nil || peer.NamespaceSelector != nil:
			podSel := labels.Everything()
			if peer.PodSelector != nil {
				s, err := metav1.LabelSelectorAsSelector(peer.PodSelector)
				if err != nil {
					warns = append(warns, fmt.Errorf("podSelector: %w", err))
					continue
				}
				podSel = s
			}
			var nsSel labels.Selector // nil: the policy's namespace only
			if peer.NamespaceSelector != nil {
				s, err := metav1.LabelSelectorAsSelector(peer.NamespaceSelector)
				if err != nil {
					warns = append(warns, fmt.Errorf("namespaceSelector: %w", err))
					continue
				}
				nsSel = s
			}
			for _, pi := range running {
				if nsSel == nil {
					if pi.pod.Namespace != ns {
						continue
					}
				} else if nl, ok := nsLabels[pi.pod.Namespace]; !ok || !nsSel.Matches(nl) {
					continue
				}
				if podSel.Matches(labels.Set(pi.pod.Labels)) {
					addrs = append(addrs, peerAddr{prefix: netip.PrefixFrom(pi.ip, 32), pod: pi.pod})
				}
			}
		}
	}
	var out []Allow
	for _, a := range addrs {
		if len(ports) == 0 {
			out = append(out, Allow{Peer: a.prefix})
			continue
		}
		for _, p := range ports {
			if target == nil && a.pod == nil && p.Port != nil && p.Port.Type == intstr.String {
				// An egress named port to a prefix (no "to", or an ipBlock):
				// the pods inside the prefix that name that port, each on its
				// own number (docs/k8s.md "NetworkPolicy").
				for _, pi := range running {
					if !a.prefix.Contains(pi.ip) {
						continue
					}
					if al, ok, _ := portAllow(p, pi.pod); ok {
						al.Peer = netip.PrefixFrom(pi.ip, 32)
						out = append(out, al)
					}
				}
				continue
			}
			portPod := a.pod
			if target != nil {
				portPod = target.pod
			}
			al, ok, err := portAllow(p, portPod)
			if err != nil {
				warns = append(warns, err)
			}
			if ok {
				al.Peer = a.prefix
				out = append(out, al)
			}
		}
	}
	return out, warns
}

// portAllow resolves one NetworkPolicyPort. A named port resolves against
// pod's container ports (nil pod: unresolvable, allows nothing).
func portAllow(p networkingv1.NetworkPolicyPort, pod *corev1.Pod) (Allow, bool, error) {
	proto := ProtoTCP
	if p.Protocol != nil {
		switch *p.Protocol {
		case corev1.ProtocolTCP:
		case corev1.ProtocolUDP:
			proto = ProtoUDP
		case corev1.ProtocolSCTP:
			proto = ProtoSCTP
		default:
			return Allow{}, false, fmt.Errorf("protocol %q unknown", *p.Protocol)
		}
	}
	a := Allow{Proto: proto}
	if p.Port == nil {
		return a, true, nil
	}
	var port int32
	if p.Port.Type == intstr.String {
		if pod == nil {
			return Allow{}, false, nil
		}
		found := false
		for _, c := range pod.Spec.Containers {
			for _, cp := range c.Ports {
				cproto := cp.Protocol
				if cproto == "" {
					cproto = corev1.ProtocolTCP
				}
				if cp.Name == p.Port.StrVal && strings.EqualFold(string(cproto), protoName(proto)) {
					port, found = cp.ContainerPort, true
				}
			}
		}
		if !found {
			return Allow{}, false, nil
		}
	} else {
		port = p.Port.IntVal
	}
	if port < 1 || port > 65535 {
		return Allow{}, false, fmt.Errorf("port %d out of range", port)
	}
	a.PortMin, a.PortMax = uint16(port), uint16(port)
	if p.EndPort != nil && p.Port.Type == intstr.Int {
		if *p.EndPort < port || *p.EndPort > 65535 {
			return Allow{}, false, fmt.Errorf("endPort %d below port %d or out of range", *p.EndPort, port)
		}
		a.PortMax = uint16(*p.EndPort)
	}
	return a, true, nil
}

func protoName(p uint8) string {
	switch p {
	case ProtoUDP:
		return "UDP"
	case ProtoSCTP:
		return "SCTP"
	}
	return "TCP"
}

// subtract returns p minus the except prefixes as a list of prefixes.
func subtract(p netip.Prefix, except []netip.Prefix) []netip.Prefix {
	var overlapping []netip.Prefix
	for _, e := range except {
		if e.Bits() <= p.Bits() && e.Contains(p.Addr()) {
			return nil // p lies inside an exception
		}
		if p.Overlaps(e) {
			overlapping = append(overlapping, e)
		}
	}
	if len(overlapping) == 0 {
		return []netip.Prefix{p}
	}
	lo := netip.PrefixFrom(p.Addr(), p.Bits()+1)
	b := p.Addr().As4()
	bit := p.Bits()
	b[bit/8] |= 0x80 >> (bit % 8)
	hi := netip.PrefixFrom(netip.AddrFrom4(b), p.Bits()+1)
	return append(subtract(lo, overlapping), subtract(hi, overlapping)...)
}

// normalize sorts and deduplicates allow entries.
func normalize(as []Allow) []Allow {
	sort.Slice(as, func(i, j int) bool {
		a, b := as[i], as[j]
		if a.Peer != b.Peer {
			if a.Peer.Addr() != b.Peer.Addr() {
				return a.Peer.Addr().Less(b.Peer.Addr())
			}
			return a.Peer.Bits() < b.Peer.Bits()
		}
		if a.Proto != b.Proto {
			return a.Proto < b.Proto
		}
		if a.PortMin != b.PortMin {
			return a.PortMin < b.PortMin
		}
		return a.PortMax < b.PortMax
	})
	return slices.Compact(as)
}
