package openflow13

import (
	"fmt"
	"net"
	"sort"
)

// OXM classes.
const (
	OXMClassNXM0          uint16 = 0x0000 // Nicira NXM_OF_*
	OXMClassNXM1          uint16 = 0x0001 // Nicira NXM_NX_* (registers, tunnel addresses)
	OXMClassOpenFlowBasic uint16 = 0x8000
	OXMClassExperimenter  uint16 = 0xffff
)

// OPENFLOW_BASIC field ids (OF1.3 §7.2.3.7; TCP_FLAGS is the OF1.5 number, which OVS accepts
// in OF1.3 messages).
const (
	OXMFieldInPort       uint8 = 0
	OXMFieldInPhyPort    uint8 = 1
	OXMFieldMetadata     uint8 = 2
	OXMFieldEthDst       uint8 = 3
	OXMFieldEthSrc       uint8 = 4
	OXMFieldEthType      uint8 = 5
	OXMFieldVlanVID      uint8 = 6
	OXMFieldVlanPCP      uint8 = 7
	OXMFieldIPDSCP       uint8 = 8
	OXMFieldIPECN        uint8 = 9
	OXMFieldIPProto      uint8 = 10
	OXMFieldIPv4Src      uint8 = 11
	OXMFieldIPv4Dst      uint8 = 12
	OXMFieldTCPSrc       uint8 = 13
	OXMFieldTCPDst       uint8 = 14
	OXMFieldUDPSrc       uint8 = 15
	OXMFieldUDPDst       uint8 = 16
	OXMFieldSCTPSrc      uint8 = 17
	OXMFieldSCTPDst      uint8 = 18
	OXMFieldICMPv4Type   uint8 = 19
	OXMFieldICMPv4Code   uint8 = 20
	OXMFieldARPOp        uint8 = 21
	OXMFieldARPSpa       uint8 = 22
	OXMFieldARPTpa       uint8 = 23
	OXMFieldARPSha       uint8 = 24
	OXMFieldARPTha       uint8 = 25
	OXMFieldIPv6Src      uint8 = 26
	OXMFieldIPv6Dst      uint8 = 27
	OXMFieldIPv6FLabel   uint8 = 28
	OXMFieldICMPv6Type   uint8 = 29
	OXMFieldICMPv6Code   uint8 = 30
	OXMFieldIPv6NDTarget uint8 = 31
	OXMFieldIPv6NDSLL    uint8 = 32
	OXMFieldIPv6NDTLL    uint8 = 33
	OXMFieldMPLSLabel    uint8 = 34
	OXMFieldMPLSTC       uint8 = 35
	OXMFieldMPLSBOS      uint8 = 36
	OXMFieldPBBISID      uint8 = 37
	OXMFieldTunnelID     uint8 = 38
	OXMFieldIPv6Exthdr   uint8 = 39
	OXMFieldTCPFlags     uint8 = 42

	// NXM_NX (class 0x0001) fields.
	NXMFieldReg0       uint8 = 0 // reg0..reg15 are fields 0..15
	NXMFieldTunIPv4Src uint8 = 31
	NXMFieldTunIPv4Dst uint8 = 32
	NXMFieldCtState    uint8 = 105 // connection tracking state bits (CtState*)
	NXMFieldCtZone     uint8 = 106 // conntrack zone
	NXMFieldCtMark     uint8 = 107 // conntrack mark
)

// Connection tracking state bits of NXM_NX_CT_STATE (OVS ct_state).
const (
	CtStateNew  uint32 = 0x01
	CtStateEst  uint32 = 0x02
	CtStateRel  uint32 = 0x04
	CtStateRpl  uint32 = 0x08
	CtStateInv  uint32 = 0x10
	CtStateTrk  uint32 = 0x20
	CtStateSNAT uint32 = 0x40
	CtStateDNAT uint32 = 0x80
)

// ONFExperimenterID is the experimenter id OVS uses for ONF-defined OXMs; in OF1.3
// messages OVS itself encodes tcp_flags as experimenter OXM (class 0xffff, ONF, field 42).
const ONFExperimenterID uint32 = 0x4f4e4600

// OFPVIDPresent is OR-ed into VLAN_VID values of tagged packets.
const OFPVIDPresent uint16 = 0x1000

