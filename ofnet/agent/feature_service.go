package agent

import (
	"context"
	"fmt"
	"hash/fnv"
	"net"
	"slices"
	"sort"
	"strings"

	"github.com/contiv/netplugin/ofnet/ofctrl"
	of "github.com/contiv/netplugin/ofnet/openflow13"
	"github.com/contiv/netplugin/ofnet/pipeline"
)

// ServicePort is one port of a service: connections to the VIP on SvcPort go to a
// provider on ProvPort. Protocol is "TCP" or "UDP" (any case).
type ServicePort struct {
	Protocol string
	SvcPort  uint16
	ProvPort uint16
}

// ServiceSpec is a load-balanced service (docs/services.md): its VIP in a tenant (VRF)
// and its ports.
type ServiceSpec struct {
	Vrf       string
	IpAddress string
	Ports     []ServicePort
}

// service is one service known to the agent: its spec (nil until AddSvcSpec), its
// providers and the select group of each port.
type service struct {
	spec      *ServiceSpec
	vip       net.IP
	providers []net.IP
	groups    []uint32 // per port, parallel to spec.Ports
}

func (s *service) active() bool { return s.spec != nil && len(s.providers) > 0 }

func (p ServicePort) proto() (uint8, error) {
	switch strings.ToUpper(p.Protocol) {
	case "TCP":
		return pipeline.ProtoTCP, nil
	case "UDP":
		return pipeline.ProtoUDP, nil
	}
	return 0, fmt.Errorf("protocol %q: want TCP or UDP", p.Protocol)
}

func (sp ServiceSpec) validate(name string) (net.IP, error) {
	if name == "" {
		return nil, fmt.Errorf("agent: service spec: empty service name")
	}
	if sp.Vrf == "" {
		return nil, fmt.Errorf("agent: service %s: empty VRF (tenant)", name)
	}
	vip := net.ParseIP(sp.IpAddress).To4()
	if vip == nil {
		return nil, fmt.Errorf("agent: service %s: VIP %q is not an IPv4 address", name, sp.IpAddress)
	}
	if len(sp.Ports) == 0 {
		return nil, fmt.Errorf("agent: service %s: no ports", name)
	}
	seen := map[string]bool{}
	for _, p := range sp.Ports {
		if _, err := p.proto(); err != nil {
			return nil, fmt.Errorf("agent: service %s port %d: %w", name, p.SvcPort, err)
		}
		if p.SvcPort == 0 || p.ProvPort == 0 {
			return nil, fmt.Errorf("agent: service %s: port %d:%d: ports must be 1..65535", name, p.SvcPort, p.ProvPort)
		}
		k := strings.ToUpper(p.Protocol) + itoa(uint64(p.SvcPort))
		if seen[k] {
			return nil, fmt.Errorf("agent: service %s: service port %s/%d given twice", name, p.Protocol, p.SvcPort)
		}
		seen[k] = true
	}
	return vip, nil
}

// Conntrack zones of the service load balancer: one per VRF, offset per datapath,
// because the bridges of one ovs-vswitchd share its connection tracker.
func (a *Agent) svcZone(vrfID uint8) uint16 {
	switch a.cfg.Datapath {
	case DatapathVlan:
		return 0x2000 | uint16(vrfID)
	default:
		return 0x1000 | uint16(vrfID)
	}
}

// Service groups live above the flood groups (2*vlan, 2*vlan+1 < 8192).
const (
	svcGroupBase  uint32 = 0x10000
	svcGroupRange uint32 = 0x1000000
)

// allocSvcGroupLocked gives a service port a select group id derived from its name,
// so a restarted agent uses the same ids; collisions probe to the next free id.
func (a *Agent) allocSvcGroupLocked(name string, port ServicePort) uint32 {
	used := map[uint32]bool{}
	for _, s := range a.services {
		for _, g := range s.groups {
			used[g] = true
		}
	}
	h := fnv.New32a()
	fmt.Fprintf(h, "%s/%s/%d", name, strings.ToUpper(port.Protocol), port.SvcPort)
	id := svcGroupBase + h.Sum32()%svcGroupRange
	for used[id] {
		id = svcGroupBase + (id-svcGroupBase+1)%svcGroupRange
	}
	return id
}

