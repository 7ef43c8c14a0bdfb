package pipeline

import (
	"errors"
	"fmt"
	"net"

	"github.com/contiv/netplugin/ofnet/ofctrl"
	of "github.com/contiv/netplugin/ofnet/openflow13"
)

// ErrInconsistent is returned by Done for a flow OVS would reject as inconsistent
// (docs/dataplane.md §2.8): pop_vlan without a vlan match, an L3/L4 set-field without the
// matching eth_type/ip_proto, conflicting prerequisites, a drop flow with actions.
var ErrInconsistent = errors.New("pipeline: inconsistent flow")

// Ethernet types and IP protocols the builder knows prerequisites for.
const (
	EthTypeIPv4 uint16 = 0x0800
	EthTypeARP  uint16 = 0x0806
	EthTypeIPv6 uint16 = 0x86dd
	ProtoTCP    uint8  = 6
	ProtoUDP    uint8  = 17
)

// FlowBuilder accumulates a flow's match. Matching an L3/L4 field adds its
// prerequisites (eth_type, ip_proto); a conflicting prerequisite is an error reported
// by Done. Builders are single-use and not safe for concurrent use.
type FlowBuilder struct {
	table    *Table
	priority uint16
	cookie   uint64
	fields   []of.OXM
	ethType  uint16
	ipProto  uint8
	vlan     bool
	metaVal  uint64
	metaMask uint64
	err      error

	actions   []of.Action
	wmVal     uint64
	wmMask    uint64
	gotoTable *TableID
	meter     uint32 // 0: none
	drop      bool
}

// ActionBuilder accumulates a flow's actions and instructions; Done ends the flow.
type ActionBuilder struct{ b *FlowBuilder }

// BuildFlow starts a flow of table t with the given priority.
func (t *Table) BuildFlow(priority uint16) *FlowBuilder {
	return &FlowBuilder{table: t, priority: priority}
}

func (b *FlowBuilder) fail(format string, args ...any) {
	if b.err == nil {
		b.err = fmt.Errorf(format, args...)
	}
}

// Cookie sets the flow's cookie (see CookieOf).
func (b *FlowBuilder) Cookie(c uint64) *FlowBuilder { b.cookie = c; return b }

// MatchInPort matches the OpenFlow ingress port.
func (b *FlowBuilder) MatchInPort(port uint32) *FlowBuilder {
	b.fields = append(b.fields, of.OXMInPort(port))
	return b
}

// MatchVlan matches packets tagged with vlan id vid.
func (b *FlowBuilder) MatchVlan(vid uint16) *FlowBuilder {
	if vid == 0 || vid > 4094 {
		b.fail("match vlan %d: %w: vlan id must be 1..4094", vid, ErrInconsistent)
	}
	b.vlan = true
	b.fields = append(b.fields, of.OXMVlanVID(vid))
	return b
}

// MatchEthDst matches the destination MAC.
func (b *FlowBuilder) MatchEthDst(mac net.HardwareAddr) *FlowBuilder {
	b.fields = append(b.fields, of.OXMEthDst(mac))
	return b
}

// MatchEthSrcMasked matches the source MAC under mask.
func (b *FlowBuilder) MatchEthSrcMasked(mac, mask net.HardwareAddr) *FlowBuilder {
	b.fields = append(b.fields, of.OXMEthSrcMasked(mac, mask))
	return b
}

// MatchEthType matches the Ethernet type (added automatically by L3 matches).
func (b *FlowBuilder) MatchEthType(t uint16) *FlowBuilder {
	switch {
	case b.ethType == t:
	case b.ethType != 0:
		b.fail("match eth_type %#04x after %#04x: %w", t, b.ethType, ErrInconsistent)
	default:
		b.ethType = t
		b.fields = append(b.fields, of.OXMEthType(t))
	}
	return b
}

// withEthType matches eth_type t (a prerequisite) and then f.
func (b *FlowBuilder) withEthType(t uint16, f of.OXM) *FlowBuilder {
	b.MatchEthType(t)
	b.fields = append(b.fields, f)
	return b
}

// withIPProto matches ip_proto p (a prerequisite) and then f.
func (b *FlowBuilder) withIPProto(p uint8, f of.OXM) *FlowBuilder {
	b.MatchIPProto(p)
	b.fields = append(b.fields, f)
	return b
}