// valueFormat selects how a field's value is printed in ovs-ofctl syntax.
type valueFormat uint8

const (
	fmtDec valueFormat = iota
	fmtHex
	fmtHex16 // 0x%04x (dl_type)
	fmtMAC
	fmtIPv4
	fmtIPv6
	fmtPort
	fmtTCPFlags
	fmtLabel   // 0x%05x (ipv6_label)
	fmtCtState // +new+trk-inv (ct_state)
)

// prereq says that an earlier field in the match must be present with one of Values
// (nil Values: just present).
type prereq struct {
	Field  uint8 // OPENFLOW_BASIC field id
	Values []uint64
}

// FieldDef describes one OXM field. The order of fieldDefs is the canonical emission
// order (prerequisites first), used by NewMatch.
type FieldDef struct {
	Name         string // OVS field name, used by set_field (e.g. "eth_dst", "ip_src")
	MatchName    string // ovs-ofctl match keyword (e.g. "dl_dst", "nw_src")
	Class        uint16
	Field        uint8
	Len          int // value length in bytes (the mask, if any, has the same length)
	Maskable     bool
	Prereq       []prereq // alternatives are within one prereq; all prereqs must hold
	format       valueFormat
	rank         int
	Experimenter uint32 // for Class 0xffff only
}

var (
	ipv4Only = []prereq{{OXMFieldEthType, []uint64{0x0800}}}
	ipv6Only = []prereq{{OXMFieldEthType, []uint64{0x86dd}}}
	ipAny    = []prereq{{OXMFieldEthType, []uint64{0x0800, 0x86dd}}}
	arpOnly  = []prereq{{OXMFieldEthType, []uint64{0x0806}}}
	mpls     = []prereq{{OXMFieldEthType, []uint64{0x8847, 0x8848}}}
	tcpOnly  = []prereq{{OXMFieldIPProto, []uint64{6}}}
	udpOnly  = []prereq{{OXMFieldIPProto, []uint64{17}}}
	sctpOnly = []prereq{{OXMFieldIPProto, []uint64{132}}}
)

