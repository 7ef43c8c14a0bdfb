package agent

import (
	"net"

	"github.com/contiv/netplugin/ofnet/ofctrl"
	of "github.com/contiv/netplugin/ofnet/openflow13"
	"github.com/contiv/netplugin/ofnet/pipeline"
)

// feature is one part of a pipeline (docs/style.md 15). flows adds the feature's flows and
// groups for the current state, keyed by owning object; the agent diffs the result
// against what is installed, so features are pure functions of the state and replay
// is the same call.
type feature interface {
	name() string
	flows(s *snapshot, d *desiredState)
}

// packetHandler is implemented by features that consume packet-ins; it reports
// whether it handled the packet.
type packetHandler interface {
	handlePacketIn(a *Agent, sw *ofctrl.Switch, pi *of.PacketIn) bool
}

// snapshot is the state the features read, with endpoints resolved. The agent's
// mutex is held while features run.
type snapshot struct {
	a       *Agent
	locals  []endpoint
	remotes []endpoint
}

func (s *snapshot) table(id pipeline.TableID) *pipeline.Table { return s.a.tables.Get(id) }

// Object keys of the flow cache.
func keyInit() string               { return "init" }
func keyNetwork(vlan uint16) string { return "network:" + itoa(uint64(vlan)) }
func keyLocal(ep endpoint) string   { return "local:" + ep.ID }
func keyRemote(ep endpoint) string  { return "remote:" + ep.ID }
func keyVtep(ip string) string      { return "vtep:" + ip }
func keyUplink(port uint32) string  { return "uplink:" + itoa(uint64(port)) }
func keyRule(id string) string      { return "rule:" + id }

func itoa(v uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
}

// Well-known addresses (docs/dataplane.md §0).
var (
	routerMAC    = net.HardwareAddr{0x00, 0x00, 0x11, 0x11, 0x11, 0x11}
	mcastSrcMAC  = net.HardwareAddr{0x01, 0, 0, 0, 0, 0}
	ipv4HostMask = net.CIDRMask(32, 32)
)

// selectFeatures builds the table registry and the feature list of a datapath, once.
func selectFeatures(datapath string) (*pipeline.Registry, []feature) {
	common := pipeline.Misses{
		pipeline.ClassifierTable:   pipeline.MissGoto(pipeline.VlanTable),
		pipeline.SrvProxyDNATTable: pipeline.MissGoto(pipeline.DstGroupTable),
		pipeline.DstGroupTable:     pipeline.MissGoto(pipeline.PolicyTable),
		pipeline.PolicyTable:       pipeline.MissGoto(pipeline.SrvProxySNATTable),
	}
	switch datapath {
	case DatapathVrouter:
		common[pipeline.VlanTable] = pipeline.MissDrop()
		common[pipeline.HostDNATTable] = pipeline.MissDrop()
		common[pipeline.SrvProxySNATTable] = pipeline.MissGoto(pipeline.IPTable)
		common[pipeline.IPTable] = pipeline.MissGoto(pipeline.HostSNATTable)
		common[pipeline.HostSNATTable] = pipeline.MissDrop()
		return pipeline.NewRegistry(common), []feature{featureBase{mcastDrop: true},
			featureVxlanRouting{}, featureHostAccess{}, featurePolicy{ipv6: true}, featureARP{}, featureService{}, featureDNS{}, featureNetpol{}}
	case DatapathVlrouter:
		common[pipeline.VlanTable] = pipeline.MissDrop()
		common[pipeline.SrvProxySNATTable] = pipeline.MissGoto(pipeline.IPTable)
		common[pipeline.IPTable] = pipeline.MissDrop()
		return pipeline.NewRegistry(common), []feature{featureBase{mcastDrop: true},
			featureVlanRouting{}, featurePolicy{}, featureARP{}}
	case DatapathVlan:
		common[pipeline.VlanTable] = pipeline.MissGoto(pipeline.DstGroupTable)
		common[pipeline.SrvProxySNATTable] = pipeline.MissGoto(pipeline.MacDestTable)
		common[pipeline.MacDestTable] = pipeline.MissNormal()
		return pipeline.NewRegistry(common), []feature{featureBase{},
			featureVlanBridge{}, featurePolicy{}, featureARP{}, featureService{}, featureDNS{}, featureNetpol{}}
	default: // DatapathVxlan
		common[pipeline.VlanTable] = pipeline.MissDrop()
		common[pipeline.SrvProxySNATTable] = pipeline.MissGoto(pipeline.MacDestTable)
		common[pipeline.MacDestTable] = pipeline.MissDrop()
		return pipeline.NewRegistry(common), []feature{featureBase{mcastDrop: true},
			featureVxlanBridge{}, featurePolicy{ipv6: true}, featureARP{}, featureService{}, featureDNS{}, featureNetpol{}}
	}
}