// isIP tells whether the match has eth_type ip or ipv6.
func (b *FlowBuilder) isIP() bool { return b.ethType == EthTypeIPv4 || b.ethType == EthTypeIPv6 }

// MatchARPOp matches ARP packets with the given opcode.
func (b *FlowBuilder) MatchARPOp(op uint16) *FlowBuilder {
	return b.withEthType(EthTypeARP, of.OXMARPOp(op))
}

// matchIPv4 matches the IPv4 address field what (nw_src, nw_dst) built by oxm.
func (b *FlowBuilder) matchIPv4(what string, ip net.IP, mask net.IPMask, oxm func(net.IP, net.IPMask) of.OXM) *FlowBuilder {
	if ip.To4() == nil {
		b.fail("match %s %v: %w: not IPv4", what, ip, ErrInconsistent)
		return b
	}
	return b.withEthType(EthTypeIPv4, oxm(ip.To4(), fullMask(mask)))
}

// MatchIPv4Dst matches IPv4 packets to ip/mask (nil mask: the host).
func (b *FlowBuilder) MatchIPv4Dst(ip net.IP, mask net.IPMask) *FlowBuilder {
	return b.matchIPv4("nw_dst", ip, mask, of.OXMIPv4Dst)
}

// MatchIPv4Src matches IPv4 packets from ip/mask (nil mask: the host).
func (b *FlowBuilder) MatchIPv4Src(ip net.IP, mask net.IPMask) *FlowBuilder {
	return b.matchIPv4("nw_src", ip, mask, of.OXMIPv4Src)
}

// MatchIPv6Dst matches IPv6 packets to ip (exact).
func (b *FlowBuilder) MatchIPv6Dst(ip net.IP) *FlowBuilder {
	if ip.To16() == nil || ip.To4() != nil {
		b.fail("match ipv6_dst %v: %w: not IPv6", ip, ErrInconsistent)
		return b
	}
	return b.withEthType(EthTypeIPv6, of.OXMIPv6Dst(ip.To16(), nil))
}

// fullMask drops an all-ones mask (OVS prints an exact match then).
func fullMask(m net.IPMask) net.IPMask {
	if m == nil {
		return nil
	}
	if ones, bits := m.Size(); ones == bits && bits != 0 {
		return nil
	}
	return m
}

// MatchIPProto matches an IPv4 protocol (adds eth_type ip unless IPv6 was matched).
func (b *FlowBuilder) MatchIPProto(p uint8) *FlowBuilder {
	if b.ethType == 0 {
		b.MatchEthType(EthTypeIPv4)
	}
	if !b.isIP() {
		b.fail("match ip_proto %d on eth_type %#04x: %w", p, b.ethType, ErrInconsistent)
		return b
	}
	switch {
	case b.ipProto == p:
	case b.ipProto != 0:
		b.fail("match ip_proto %d after %d: %w", p, b.ipProto, ErrInconsistent)
	default:
		b.ipProto = p
		b.fields = append(b.fields, of.OXMIPProto(p))
	}
	return b
}

// MatchTCPSrc, MatchTCPDst, MatchUDPSrc, MatchUDPDst match L4 ports (adding ip_proto).
func (b *FlowBuilder) MatchTCPSrc(p uint16) *FlowBuilder {
	return b.withIPProto(ProtoTCP, of.OXMTCPSrc(p))
}

func (b *FlowBuilder) MatchTCPDst(p uint16) *FlowBuilder {
	return b.withIPProto(ProtoTCP, of.OXMTCPDst(p))
}

// MatchL4DstMasked matches the TCP or UDP (proto) destination port under a mask
// (adds ip_proto); port ranges become a few such matches.
func (b *FlowBuilder) MatchL4DstMasked(proto uint8, p, mask uint16) *FlowBuilder {
	b.MatchIPProto(proto)
	switch proto {
	case ProtoTCP:
		b.fields = append(b.fields, of.OXMTCPDstMasked(p, mask))
	case ProtoUDP:
		b.fields = append(b.fields, of.OXMUDPDstMasked(p, mask))
	default:
		b.fail("match destination port of ip_proto %d: %w", proto, ErrInconsistent)
	}
	return b
}