// fieldDefs lists every field the codec knows, in emission order (docs/dataplane.md §2.7).
var fieldDefs = func() []FieldDef {
	b := OXMClassOpenFlowBasic
	defs := []FieldDef{
		{"in_port", "in_port", b, OXMFieldInPort, 4, false, nil, fmtPort, 0, 0},
		{"in_phy_port", "in_phy_port", b, OXMFieldInPhyPort, 4, false, []prereq{{OXMFieldInPort, nil}}, fmtPort, 0, 0},
		{"eth_dst", "dl_dst", b, OXMFieldEthDst, 6, true, nil, fmtMAC, 0, 0},
		{"eth_src", "dl_src", b, OXMFieldEthSrc, 6, true, nil, fmtMAC, 0, 0},
		{"eth_type", "dl_type", b, OXMFieldEthType, 2, false, nil, fmtHex16, 0, 0},
		{"vlan_vid", "vlan_vid", b, OXMFieldVlanVID, 2, true, nil, fmtDec, 0, 0},
		{"vlan_pcp", "dl_vlan_pcp", b, OXMFieldVlanPCP, 1, false, []prereq{{OXMFieldVlanVID, nil}}, fmtDec, 0, 0},
		{"arp_op", "arp_op", b, OXMFieldARPOp, 2, false, arpOnly, fmtDec, 0, 0},
		{"arp_spa", "arp_spa", b, OXMFieldARPSpa, 4, true, arpOnly, fmtIPv4, 0, 0},
		{"arp_tpa", "arp_tpa", b, OXMFieldARPTpa, 4, true, arpOnly, fmtIPv4, 0, 0},
		{"arp_sha", "arp_sha", b, OXMFieldARPSha, 6, true, arpOnly, fmtMAC, 0, 0},
		{"arp_tha", "arp_tha", b, OXMFieldARPTha, 6, true, arpOnly, fmtMAC, 0, 0},
		{"ip_dst", "nw_dst", b, OXMFieldIPv4Dst, 4, true, ipv4Only, fmtIPv4, 0, 0},
		{"ip_src", "nw_src", b, OXMFieldIPv4Src, 4, true, ipv4Only, fmtIPv4, 0, 0},
		{"ipv6_dst", "ipv6_dst", b, OXMFieldIPv6Dst, 16, true, ipv6Only, fmtIPv6, 0, 0},
		{"ipv6_src", "ipv6_src", b, OXMFieldIPv6Src, 16, true, ipv6Only, fmtIPv6, 0, 0},
		{"ipv6_label", "ipv6_label", b, OXMFieldIPv6FLabel, 4, true, ipv6Only, fmtLabel, 0, 0},
		{"ip_proto", "nw_proto", b, OXMFieldIPProto, 1, false, ipAny, fmtDec, 0, 0},
		{"ip_dscp", "nw_tos", b, OXMFieldIPDSCP, 1, false, ipAny, fmtDec, 0, 0},
		{"ip_ecn", "nw_ecn", b, OXMFieldIPECN, 1, false, ipAny, fmtDec, 0, 0},
		{"mpls_label", "mpls_label", b, OXMFieldMPLSLabel, 4, false, mpls, fmtDec, 0, 0},
		{"mpls_tc", "mpls_tc", b, OXMFieldMPLSTC, 1, false, mpls, fmtDec, 0, 0},
		{"mpls_bos", "mpls_bos", b, OXMFieldMPLSBOS, 1, false, mpls, fmtDec, 0, 0},
		{"tcp_src", "tp_src", b, OXMFieldTCPSrc, 2, false, tcpOnly, fmtDec, 0, 0},
		{"tcp_dst", "tp_dst", b, OXMFieldTCPDst, 2, true, tcpOnly, fmtDec, 0, 0},
		{"udp_src", "tp_src", b, OXMFieldUDPSrc, 2, false, udpOnly, fmtDec, 0, 0},
		{"udp_dst", "tp_dst", b, OXMFieldUDPDst, 2, true, udpOnly, fmtDec, 0, 0},
		{"sctp_src", "tp_src", b, OXMFieldSCTPSrc, 2, false, sctpOnly, fmtDec, 0, 0},
		{"sctp_dst", "tp_dst", b, OXMFieldSCTPDst, 2, false, sctpOnly, fmtDec, 0, 0},
		{"icmp_type", "icmp_type", b, OXMFieldICMPv4Type, 1, false, []prereq{{OXMFieldIPProto, []uint64{1}}}, fmtDec, 0, 0},
		{"icmp_code", "icmp_code", b, OXMFieldICMPv4Code, 1, false, []prereq{{OXMFieldIPProto, []uint64{1}}}, fmtDec, 0, 0},
		{"icmpv6_type", "icmp_type", b, OXMFieldICMPv6Type, 1, false, []prereq{{OXMFieldIPProto, []uint64{58}}}, fmtDec, 0, 0},
		{"icmpv6_code", "icmp_code", b, OXMFieldICMPv6Code, 1, false, []prereq{{OXMFieldIPProto, []uint64{58}}}, fmtDec, 0, 0},
		{"nd_target", "nd_target", b, OXMFieldIPv6NDTarget, 16, false, []prereq{{OXMFieldICMPv6Type, []uint64{135, 136}}}, fmtIPv6, 0, 0},
		{"nd_sll", "nd_sll", b, OXMFieldIPv6NDSLL, 6, false, []prereq{{OXMFieldICMPv6Type, []uint64{135}}}, fmtMAC, 0, 0},
		{"nd_tll", "nd_tll", b, OXMFieldIPv6NDTLL, 6, false, []prereq{{OXMFieldICMPv6Type, []uint64{136}}}, fmtMAC, 0, 0},
		{"pbb_isid", "pbb_isid", b, OXMFieldPBBISID, 3, true, []prereq{{OXMFieldEthType, []uint64{0x88e7}}}, fmtDec, 0, 0},
		{"ipv6_exthdr", "ipv6_exthdr", b, OXMFieldIPv6Exthdr, 2, true, ipv6Only, fmtHex, 0, 0},
		{"tcp_flags", "tcp_flags", b, OXMFieldTCPFlags, 2, true, tcpOnly, fmtTCPFlags, 0, 0},
		{"metadata", "metadata", b, OXMFieldMetadata, 8, true, nil, fmtHex, 0, 0},
		{"tun_id", "tun_id", b, OXMFieldTunnelID, 8, true, nil, fmtHex, 0, 0},
		{"tun_src", "tun_src", OXMClassNXM1, NXMFieldTunIPv4Src, 4, true, nil, fmtIPv4, 0, 0},
		{"tun_dst", "tun_dst", OXMClassNXM1, NXMFieldTunIPv4Dst, 4, true, nil, fmtIPv4, 0, 0},
		{"ct_state", "ct_state", OXMClassNXM1, NXMFieldCtState, 4, true, nil, fmtCtState, 0, 0},
		{"ct_zone", "ct_zone", OXMClassNXM1, NXMFieldCtZone, 2, false, nil, fmtDec, 0, 0},
		{"ct_mark", "ct_mark", OXMClassNXM1, NXMFieldCtMark, 4, true, nil, fmtHex, 0, 0},
	}
	for i := 0; i < 16; i++ {
		n := fmt.Sprintf("reg%d", i)
		defs = append(defs, FieldDef{n, n, OXMClassNXM1, NXMFieldReg0 + uint8(i), 4, true, nil, fmtHex, 0, 0})
	}
	// How OVS encodes tcp_flags in OF1.3 (decode only; we emit the basic-class form).
	defs = append(defs, FieldDef{"tcp_flags", "tcp_flags", OXMClassExperimenter, OXMFieldTCPFlags, 2, true, tcpOnly, fmtTCPFlags, 0, ONFExperimenterID})
	for i := range defs {
		defs[i].rank = i
	}
	return defs
}()

