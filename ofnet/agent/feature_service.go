package agent

import (
	"context"
	"errors"
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
	// AffinityTimeout, when not zero, gives the service ClientIP session affinity
	// (docs/services.md, "Session affinity"; Kubernetes sessionAffinity: ClientIP):
	// a client's new connection to a VIP:port goes to the provider its previous
	// one went to, unless that one left or the client opened none for
	// AffinityTimeout seconds (the switch holds at most MaxAffinityTimeout).
	AffinityTimeout uint32
}

// MaxAffinityTimeout is the longest session affinity the switch keeps: a learned
// flow's hard timeout is 16 bits of seconds (longer ones are cut to it).
const MaxAffinityTimeout = 65535

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
	return a.Vrf == b.Vrf && a.IpAddress == b.IpAddress && slices.Equal(a.Ports, b.Ports) &&
		a.AffinityTimeout == b.AffinityTimeout
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
	roleLookup      = iota + 1 // client → VIP, every packet (before conntrack)
	roleNew                    // client → VIP, new connection → select group
	roleProvIn                 // client → provider, after translation
	roleProvOut                // provider → anyone, before conntrack
	roleReply                  // provider → client, translated back to the VIP
	roleDropInv                // invalid conntrack state
	roleDirect                 // client → provider directly (tracked, not counted)
	roleAffinityNAT            // new connection bound to a provider (session affinity)
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
	s.a.affinityLocked(d.affinity)
}

// affinityCookie is the cookie of the flows the switch learns for a service's
// session affinity.
func affinityCookie(name string) uint64 { return pipeline.CookieOf(pipeline.CatSvcAffinity, name) }

// affinityTimeout is the hard timeout of a service's learned flows.
func (sp ServiceSpec) affinityTimeout() uint16 {
	return uint16(min(sp.AffinityTimeout, MaxAffinityTimeout))
}

// affinityLocked puts, for each active service with session affinity whose VRF is
// on this bridge, its learned-flow cookie and the signature of what its learned
// flows hold (VRF, VIP, ports, timeout) into out.
func (a *Agent) affinityLocked(out map[uint64]string) {
	for name, svc := range a.services {
		if !svc.active() || svc.spec.AffinityTimeout == 0 {
			continue
		}
		vrfID, ok := a.vrfIDLocked(svc.spec.Vrf)
		if !ok {
			continue
		}
		out[affinityCookie(name)] = fmt.Sprintf("%d/%s/%v/%d", vrfID, svc.vip, svc.spec.Ports, svc.spec.affinityTimeout())
	}
}

// syncAffinityLocked deletes the learned flows of every service whose affinity went
// (service deleted, affinity off, no providers or network left) or changed, and
// records want as the affinity now installed. A failed deletion is kept for the
// next sync.
func (a *Agent) syncAffinityLocked(ctx context.Context, want map[uint64]string) error {
	keep := map[uint64]bool{}
	for c := range want {
		keep[c] = true
	}
	for c := range a.affinity {
		keep[c] = true
	}
	a.learned.Store(&keep)
	var errs []error
	for c, sig := range a.affinity {
		if w, ok := want[c]; ok && w == sig {
			continue
		}
		if err := a.sw.DeleteFlowsByCookie(ctx, c, ^uint64(0)); err != nil {
			errs = append(errs, fmt.Errorf("delete learned flows %#x: %w", c, err))
			continue
		}
		delete(a.affinity, c)
	}
	for c, sig := range want {
		a.affinity[c] = sig
	}
	keep = map[uint64]bool{}
	for c := range a.affinity {
		keep[c] = true
	}
	a.learned.Store(&keep)
	return errors.Join(errs...)
}