// AddSvcSpec adds or replaces a service's spec. An invalid spec is an error and
// changes nothing. The service is active (its flows installed) once it also has
// providers and its VRF has a network on this bridge.
func (a *Agent) AddSvcSpec(ctx context.Context, name string, spec ServiceSpec) error {
	vip, err := spec.validate(name)
	if err != nil {
		return err
	}
	spec.Ports = slices.Clone(spec.Ports)
	return a.change(ctx, "add service "+name, func() func() {
		old, had := a.services[name]
		if had && old.spec != nil && sameSpec(*old.spec, spec) {
			return nil
		}
		s := &service{spec: &spec, vip: vip}
		if had {
			s.providers = old.providers
		}
		a.services[name] = s // before allocating, so its own old groups are free again
		for _, p := range spec.Ports {
			s.groups = append(s.groups, a.allocSvcGroupLocked(name, p))
		}
		return func() {
			if had {
				a.services[name] = old
			} else {
				delete(a.services, name)
			}
		}
	})
}

func sameSpec(a, b ServiceSpec) bool {
	return a.Vrf == b.Vrf && a.IpAddress == b.IpAddress && slices.Equal(a.Ports, b.Ports)
}

// DelSvcSpec removes a service and all its flows and groups. Unknown names are a
// no-op.
func (a *Agent) DelSvcSpec(ctx context.Context, name string) error {
	return a.change(ctx, "delete service "+name, func() func() {
		old, ok := a.services[name]
		if !ok {
			return nil
		}
		delete(a.services, name)
		return func() { a.services[name] = old }
	})
}

// SvcProviderUpdate sets a service's provider addresses (IPv4). New connections are
// spread over the providers; a provider that left gets no new connections. The
// providers may arrive before the spec. A bad address is an error and changes nothing.
func (a *Agent) SvcProviderUpdate(ctx context.Context, name string, providers []string) error {
	var ips []net.IP
	seen := map[string]bool{}
	for _, p := range providers {
		ip := net.ParseIP(p).To4()
		if ip == nil {
			return fmt.Errorf("agent: service %s: provider %q is not an IPv4 address", name, p)
		}
		if !seen[ip.String()] {
			seen[ip.String()] = true
			ips = append(ips, ip)
		}
	}
	sort.Slice(ips, func(i, j int) bool { return string(ips[i]) < string(ips[j]) })
	return a.change(ctx, "update providers of service "+name, func() func() {
		old, had := a.services[name]
		if (had && slices.EqualFunc(old.providers, ips, net.IP.Equal)) || (!had && len(ips) == 0) {
			return nil
		}
		s := &service{providers: ips}
		if had {
			s.spec, s.vip, s.groups = old.spec, old.vip, old.groups
		}
		if s.spec == nil && len(ips) == 0 {
			delete(a.services, name)
		} else {
			a.services[name] = s
		}
		return func() {
			if had {
				a.services[name] = old
			} else {
				delete(a.services, name)
			}
		}
	})
}

// isServiceVIPLocked reports whether ip is the VIP of an active service of vrf.
func (a *Agent) isServiceVIPLocked(ip net.IP, vrf string) bool {
	for _, s := range a.services {
		if s.active() && s.spec.Vrf == vrf && s.vip.Equal(ip) {
			return true
		}
	}
	return false
}

// serviceProxyMAC is the MAC ARP answers for a VIP: 02:02 and the VIP's bytes.
func serviceProxyMAC(vip net.IP) net.HardwareAddr {
	v := vip.To4()
	return net.HardwareAddr{0x02, 0x02, v[0], v[1], v[2], v[3]}
}

// Roles of service flows, for the counters.
const (
	roleLookup  = iota + 1 // client → VIP, every packet (before conntrack)
	roleNew                // client → VIP, new connection → select group
	roleProvIn             // client → provider, after translation
	roleProvOut            // provider → anyone, before conntrack
	roleReply              // provider → client, translated back to the VIP
	roleDropInv            // invalid conntrack state
	roleDirect             // client → provider directly (tracked, not counted)
)

// svcFlow is one flow of the service feature with what it counts.
type svcFlow struct {
	obj     string
	flow    ofctrl.Flow
	err     error
	service string
	port    int    // index into the spec's ports
	prov    string // provider IP for roleProvIn/roleProvOut
	role    int
}

// featureService is the service load balancer (docs/services.md):
// new connections to VIP:port are spread over the providers by an OpenFlow select
// group whose buckets commit the connection in the connection tracker with a
// destination NAT to one provider; later packets of the connection, and the replies,
// are translated by the tracker. Nothing goes to the controller.
type featureService struct{}

func (featureService) name() string { return "service" }

func (featureService) flows(s *snapshot, d *desiredState) {
	flows, groups := s.a.serviceFlowsLocked(s)
	for _, g := range groups {
		d.addGroup(g)
	}
	for _, f := range flows {
		d.add(f.obj, f.flow, f.err)
	}
}