func fieldKey(class uint16, exp uint32, field uint8) uint64 {
	if class != OXMClassExperimenter {
		exp = 0
	}
	return uint64(class)<<40 | uint64(exp)<<8 | uint64(field)
}

var fieldIndex = func() map[uint64]*FieldDef {
	m := make(map[uint64]*FieldDef, len(fieldDefs))
	for i := range fieldDefs {
		d := &fieldDefs[i]
		m[fieldKey(d.Class, d.Experimenter, d.Field)] = d
	}
	return m
}()

// LookupField returns the definition of a known non-experimenter field, or nil.
func LookupField(class uint16, field uint8) *FieldDef {
	return fieldIndex[fieldKey(class, 0, field)]
}

// FieldDefs returns a copy of the field table, in emission order.
func FieldDefs() []FieldDef { return append([]FieldDef(nil), fieldDefs...) }

// OXM is one match field TLV: class(2) field<<1|hasmask(1) length(1) payload. The
// payload is Value then Mask, kept verbatim (a known field with an odd masked payload
// stays whole in Value). For class 0xffff the payload starts with the 4-byte
// Experimenter id, which the length counts.
type OXM struct {
	Class        uint16
	Field        uint8
	HasMask      bool
	Experimenter uint32 // only for Class == OXMClassExperimenter
	Value        []byte
	Mask         []byte
}

// Def returns the field's definition, or nil for an unknown field.
func (o OXM) Def() *FieldDef { return fieldIndex[fieldKey(o.Class, o.Experimenter, o.Field)] }

func (o OXM) key() uint64 { return fieldKey(o.Class, o.Experimenter, o.Field) }

// Uint returns the value as a big-endian unsigned integer (values up to 8 bytes).
func (o OXM) Uint() uint64 { return beUint(o.Value) }

// MaskUint returns the mask as an integer, or all-ones of the value width when unmasked.
func (o OXM) MaskUint() uint64 {
	if !o.HasMask || len(o.Mask) == 0 {
		if len(o.Value) >= 8 {
			return ^uint64(0)
		}
		return 1<<(8*uint(len(o.Value))) - 1
	}
	return beUint(o.Mask)
}

func beUint(b []byte) uint64 {
	var v uint64
	for i, c := range b {
		if i >= 8 {
			break
		}
		v = v<<8 | uint64(c)
	}
	return v
}

func uintBytes(v uint64, n int) []byte {
	b := make([]byte, n)
	for i := n - 1; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
	return b
}