// keepLearned tells the controller's resync which unrecorded flows are learned
// affinity flows of a current service (ofctrl Config.KeepUnrecorded). Learned
// flows of services this agent does not have (a previous run's) are stale.
func (a *Agent) keepLearned(f ofctrl.Flow) bool {
	if f.Table != uint8(pipeline.SrvAffinityTable) || pipeline.CookieCategory(f.Cookie) != pipeline.CatSvcAffinity {
		return false
	}
	m := a.learned.Load()
	return m != nil && (*m)[f.Cookie]
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
			affinity := svc.spec.AffinityTimeout > 0
			newConn := toVIP(prioSvcVIP).MatchCtState(of.CtStateTrk|of.CtStateNew, of.CtStateTrk|of.CtStateNew).
				MatchCtZone(zone).Action()
			if !affinity {
				// 2. A new connection: the select group picks a provider.
				sf(i, "", roleNew)(newConn.Group(svc.groups[i]).Done())
			} else {
				// 2'. Session affinity: a new connection looks its client up in
				// the affinity table (a learned flow loads the bound provider
				// into the registers) and goes on to the affinity DNAT table.
				// The move makes OVS's cached datapath flow of this step depend
				// on the client's source port: the select group below picks by a
				// hash the datapath computes after a recirculation, so without it
				// one cached flow, made before the client's binding was learned,
				// would take the client's next connections to the group again
				// until OVS revalidated it (docs/services.md).
				sport := of.NXMOfTCPSrc
				if proto == pipeline.ProtoUDP {
					sport = of.NXMOfUDPSrc
				}
				sf(i, "", roleNew)(newConn.Move(of.LearnField{Header: sport}, of.LearnField{Header: of.NXMReg(pipeline.SvcAffinitySrcPortReg)}, 16).
					Resubmit(pipeline.SrvAffinityTable).GotoTable(pipeline.SrvAffinityDNATTable).Done())
				t15 := s.table(pipeline.SrvAffinityDNATTable)
				// 2'b. No binding (or one to a provider that left): the select
				// group picks a provider, whose bucket loads it into the
				// registers and comes back to this table (2'c).
				sf(i, "", roleNew)(l4dst(t15.BuildFlow(prioSvcAffinityPick).Cookie(cookie).MatchIPv4Dst(svc.vip, nil).MatchIPProto(proto), p.SvcPort).
					MatchMetadata(pipeline.VRFField, vrfMeta).Action().Group(svc.groups[i]).Done())
				// The affinity table's miss: no binding, nothing loaded.
				miss, err := s.table(pipeline.SrvAffinityTable).BuildFlow(pipeline.MissPriority).
					Cookie(pipeline.CookieOf(pipeline.CatService, "affinity")).Action().Drop().Done()
				add(svcFlow{obj: "service-affinity", flow: miss, err: err, service: name, port: -1, role: roleNew})
			}
			g := ofctrl.Group{ID: svc.groups[i], Type: of.GroupTypeSelect}
			for _, prov := range svc.providers {
				var acts []of.Action
				ep, known := byIP[svc.spec.Vrf+"/"+prov.String()]
				if affinity {
					// 2'c. The provider picked or bound: learn (or refresh) the
					// client's binding, then commit the connection with the
					// destination NAT to it, as the bucket does without affinity.
					acts = []of.Action{of.ActionSetField{Field: of.OXMReg(pipeline.SvcAffinityIPReg, ipUint(prov), 0xffffffff)},
						of.ActionSetField{Field: of.OXMReg(pipeline.SvcAffinityPortReg, uint32(p.ProvPort), 0xffffffff)},
						of.ActionResubmit{InPort: of.OFPPInPortNX, Table: uint8(pipeline.SrvAffinityDNATTable)}}
					ab := l4dst(s.table(pipeline.SrvAffinityDNATTable).BuildFlow(prioSvcAffinityBound).Cookie(cookie).
						MatchIPv4Dst(svc.vip, nil).MatchIPProto(proto), p.SvcPort).MatchMetadata(pipeline.VRFField, vrfMeta).
						MatchReg(pipeline.SvcAffinityIPReg, ipUint(prov)).MatchReg(pipeline.SvcAffinityPortReg, uint32(p.ProvPort)).
						Action().Learn(affinityLearn(name, *svc.spec, proto, prov, p.ProvPort))
					if known {
						ab = ab.SetEthDst(ep.MAC)
					}
					sf(i, prov.String(), roleAffinityNAT)(ab.Conntrack(of.ActionConntrack{Flags: of.NXCTFlagCommit, Zone: zone,
						RecircTable: uint8(pipeline.DstGroupTable), Actions: []of.Action{
							of.ActionNAT{Flags: of.NXNATFlagDst, IPv4Min: prov, ProtoMin: p.ProvPort}}}).Done())
				} else {
					if known {
						acts = append(acts, of.ActionSetField{Field: of.OXMEthDst(ep.MAC)})
					}
					acts = append(acts, of.ActionConntrack{Flags: of.NXCTFlagCommit, Zone: zone,
						RecircTable: uint8(pipeline.DstGroupTable), Actions: []of.Action{
							of.ActionNAT{Flags: of.NXNATFlagDst, IPv4Min: prov, ProtoMin: p.ProvPort}}})
				}
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

// ipUint is an IPv4 address as a register value.
func ipUint(ip net.IP) uint32 {
	v := ip.To4()
	return uint32(v[0])<<24 | uint32(v[1])<<16 | uint32(v[2])<<8 | uint32(v[3])
}

// affinityLearn is the learn action of a service's session affinity: the switch
// adds (or refreshes) in the affinity table a flow matching the client's address,
// the VIP, the protocol, the service port and the VRF, which loads the provider and
// its port into the affinity registers, for the affinity timeout. delete_learned
// drops the learned flows once no flow of the service holds the learn action; the
// agent also deletes them by cookie (syncAffinityLocked).
func affinityLearn(name string, spec ServiceSpec, proto uint8, prov net.IP, provPort uint16) of.ActionLearn {
	dport := of.NXMOfTCPDst
	if proto == pipeline.ProtoUDP {
		dport = of.NXMOfUDPDst
	}
	vrf := pipeline.VRFField
	return of.ActionLearn{HardTimeout: spec.affinityTimeout(), Priority: prioSvcAffinityLearned,
		Cookie: affinityCookie(name), Flags: of.NXLearnFlagDeleteLearned, Table: uint8(pipeline.SrvAffinityTable),
		Specs: []of.LearnSpec{
			of.LearnMatchValue(of.LearnField{Header: of.NXMOfEthType}, 16, uint64(pipeline.EthTypeIPv4)),
			of.LearnMatchValue(of.LearnField{Header: of.NXMOfIPProto}, 8, uint64(proto)),
			of.LearnMatchField(of.LearnField{Header: of.OXMOfMetadata, Ofs: uint16(vrf.Shift)}, uint16(vrf.Bits)),
			of.LearnMatchField(of.LearnField{Header: of.NXMOfIPSrc}, 32),
			of.LearnMatchField(of.LearnField{Header: of.NXMOfIPDst}, 32),
			of.LearnMatchField(of.LearnField{Header: dport}, 16),
			of.LearnLoadValue(uint64(ipUint(prov)), of.LearnField{Header: of.NXMReg(pipeline.SvcAffinityIPReg)}, 32),
			of.LearnLoadValue(uint64(provPort), of.LearnField{Header: of.NXMReg(pipeline.SvcAffinityPortReg)}, 32),
		}}
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
		if svc, ok := a.services[m.name]; ok && svc.spec != nil && svc.spec.AffinityTimeout == 0 {
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
		case roleAffinityNAT: // every new connection of an affinity port passes here once
			pv := ps.Providers[f.prov]
			pv.Connections += c.PacketCount
			pv.PacketsIn += c.PacketCount
			pv.BytesIn += c.ByteCount
			ps.Providers[f.prov] = pv
			ps.Connections += c.PacketCount
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