// serviceFlowsLocked computes the flows and select groups of every active service.
func (a *Agent) serviceFlowsLocked(s *snapshot) ([]svcFlow, []ofctrl.Group) {
	names := make([]string, 0, len(a.services))
	for n := range a.services {
		names = append(names, n)
	}
	sort.Strings(names)
	byIP := map[string]endpoint{}
	for _, ep := range append(append([]endpoint(nil), s.locals...), s.remotes...) {
		byIP[ep.Vrf+"/"+ep.IP.String()] = ep
	}
	next := pipeline.MacDestTable
	if a.cfg.Datapath == DatapathVrouter {
		next = pipeline.IPTable
	}
	t3, t6 := s.table(pipeline.SrvProxyDNATTable), s.table(pipeline.SrvProxySNATTable)
	var out []svcFlow
	var groups []ofctrl.Group
	seen := map[ofctrl.FlowKey]bool{}
	add := func(f svcFlow) {
		if f.err == nil {
			k := f.flow.Key()
			if seen[k] {
				return // two services share a provider port: one flow serves both
			}
			seen[k] = true
		}
		out = append(out, f)
	}
	for _, name := range names {
		svc := a.services[name]
		if !svc.active() {
			continue
		}
		vrfID, ok := a.vrfIDLocked(svc.spec.Vrf)
		if !ok {
			continue // no network of the tenant here
		}
		zone := a.svcZone(vrfID)
		obj := "service:" + name
		cookie := pipeline.CookieOf(pipeline.CatService, name)
		vrfMeta := uint64(vrfID)
		sf := func(port int, prov string, role int) func(ofctrl.Flow, error) {
			return func(f ofctrl.Flow, err error) {
				add(svcFlow{obj: obj, flow: f, err: err, service: name, port: port, prov: prov, role: role})
			}
		}
		sf(-1, "", roleDropInv)(t3.BuildFlow(prioSvcInvalid).Cookie(cookie).MatchEthType(pipeline.EthTypeIPv4).
			MatchCtState(of.CtStateTrk|of.CtStateInv, of.CtStateTrk|of.CtStateInv).MatchCtZone(zone).
			MatchMetadata(pipeline.VRFField, vrfMeta).Action().Drop().Done())
		for i, p := range svc.spec.Ports {
			proto, _ := p.proto()
			l4dst := func(fb *pipeline.FlowBuilder, port uint16) *pipeline.FlowBuilder {
				if proto == pipeline.ProtoTCP {
					return fb.MatchTCPDst(port)
				}
				return fb.MatchUDPDst(port)
			}
			l4src := func(fb *pipeline.FlowBuilder, port uint16) *pipeline.FlowBuilder {
				if proto == pipeline.ProtoTCP {
					return fb.MatchTCPSrc(port)
				}
				return fb.MatchUDPSrc(port)
			}
			toVIP := func(prio uint16) *pipeline.FlowBuilder {
				return l4dst(t3.BuildFlow(prio).Cookie(cookie).MatchIPv4Dst(svc.vip, nil).MatchIPProto(proto), p.SvcPort).
					MatchMetadata(pipeline.VRFField, vrfMeta)
			}
			// 1. Untracked packets to VIP:port: look the connection up (translating
			// it if it is known) and come back to this table.
			sf(i, "", roleLookup)(toVIP(prioSvcVIP).MatchCtState(0, of.CtStateTrk).Action().
				Conntrack(of.ActionConntrack{Zone: zone, RecircTable: uint8(pipeline.SrvProxyDNATTable),
					Actions: []of.Action{of.ActionNAT{}}}).Done())
			// 2. A new connection: the select group picks a provider.
			sf(i, "", roleNew)(toVIP(prioSvcVIP).MatchCtState(of.CtStateTrk|of.CtStateNew, of.CtStateTrk|of.CtStateNew).
				MatchCtZone(zone).Action().Group(svc.groups[i]).Done())
			g := ofctrl.Group{ID: svc.groups[i], Type: of.GroupTypeSelect}
			for _, prov := range svc.providers {
				var acts []of.Action
				ep, known := byIP[svc.spec.Vrf+"/"+prov.String()]
				if known {
					acts = append(acts, of.ActionSetField{Field: of.OXMEthDst(ep.MAC)})
				}
				acts = append(acts, of.ActionConntrack{Flags: of.NXCTFlagCommit, Zone: zone,
					RecircTable: uint8(pipeline.DstGroupTable), Actions: []of.Action{
						of.ActionNAT{Flags: of.NXNATFlagDst, IPv4Min: prov, ProtoMin: p.ProvPort}}})
				g.Buckets = append(g.Buckets, of.Bucket{Weight: 100, WatchPort: of.OFPPAny, WatchGroup: of.OFPGAny, Actions: acts})
				// 3. Later packets of a connection to this provider, translated by
				// the lookup: send them to the provider's MAC.
				ab := l4dst(t3.BuildFlow(prioSvcVIP).Cookie(cookie).MatchIPv4Dst(prov, nil).MatchIPProto(proto), p.ProvPort).
					MatchMetadata(pipeline.VRFField, vrfMeta).MatchCtState(of.CtStateTrk, of.CtStateTrk).MatchCtZone(zone).Action()
				if known {
					ab = ab.SetEthDst(ep.MAC)
				}
				sf(i, prov.String(), roleProvIn)(ab.GotoTable(pipeline.DstGroupTable).Done())
				// 3b. Untracked packets straight to the provider's port (not through
				// the VIP) are committed in the same zone, without NAT. The tracker
				// then knows the direct connection: when the client reuses its port
				// for a connection through the VIP to the same provider, that one's
				// translated reply tuple collides with the direct one's, and the
				// tracker gives it another source port, so the provider never gets a
				// SYN for a 4-tuple it still holds in TIME-WAIT (docs/services.md).
				// No identity nat(): OVS 3.1's userspace tracker can assert on the
				// mirror entry an identity translation leaves. They go on in table 4,
				// so the provider counters (3.) keep counting only traffic through
				// the VIP; a packet the tracker cannot place (+inv, e.g. a connection
				// opened before the service) is not committed and passes as before.
				sf(i, prov.String(), roleDirect)(l4dst(t3.BuildFlow(prioSvcVIP).Cookie(cookie).MatchIPv4Dst(prov, nil).MatchIPProto(proto), p.ProvPort).
					MatchMetadata(pipeline.VRFField, vrfMeta).MatchCtState(0, of.CtStateTrk).Action().
					Conntrack(of.ActionConntrack{Flags: of.NXCTFlagCommit, Zone: zone, RecircTable: uint8(pipeline.DstGroupTable)}).Done())
				// 4. Packets from the provider's port: replies of a translated
				// connection get the VIP back as their source.
				fb := l4src(t6.BuildFlow(prioSvcReply).Cookie(cookie).MatchIPv4Src(prov, nil).MatchIPProto(proto), p.ProvPort).
					MatchCtState(0, of.CtStateTrk)
				if a.cfg.Datapath != DatapathVlan { // uplink ingress carries no VRF
					fb = fb.MatchMetadata(pipeline.VRFField, vrfMeta)
				}
				sf(i, prov.String(), roleProvOut)(fb.Action().Conntrack(of.ActionConntrack{Zone: zone,
					RecircTable: uint8(pipeline.SrvProxySNATTable), Actions: []of.Action{of.ActionNAT{}}}).Done())
			}
			groups = append(groups, g)
			// 5. Replies translated back to VIP:port (counted, then on as usual).
			sf(i, "", roleReply)(l4src(t6.BuildFlow(prioSvcReply).Cookie(cookie).MatchIPv4Src(svc.vip, nil).MatchIPProto(proto), p.SvcPort).
				MatchCtState(of.CtStateTrk, of.CtStateTrk).MatchCtZone(zone).Action().GotoTable(next).Done())
		}
	}
	return out, groups
}