func (o OXM) appendTo(b []byte) ([]byte, error) {
	n := len(o.Value) + len(o.Mask)
	if o.Class == OXMClassExperimenter {
		n += 4
	}
	if n > 255 {
		return b, fmt.Errorf("openflow13: OXM %d/%d payload %d bytes exceeds 255", o.Class, o.Field, n)
	}
	if o.Field > 0x7f {
		return b, fmt.Errorf("openflow13: OXM field id %d exceeds 7 bits", o.Field)
	}
	fh := o.Field << 1
	if o.HasMask {
		fh |= 1
	}
	b = be.AppendUint16(b, o.Class)
	b = append(b, fh, byte(n))
	if o.Class == OXMClassExperimenter {
		b = be.AppendUint32(b, o.Experimenter)
	}
	b = append(b, o.Value...)
	return append(b, o.Mask...), nil
}

// decodeOXM reads one TLV. Known fields with the expected length are split into value and
// mask; anything else is kept whole in Value, so it re-encodes byte for byte.
func decodeOXM(r *reader) OXM {
	class := r.u16("oxm class")
	fh := r.u8("oxm field")
	n := int(r.u8("oxm length"))
	o := OXM{Class: class, Field: fh >> 1, HasMask: fh&1 == 1}
	if class == OXMClassExperimenter {
		if r.err == nil && n < 4 {
			r.setErr(fmt.Errorf("%w: experimenter OXM length %d", ErrBadLength, n))
		}
		o.Experimenter = r.u32("oxm experimenter")
		n -= 4
	}
	payload := r.copyBytes(n, "oxm payload")
	if r.err != nil {
		return o
	}
	o.Value = payload
	if o.HasMask && n%2 == 0 && n > 0 {
		o.Value, o.Mask = payload[:n/2:n/2], payload[n/2:]
	}
	return o
}

// ---- constructors ----

func basic(field uint8, v []byte) OXM {
	return OXM{Class: OXMClassOpenFlowBasic, Field: field, Value: v}
}

func basicMasked(field uint8, v, m []byte) OXM {
	if m == nil {
		return basic(field, v)
	}
	return OXM{Class: OXMClassOpenFlowBasic, Field: field, HasMask: true, Value: v, Mask: m}
}

func u16b(v uint16) []byte { return uintBytes(uint64(v), 2) }
func u32b(v uint32) []byte { return uintBytes(uint64(v), 4) }
func u64b(v uint64) []byte { return uintBytes(v, 8) }

func macBytes(m net.HardwareAddr) []byte {
	b := make([]byte, 6)
	copy(b, m)
	return b
}

func ip4Bytes(ip net.IP) []byte {
	b := make([]byte, 4)
	if v4 := ip.To4(); v4 != nil {
		copy(b, v4)
	} else if len(ip) == 4 { // a net.IPMask converted to net.IP
		copy(b, ip)
	}
	return b
}

func ip6Bytes(ip net.IP) []byte {
	b := make([]byte, 16)
	copy(b, ip.To16())
	return b
}

// NewOXM builds a field from its table definition; mask nil means exact match.
func NewOXM(class uint16, field uint8, value, mask []byte) OXM {
	o := OXM{Class: class, Field: field, Value: append([]byte(nil), value...)}
	if mask != nil {
		o.HasMask, o.Mask = true, append([]byte(nil), mask...)
	}
	return o
}

// OXMInPort matches/sets the ingress port.
func OXMInPort(port uint32) OXM { return basic(OXMFieldInPort, u32b(port)) }

// OXMMetadata matches the 64-bit metadata exactly.
func OXMMetadata(v uint64) OXM { return basic(OXMFieldMetadata, u64b(v)) }

// OXMMetadataMasked matches metadata under a mask.
func OXMMetadataMasked(v, mask uint64) OXM {
	return basicMasked(OXMFieldMetadata, u64b(v), u64b(mask))
}

// OXMEthDst matches/sets the destination MAC.
func OXMEthDst(mac net.HardwareAddr) OXM { return basic(OXMFieldEthDst, macBytes(mac)) }

// OXMEthDstMasked matches the destination MAC under a mask.
func OXMEthDstMasked(mac, mask net.HardwareAddr) OXM {
	return basicMasked(OXMFieldEthDst, macBytes(mac), macBytes(mask))
}

// OXMEthSrc matches/sets the source MAC.
func OXMEthSrc(mac net.HardwareAddr) OXM { return basic(OXMFieldEthSrc, macBytes(mac)) }