func (b *FlowBuilder) MatchUDPSrc(p uint16) *FlowBuilder {
	return b.withIPProto(ProtoUDP, of.OXMUDPSrc(p))
}

func (b *FlowBuilder) MatchUDPDst(p uint16) *FlowBuilder {
	return b.withIPProto(ProtoUDP, of.OXMUDPDst(p))
}

// MatchTCPFlags matches TCP flags under mask (adds ip_proto tcp).
func (b *FlowBuilder) MatchTCPFlags(flags, mask uint16) *FlowBuilder {
	return b.withIPProto(ProtoTCP, of.OXMTCPFlags(flags, mask))
}

// MatchTunnelID matches the tunnel key (VNI).
func (b *FlowBuilder) MatchTunnelID(id uint64) *FlowBuilder {
	b.fields = append(b.fields, of.OXMTunnelID(id))
	return b
}

// MatchCtState matches connection tracking state: the bits in mask must equal those
// in state (of.CtState* bits).
func (b *FlowBuilder) MatchCtState(state, mask uint32) *FlowBuilder {
	b.fields = append(b.fields, of.OXMCtState(state, mask))
	return b
}

// MatchCtZone matches the conntrack zone the packet was last tracked in.
func (b *FlowBuilder) MatchCtZone(zone uint16) *FlowBuilder {
	b.fields = append(b.fields, of.OXMCtZone(zone))
	return b
}

// MatchMetadata adds field = v to the metadata match (several calls combine). A value
// that does not fit is an error from Done.
func (b *FlowBuilder) MatchMetadata(f MetadataField, v uint64) *FlowBuilder {
	val, err := f.Value(v)
	if err != nil {
		b.fail("match metadata: %w", err)
		return b
	}
	b.metaVal |= val
	b.metaMask |= f.Mask()
	return b
}

// MatchReg matches register n (0..15) equal to v.
func (b *FlowBuilder) MatchReg(n int, v uint32) *FlowBuilder {
	if n < 0 || n > 15 {
		b.fail("match reg%d: %w: registers are 0..15", n, ErrInconsistent)
		return b
	}
	b.fields = append(b.fields, of.OXMReg(n, v, 0xffffffff))
	return b
}

// Action ends the match and starts the actions.
func (b *FlowBuilder) Action() *ActionBuilder { return &ActionBuilder{b: b} }

// Action is a no-op that lets chains read `.Action().X().Action().GotoTable(t)`.
func (a *ActionBuilder) Action() *ActionBuilder { return a }

// setField appends a set_field action writing f.
func (a *ActionBuilder) setField(f of.OXM) *ActionBuilder {
	a.b.actions = append(a.b.actions, of.ActionSetField{Field: f})
	return a
}

// PushVlan pushes an 802.1Q header with vlan id vid.
func (a *ActionBuilder) PushVlan(vid uint16) *ActionBuilder {
	if vid == 0 || vid > 4094 {
		a.b.fail("push vlan %d: %w: vlan id must be 1..4094", vid, ErrInconsistent)
	}
	a.b.actions = append(a.b.actions, of.ActionPushVLAN{EtherType: 0x8100})
	return a.setField(of.OXMVlanVID(vid))
}

// PopVlan removes the 802.1Q header; the flow must match a vlan.
func (a *ActionBuilder) PopVlan() *ActionBuilder {
	if !a.b.vlan {
		a.b.fail("pop_vlan without a vlan match: %w", ErrInconsistent)
	}
	a.b.actions = append(a.b.actions, of.ActionPopVLAN{})
	return a
}

// SetTunnelID sets the tunnel key (VNI) for a following tunnel output.
func (a *ActionBuilder) SetTunnelID(id uint64) *ActionBuilder {
	return a.setField(of.OXMTunnelID(id))
}

// SetEthSrc and SetEthDst rewrite the MAC addresses.
func (a *ActionBuilder) SetEthSrc(mac net.HardwareAddr) *ActionBuilder {
	return a.setField(of.OXMEthSrc(mac))
}

func (a *ActionBuilder) SetEthDst(mac net.HardwareAddr) *ActionBuilder {
	return a.setField(of.OXMEthDst(mac))
}