// ServiceStats are the datapath counters of one service on one bridge.
type ServiceStats struct {
	Service string
	Vrf     string
	VIP     string
	Ports   []ServicePortStats
}

// ServicePortStats counts one port of a service: PacketsIn/BytesIn from clients to
// the VIP, PacketsOut/BytesOut of replies, Connections started through this host,
// and per provider IP what it was sent.
type ServicePortStats struct {
	Protocol    string
	SvcPort     uint16
	ProvPort    uint16
	Connections uint64
	PacketsIn   uint64
	BytesIn     uint64
	PacketsOut  uint64
	BytesOut    uint64
	Providers   map[string]ProviderStats
}

// ProviderStats counts what one provider of a service port was sent through the VIP
// from this host (Connections: new connections it was picked for) and what left its
// port when it is local or its replies came back through this host.
type ProviderStats struct {
	Connections uint64
	PacketsIn   uint64
	BytesIn     uint64
	PacketsOut  uint64
	BytesOut    uint64
}

// ServiceStats reads the counters of every active service from the switch.
func (a *Agent) ServiceStats(ctx context.Context) ([]ServiceStats, error) {
	a.mu.Lock()
	sw := a.sw
	s := &snapshot{a: a, locals: a.localEndpointsLocked(), remotes: a.remoteEndpointsLocked()}
	flows, groups := a.serviceFlowsLocked(s)
	type meta struct {
		name  string
		spec  ServiceSpec
		provs []net.IP
	}
	var metas []meta
	for name, svc := range a.services {
		if svc.active() {
			metas = append(metas, meta{name, *svc.spec, svc.providers})
		}
	}
	a.mu.Unlock()
	if sw == nil || len(groups) == 0 {
		return nil, nil
	}
	fs, err := sw.FlowStats(ctx, of.OFPTTAll, uint64(pipeline.CatService)<<56, pipeline.CookieCategoryMask)
	if err != nil {
		return nil, fmt.Errorf("agent %s: service stats: %w", a.cfg.Bridge, err)
	}
	gs, err := sw.GroupStats(ctx)
	if err != nil {
		return nil, fmt.Errorf("agent %s: service stats: %w", a.cfg.Bridge, err)
	}
	counters := map[ofctrl.FlowKey]of.FlowStats{}
	for _, f := range fs {
		counters[ofctrl.FlowFromStats(&f).Key()] = f
	}
	byGroup := map[uint32]of.GroupStats{}
	for _, g := range gs {
		byGroup[g.GroupID] = g
	}
	stats := map[string]*ServiceStats{}
	sort.Slice(metas, func(i, j int) bool { return metas[i].name < metas[j].name })
	var out []*ServiceStats
	for _, m := range metas {
		st := &ServiceStats{Service: m.name, Vrf: m.spec.Vrf, VIP: m.spec.IpAddress}
		for _, p := range m.spec.Ports {
			st.Ports = append(st.Ports, ServicePortStats{Protocol: strings.ToUpper(p.Protocol), SvcPort: p.SvcPort,
				ProvPort: p.ProvPort, Providers: map[string]ProviderStats{}})
		}
		a.mu.Lock()
		if svc, ok := a.services[m.name]; ok && svc.spec != nil {
			for i, gid := range svc.groups {
				if i >= len(st.Ports) {
					break
				}
				g := byGroup[gid]
				for b, prov := range m.provs {
					if b >= len(g.Buckets) {
						break
					}
					ps := st.Ports[i].Providers[prov.String()]
					ps.Connections += g.Buckets[b].PacketCount
					ps.PacketsIn += g.Buckets[b].PacketCount
					ps.BytesIn += g.Buckets[b].ByteCount
					st.Ports[i].Providers[prov.String()] = ps
					st.Ports[i].Connections += g.Buckets[b].PacketCount
				}
			}
		}
		a.mu.Unlock()
		stats[m.name] = st
		out = append(out, st)
	}
	for _, f := range flows {
		st, ok := stats[f.service]
		if f.err != nil || !ok || f.port < 0 || f.port >= len(st.Ports) {
			continue
		}
		c, ok := counters[f.flow.Key()]
		if !ok {
			continue
		}
		ps := &st.Ports[f.port]
		switch f.role {
		case roleLookup:
			ps.PacketsIn += c.PacketCount
			ps.BytesIn += c.ByteCount
		case roleReply:
			ps.PacketsOut += c.PacketCount
			ps.BytesOut += c.ByteCount
		case roleProvIn:
			pv := ps.Providers[f.prov]
			pv.PacketsIn += c.PacketCount
			pv.BytesIn += c.ByteCount
			ps.Providers[f.prov] = pv
		case roleProvOut:
			pv := ps.Providers[f.prov]
			pv.PacketsOut += c.PacketCount
			pv.BytesOut += c.ByteCount
			ps.Providers[f.prov] = pv
		}
	}
	res := make([]ServiceStats, len(out))
	for i, st := range out {
		res[i] = *st
	}
	return res, nil
}

// EndpointVrfs answers, for each of the IPv4 addresses given that is an endpoint known
// to this agent (local or remote), the VRF (tenant) it is in; an address known in
// two VRFs is answered with both. Front ends that know a service's providers only by
// address (Kubernetes EndpointSlices, docs/k8s.md) find the service's tenant with it.
func (a *Agent) EndpointVrfs(ips []string) map[string][]string {
	want := map[string]bool{}
	for _, s := range ips {
		if ip := net.ParseIP(s).To4(); ip != nil {
			want[ip.String()] = true
		}
	}
	out := map[string][]string{}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, ep := range append(a.localEndpointsLocked(), a.remoteEndpointsLocked()...) {
		k := ep.IP.String()
		if ep.IP != nil && want[k] && !slices.Contains(out[k], ep.Vrf) {
			out[k] = append(out[k], ep.Vrf)
		}
	}
	for _, v := range out {
		sort.Strings(v)
	}
	return out
}