// OXMEthSrcMasked matches the source MAC under a mask.
func OXMEthSrcMasked(mac, mask net.HardwareAddr) OXM {
	return basicMasked(OXMFieldEthSrc, macBytes(mac), macBytes(mask))
}

// OXMEthType matches the ethertype.
func OXMEthType(t uint16) OXM { return basic(OXMFieldEthType, u16b(t)) }

// OXMVlanVID matches/sets a VLAN id; OFPVID_PRESENT (0x1000) is OR-ed in.
func OXMVlanVID(vid uint16) OXM { return basic(OXMFieldVlanVID, u16b(vid&0xfff|OFPVIDPresent)) }

// OXMVlanVIDRaw matches the raw VLAN_VID value (0 = untagged), optionally masked.
func OXMVlanVIDRaw(v uint16, mask *uint16) OXM {
	if mask == nil {
		return basic(OXMFieldVlanVID, u16b(v))
	}
	return basicMasked(OXMFieldVlanVID, u16b(v), u16b(*mask))
}

// OXMVlanPCP matches/sets the VLAN priority.
func OXMVlanPCP(p uint8) OXM { return basic(OXMFieldVlanPCP, []byte{p}) }

// OXMIPDSCP matches/sets the 6-bit DSCP value.
func OXMIPDSCP(d uint8) OXM { return basic(OXMFieldIPDSCP, []byte{d}) }

// OXMIPECN matches/sets the 2-bit ECN value.
func OXMIPECN(e uint8) OXM { return basic(OXMFieldIPECN, []byte{e}) }

// OXMIPProto matches the IP protocol.
func OXMIPProto(p uint8) OXM { return basic(OXMFieldIPProto, []byte{p}) }

// OXMIPv4Src matches/sets the IPv4 source; mask nil = exact.
func OXMIPv4Src(ip net.IP, mask net.IPMask) OXM {
	return basicMasked(OXMFieldIPv4Src, ip4Bytes(ip), maskBytes(mask, 4))
}

// OXMIPv4Dst matches/sets the IPv4 destination; mask nil = exact.
func OXMIPv4Dst(ip net.IP, mask net.IPMask) OXM {
	return basicMasked(OXMFieldIPv4Dst, ip4Bytes(ip), maskBytes(mask, 4))
}

// OXMIPv6Src matches/sets the IPv6 source; mask nil = exact.
func OXMIPv6Src(ip net.IP, mask net.IPMask) OXM {
	return basicMasked(OXMFieldIPv6Src, ip6Bytes(ip), maskBytes(mask, 16))
}

// OXMIPv6Dst matches/sets the IPv6 destination; mask nil = exact.
func OXMIPv6Dst(ip net.IP, mask net.IPMask) OXM {
	return basicMasked(OXMFieldIPv6Dst, ip6Bytes(ip), maskBytes(mask, 16))
}

func maskBytes(m net.IPMask, n int) []byte {
	if m == nil {
		return nil
	}
	b := make([]byte, n)
	copy(b, m[len(m)-min(len(m), n):])
	return b
}

// OXMTCPSrc / OXMTCPDst / OXMUDPSrc / OXMUDPDst match/set L4 ports.
func OXMTCPSrc(p uint16) OXM { return basic(OXMFieldTCPSrc, u16b(p)) }

// OXMTCPDst matches/sets the TCP destination port.
func OXMTCPDst(p uint16) OXM { return basic(OXMFieldTCPDst, u16b(p)) }

// OXMTCPDstMasked matches the TCP destination port under a mask (an OVS
// extension of OpenFlow 1.3; port ranges become a few masked matches).
func OXMTCPDstMasked(p, mask uint16) OXM { return basicMasked(OXMFieldTCPDst, u16b(p), u16b(mask)) }

// OXMUDPDstMasked matches the UDP destination port under a mask.
func OXMUDPDstMasked(p, mask uint16) OXM { return basicMasked(OXMFieldUDPDst, u16b(p), u16b(mask)) }

// OXMUDPSrc matches/sets the UDP source port.
func OXMUDPSrc(p uint16) OXM { return basic(OXMFieldUDPSrc, u16b(p)) }

// OXMUDPDst matches/sets the UDP destination port.
func OXMUDPDst(p uint16) OXM { return basic(OXMFieldUDPDst, u16b(p)) }