// featureBase holds the fixed flows every datapath has: table misses and (every
// datapath but VLAN bridging) the drop of frames with a multicast source MAC and
// of router-only IPv6 multicast (feature_llnoise.go; docs/compat.md NS3).
type featureBase struct{ mcastDrop bool }

func (featureBase) name() string { return "base" }

func (f featureBase) flows(s *snapshot, d *desiredState) {
	cookie := pipeline.CookieOf(pipeline.CatInit, "base")
	misses, err := s.a.tables.MissFlows(cookie)
	if err != nil {
		d.add(keyInit(), ofctrl.Flow{}, err)
		return
	}
	for _, m := range misses {
		d.add(keyInit(), m, nil)
	}
	if f.mcastDrop {
		d.to(keyInit())(s.table(pipeline.ClassifierTable).BuildFlow(prioClassifierRedirect).Cookie(cookie).
			MatchEthSrcMasked(mcastSrcMAC, mcastSrcMAC).Action().Drop().Done())
		linkLocalNoiseFlows(s, d, cookie)
	}
}

// portFlows are the per-port table-1 flows shared by all datapaths (§3.0.5): the
// port-vlan flow and, with DSCP, the marking flows for IPv4 and IPv6; with a rate,
// all of them pass the port's meter (id = port number). pushVlan tags
// packets with the network vlan (VXLAN bridging only).
func portFlows(s *snapshot, d *desiredState, ep endpoint, pushVlan bool) {
	key := keyLocal(ep)
	cookie := pipeline.CookieOf(pipeline.CatLocalEndpoint, ep.ID)
	t := s.table(pipeline.VlanTable)
	build := func(prio uint16, ethType uint16) (ofctrl.Flow, error) {
		fb := t.BuildFlow(prio).Cookie(cookie).MatchInPort(ep.Port)
		if ethType != 0 {
			fb = fb.MatchEthType(ethType)
		}
		ab := fb.Action()
		if ep.Meter.RateKbps > 0 {
			ab = ab.Meter(ep.Meter.ID)
		}
		if ethType != 0 {
			ab = ab.SetDSCP(uint8(ep.Dscp))
		}
		if pushVlan {
			ab = ab.PushVlan(ep.Vlan)
		}
		ab = ab.SetMetadata(pipeline.VRFField, uint64(ep.VrfID))
		if ep.EPG != 0 {
			ab = ab.SetMetadata(pipeline.SrcEPGField, uint64(ep.EPG))
		}
		return ab.GotoTable(pipeline.SrvProxyDNATTable).Done()
	}
	if ep.Meter.RateKbps > 0 {
		d.addMeter(ep.Meter)
	}
	d.to(key)(build(prioVlanPort, 0))
	if ep.Dscp != 0 {
		d.to(key)(build(prioVlanPortDSCP, pipeline.EthTypeIPv4))
		d.to(key)(build(prioVlanPortDSCP, pipeline.EthTypeIPv6))
	}
}