// SetIPv4Src and SetIPv4Dst rewrite IPv4 addresses; the flow must match eth_type ip.
func (a *ActionBuilder) SetIPv4Src(ip net.IP) *ActionBuilder {
	a.needEthType(EthTypeIPv4, "ip_src")
	return a.setField(of.OXMIPv4Src(ip.To4(), nil))
}

func (a *ActionBuilder) SetIPv4Dst(ip net.IP) *ActionBuilder {
	a.needEthType(EthTypeIPv4, "ip_dst")
	return a.setField(of.OXMIPv4Dst(ip.To4(), nil))
}

// SetDSCP sets the 6-bit DSCP; the flow must match eth_type ip or ipv6.
func (a *ActionBuilder) SetDSCP(d uint8) *ActionBuilder {
	if !a.b.isIP() {
		a.b.fail("set ip_dscp without an ip/ipv6 match: %w", ErrInconsistent)
	}
	if d > 63 {
		a.b.fail("set ip_dscp %d: %w: DSCP is 0..63", d, ErrInconsistent)
	}
	return a.setField(of.OXMIPDSCP(d))
}

// SetTCPDst, SetTCPSrc rewrite TCP ports; the flow must match ip_proto tcp.
func (a *ActionBuilder) SetTCPDst(p uint16) *ActionBuilder {
	a.needProto(ProtoTCP, "tcp_dst")
	return a.setField(of.OXMTCPDst(p))
}

func (a *ActionBuilder) SetTCPSrc(p uint16) *ActionBuilder {
	a.needProto(ProtoTCP, "tcp_src")
	return a.setField(of.OXMTCPSrc(p))
}

func (a *ActionBuilder) needEthType(t uint16, what string) {
	if a.b.ethType != t {
		a.b.fail("set %s without eth_type %#04x in the match: %w", what, t, ErrInconsistent)
	}
}

func (a *ActionBuilder) needProto(p uint8, what string) {
	if a.b.ipProto != p {
		a.b.fail("set %s without ip_proto %d in the match: %w", what, p, ErrInconsistent)
	}
}

// Output sends the packet to an OpenFlow port (CONTROLLER gets the whole packet).
func (a *ActionBuilder) Output(port uint32) *ActionBuilder {
	o := of.ActionOutput{Port: port}
	if port == of.OFPPController {
		o.MaxLen = of.OFPCMLNoBuffer
	}
	a.b.actions = append(a.b.actions, o)
	return a
}

// Controller sends the packet to the controller.
func (a *ActionBuilder) Controller() *ActionBuilder { return a.Output(of.OFPPController) }

// Normal hands the packet to OVS's NORMAL processing.
func (a *ActionBuilder) Normal() *ActionBuilder { return a.Output(of.OFPPNormal) }

// Conntrack sends the packet through the connection tracker (OVS ct); the flow must
// match eth_type ip or ipv6, as OVS requires.
func (a *ActionBuilder) Conntrack(ct of.ActionConntrack) *ActionBuilder {
	if !a.b.isIP() {
		a.b.fail("ct without an ip/ipv6 match: %w", ErrInconsistent)
	}
	a.b.actions = append(a.b.actions, ct)
	return a
}

// Resubmit runs table t's flows for the packet (OVS resubmit(,t)), then goes on
// with the next action; unlike GotoTable, t may come before the flow's table.
func (a *ActionBuilder) Resubmit(t TableID) *ActionBuilder {
	a.b.actions = append(a.b.actions, of.ActionResubmit{InPort: of.OFPPInPortNX, Table: uint8(t)})
	return a
}

// SetReg writes v into register n (0..15).
func (a *ActionBuilder) SetReg(n int, v uint32) *ActionBuilder {
	if n < 0 || n > 15 {
		a.b.fail("set reg%d: %w: registers are 0..15", n, ErrInconsistent)
		return a
	}
	return a.setField(of.OXMReg(n, v, 0xffffffff))
}

// Learn has the switch add (or refresh) the flow l describes (OVS learn); the flow
// must match eth_type ip or ipv6, as the learned matches copy L3 fields here.
func (a *ActionBuilder) Learn(l of.ActionLearn) *ActionBuilder {
	if !a.b.isIP() {
		a.b.fail("learn without an ip/ipv6 match: %w", ErrInconsistent)
	}
	a.b.actions = append(a.b.actions, l)
	return a
}