// OXMICMPv4Type matches the ICMP type.
func OXMICMPv4Type(t uint8) OXM { return basic(OXMFieldICMPv4Type, []byte{t}) }

// OXMICMPv4Code matches the ICMP code.
func OXMICMPv4Code(c uint8) OXM { return basic(OXMFieldICMPv4Code, []byte{c}) }

// OXMARPOp matches the ARP opcode.
func OXMARPOp(op uint16) OXM { return basic(OXMFieldARPOp, u16b(op)) }

// OXMARPSpa matches the ARP sender IPv4 address.
func OXMARPSpa(ip net.IP, mask net.IPMask) OXM {
	return basicMasked(OXMFieldARPSpa, ip4Bytes(ip), maskBytes(mask, 4))
}

// OXMARPTpa matches the ARP target IPv4 address.
func OXMARPTpa(ip net.IP, mask net.IPMask) OXM {
	return basicMasked(OXMFieldARPTpa, ip4Bytes(ip), maskBytes(mask, 4))
}

// OXMTunnelID matches/sets the tunnel id (VNI; OVS tun_id).
func OXMTunnelID(id uint64) OXM { return basic(OXMFieldTunnelID, u64b(id)) }

// OXMTCPFlags matches TCP flags under a mask (OVS: tcp_flags=+syn-ack).
func OXMTCPFlags(flags, mask uint16) OXM {
	return basicMasked(OXMFieldTCPFlags, u16b(flags), u16b(mask))
}

// OXMTunIPv4Src matches the NXM tunnel source IPv4 address (OVS tun_src).
func OXMTunIPv4Src(ip net.IP) OXM {
	return OXM{Class: OXMClassNXM1, Field: NXMFieldTunIPv4Src, Value: ip4Bytes(ip)}
}

// OXMTunIPv4Dst matches the NXM tunnel destination IPv4 address (OVS tun_dst).
func OXMTunIPv4Dst(ip net.IP) OXM {
	return OXM{Class: OXMClassNXM1, Field: NXMFieldTunIPv4Dst, Value: ip4Bytes(ip)}
}

// OXMCtState matches connection tracking state bits: the bits in mask must equal
// those in state (OVS ct_state=+trk-new is OXMCtState(CtStateTrk, CtStateTrk|CtStateNew)).
func OXMCtState(state, mask uint32) OXM {
	return OXM{Class: OXMClassNXM1, Field: NXMFieldCtState, HasMask: true, Value: u32b(state), Mask: u32b(mask)}
}

// OXMCtZone matches the conntrack zone a packet was last tracked in.
func OXMCtZone(zone uint16) OXM {
	return OXM{Class: OXMClassNXM1, Field: NXMFieldCtZone, Value: u16b(zone)}
}

// OXMReg matches/sets NXM_NX register n (0..15); a mask of 0xffffffff encodes an exact
// (unmasked) field.
func OXMReg(n int, v, mask uint32) OXM {
	o := OXM{Class: OXMClassNXM1, Field: NXMFieldReg0 + uint8(n&15), Value: u32b(v)}
	if mask != 0xffffffff {
		o.HasMask, o.Mask = true, u32b(mask)
	}
	return o
}

// ---- Match ----

// OFPMTOXM is the only ofp_match type used in OF1.3.
const OFPMTOXM uint16 = 1

// Match is an ofp_match of type OXM: fields in wire order. Use NewMatch to get the
// canonical prerequisite-first order; Marshal keeps the order given.
type Match struct {
	Fields []OXM
}

// NewMatch returns a match with fields sorted into the canonical emission order of the
// field table (prerequisites first; unknown fields last, in their given order).
func NewMatch(fields ...OXM) Match {
	fs := append([]OXM(nil), fields...)
	rank := func(o OXM) int {
		if d := o.Def(); d != nil {
			return d.rank
		}
		return len(fieldDefs)
	}
	sort.SliceStable(fs, func(i, j int) bool { return rank(fs[i]) < rank(fs[j]) })
	return Match{Fields: fs}
}

// Get returns the first field with this class and id.
func (m Match) Get(class uint16, field uint8) (OXM, bool) {
	for _, f := range m.Fields {
		if f.Class == class && f.Field == field {
			return f, true
		}
	}
	return OXM{}, false
}

// Basic returns the first OPENFLOW_BASIC field with this id.
func (m Match) Basic(field uint8) (OXM, bool) { return m.Get(OXMClassOpenFlowBasic, field) }

// InPort returns the IN_PORT field's value, if present (packet-in matches).
func (m Match) InPort() (uint32, bool) {
	f, ok := m.Basic(OXMFieldInPort)
	if !ok || len(f.Value) != 4 {
		return 0, false
	}
	return uint32(f.Uint()), true
}

// CheckPrereqs verifies, in TLV order as OVS does, that every known field's prerequisites
// appear earlier in the match, and that no field is repeated.
func (m Match) CheckPrereqs() error {
	seen := map[uint64]OXM{}
	for _, f := range m.Fields {
		key := f.key()
		if d := f.Def(); d != nil && d.Class == OXMClassExperimenter {
			key = fieldKey(OXMClassOpenFlowBasic, 0, d.Field) // ONF tcp_flags == basic 42
		}
		if _, dup := seen[key]; dup {
			return fmt.Errorf("openflow13: duplicate match field %s", fieldName(f))
		}
		if d := f.Def(); d != nil {
			for _, p := range d.Prereq {
				pf, ok := seen[fieldKey(OXMClassOpenFlowBasic, 0, p.Field)]
				if !ok {
					return fmt.Errorf("openflow13: match field %s lacks prerequisite %s", d.Name, LookupField(OXMClassOpenFlowBasic, p.Field).Name)
				}
				if p.Values != nil {
					found := false
					for _, v := range p.Values {
						found = found || pf.Uint() == v
					}
					if !found {
						return fmt.Errorf("openflow13: match field %s: prerequisite %s has wrong value", d.Name, fieldName(pf))
					}
				}
			}
		}
		seen[key] = f
	}
	return nil
}

func fieldName(f OXM) string {
	if d := f.Def(); d != nil {
		return d.Name
	}
	return fmt.Sprintf("oxm(0x%04x:%d)", f.Class, f.Field)
}

// wireLen is the ofp_match length field: 4 + TLV bytes, excluding the padding.
func (m Match) wireLen() int {
	n := 4
	for _, f := range m.Fields {
		n += 4 + len(f.Value) + len(f.Mask)
		if f.Class == OXMClassExperimenter {
			n += 4
		}
	}
	return n
}

// AppendBinary appends the match including its trailing zero padding to 8 bytes.
func (m Match) AppendBinary(b []byte) ([]byte, error) {
	start := len(b)
	b = be.AppendUint16(b, OFPMTOXM)
	b = be.AppendUint16(b, 0)
	var err error
	for _, f := range m.Fields {
		if b, err = f.appendTo(b); err != nil {
			return b, err
		}
	}
	n := len(b) - start
	if err := putLen16(b, start+2, n); err != nil {
		return b, err
	}
	return appendZeros(b, pad8(n)-n), nil
}

// MarshalBinary encodes the padded match.
func (m Match) MarshalBinary() ([]byte, error) { return m.AppendBinary(nil) }

// UnmarshalBinary decodes a match; trailing bytes after the padding are an error.
func (m *Match) UnmarshalBinary(b []byte) error {
	r := newReader(b)
	m.decode(r)
	if r.err == nil && r.left() != 0 {
		return fmt.Errorf("%w: %d bytes after match", ErrBadLength, r.left())
	}
	return r.err
}

// decode reads a padded ofp_match. Fields are parsed within the declared length; the
// padding is skipped.
func (m *Match) decode(r *reader) {
	typ := r.u16("match type")
	n := int(r.u16("match length"))
	if r.err != nil {
		return
	}
	if typ != OFPMTOXM {
		r.setErr(fmt.Errorf("openflow13: unsupported match type %d", typ))
		return
	}
	if n < 4 {
		r.setErr(fmt.Errorf("%w: match length %d", ErrBadLength, n))
		return
	}
	body := r.bytes(n-4, "match fields")
	r.skip(pad8(n)-n, "match padding")
	if r.err != nil {
		return
	}
	fr := newReader(body)
	m.Fields = nil
	for fr.left() > 0 {
		f := decodeOXM(fr)
		if fr.err != nil {
			r.setErr(fr.err)
			return
		}
		m.Fields = append(m.Fields, f)
	}
}