// Move copies nbits of field src to field dst (OVS move; fields by their NXM
// headers). OVS's cached datapath flow then depends on the bits of src.
func (a *ActionBuilder) Move(src, dst of.LearnField, nbits uint16) *ActionBuilder {
	a.b.actions = append(a.b.actions, of.ActionRegMove{NBits: nbits, Src: src, Dst: dst})
	return a
}

// Group sends the packet to a group.
func (a *ActionBuilder) Group(id uint32) *ActionBuilder {
	a.b.actions = append(a.b.actions, of.ActionGroup{GroupID: id})
	return a
}

// SetMetadata writes field = v into the metadata (several calls combine into one
// write_metadata instruction). A value that does not fit is an error from Done.
func (a *ActionBuilder) SetMetadata(f MetadataField, v uint64) *ActionBuilder {
	val, err := f.Value(v)
	if err != nil {
		a.b.fail("write metadata: %w", err)
		return a
	}
	a.b.wmVal |= val
	a.b.wmMask |= f.Mask()
	return a
}

// GotoTable continues in table t (which must come after the flow's table).
func (a *ActionBuilder) GotoTable(t TableID) *ActionBuilder {
	if t <= a.b.table.ID {
		a.b.fail("goto_table %s from table %s: %w: must go forward", t, a.b.table.ID, ErrInconsistent)
	}
	a.b.gotoTable = &t
	return a
}

// Meter passes the packet through meter id first (0 means no meter); the meter must
// be installed before the flow.
func (a *ActionBuilder) Meter(id uint32) *ActionBuilder { a.b.meter = id; return a }

// Drop makes the flow drop packets: it gets no instructions at all.
func (a *ActionBuilder) Drop() *ActionBuilder { a.b.drop = true; return a }

// Done returns the immutable flow, or the first error found while building it.
func (a *ActionBuilder) Done() (ofctrl.Flow, error) {
	b := a.b
	f, err := b.flow()
	if err != nil {
		return ofctrl.Flow{}, fmt.Errorf("table %s priority %d: %w", b.table.ID, b.priority, err)
	}
	return f, nil
}

// flow assembles the match and the instructions.
func (b *FlowBuilder) flow() (ofctrl.Flow, error) {
	if b.err != nil {
		return ofctrl.Flow{}, b.err
	}
	fields := append([]of.OXM(nil), b.fields...)
	if b.metaMask != 0 {
		fields = append(fields, of.OXMMetadataMasked(b.metaVal, b.metaMask))
	}
	f := ofctrl.Flow{Table: uint8(b.table.ID), Priority: b.priority, Cookie: b.cookie,
		Match: of.NewMatch(fields...)}
	if err := f.Match.CheckPrereqs(); err != nil {
		return ofctrl.Flow{}, fmt.Errorf("%w: %w", ErrInconsistent, err)
	}
	if b.drop {
		if len(b.actions) > 0 || b.wmMask != 0 || b.gotoTable != nil || b.meter != 0 {
			return ofctrl.Flow{}, fmt.Errorf("drop flow with actions: %w", ErrInconsistent)
		}
		return f, nil
	}
	if len(b.actions) == 0 && b.wmMask == 0 && b.gotoTable == nil {
		return ofctrl.Flow{}, fmt.Errorf("no actions (use Drop): %w", ErrInconsistent)
	}
	if b.meter != 0 {
		f.Instructions = append(f.Instructions, of.InstrMeter{MeterID: b.meter})
	}
	if len(b.actions) > 0 {
		f.Instructions = append(f.Instructions, of.InstrApplyActions{Actions: append([]of.Action(nil), b.actions...)})
	}
	if b.wmMask != 0 {
		f.Instructions = append(f.Instructions, of.InstrWriteMetadata{Metadata: b.wmVal, Mask: b.wmMask})
	}
	if b.gotoTable != nil {
		f.Instructions = append(f.Instructions, of.InstrGotoTable{TableID: uint8(*b.gotoTable)})
	}
	return f, nil
}
