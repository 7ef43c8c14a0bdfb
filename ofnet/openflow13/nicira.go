package openflow13

import (
	"bytes"
	"fmt"
	"net"
	"strings"
)

// Nicira (OVS) extension actions used by the service load balancer: ct (connection
// tracking, NXAST_CT) and nat inside it (NXAST_NAT). Both travel as OpenFlow
// experimenter actions (type 0xffff) with the Nicira vendor id; see docs/services.md.

// NXVendorID is the Nicira experimenter id.
const NXVendorID uint32 = 0x00002320

// Nicira action subtypes.
const (
	NXASTResubmitTable uint16 = 14
	NXASTConntrack     uint16 = 35
	NXASTNAT           uint16 = 36
)

// ct flags (NX_CT_F_*).
const (
	NXCTFlagCommit uint16 = 1 << 0
	NXCTFlagForce  uint16 = 1 << 1
)

// NXCTRecircNone is the recirc_table of a ct action that does not recirculate.
const NXCTRecircNone uint8 = 0xff

// nat flags (NX_NAT_F_*).
const (
	NXNATFlagSrc         uint16 = 1 << 0
	NXNATFlagDst         uint16 = 1 << 1
	NXNATFlagPersistent  uint16 = 1 << 2
	NXNATFlagProtoHash   uint16 = 1 << 3
	NXNATFlagProtoRandom uint16 = 1 << 4
)

// nat range_present bits (NX_NAT_RANGE_*).
const (
	nxNATRangeIPv4Min  uint16 = 1 << 0
	nxNATRangeIPv4Max  uint16 = 1 << 1
	nxNATRangeIPv6Min  uint16 = 1 << 2
	nxNATRangeIPv6Max  uint16 = 1 << 3
	nxNATRangeProtoMin uint16 = 1 << 4
	nxNATRangeProtoMax uint16 = 1 << 5
)

// maxNestedActions bounds how deep ct actions nest when decoding (OVS allows one
// level); deeper ones stay ActionUnknown.
const maxNestedActions = 2

// ActionConntrack is OVS's ct action: send the packet through the connection tracker
// in a zone, optionally committing the connection, running nested actions (nat) and
// recirculating to RecircTable (NXCTRecircNone: no recirculation).
// The zone is immediate (ZoneSrc 0, Zone = zone) or loaded from a field (ZoneSrc = the
// NXM header, Zone = ofs_nbits).
type ActionConntrack struct {
	Flags       uint16
	ZoneSrc     uint32
	Zone        uint16
	RecircTable uint8
	Alg         uint16
	Actions     []Action
}

// ActionNAT is the nat action nested in ct. With Flags 0 it only applies the
// translation a committed connection already has (OVS "nat"); with NXNATFlagDst or
// NXNATFlagSrc it sets up a translation to the given address and port range (nil
// addresses and zero ports are left out of the range).
type ActionNAT struct {
	Flags    uint16
	IPv4Min  net.IP
	IPv4Max  net.IP
	ProtoMin uint16
	ProtoMax uint16
}

// ActionResubmit is OVS's resubmit(port,table) (NXAST_RESUBMIT_TABLE): run the
// flows of Table as if the packet had arrived on InPort (OFPPInPortNX: its real
// in_port), then go on with the actions after it. Unlike goto_table it may go back
// to an earlier table; the NetworkPolicy tables use it to return to the bridging
// lookup (docs/k8s.md, "NetworkPolicy").
type ActionResubmit struct {
	InPort uint16
	Table  uint8
}

// OFPPInPortNX is the 16-bit in_port of a resubmit that keeps the packet's in_port.
const OFPPInPortNX uint16 = 0xfff8

func (ActionResubmit) ActionType() uint16 { return OFPATExperimenter }

func (a ActionResubmit) appendBody(b []byte) ([]byte, error) {
	b = be.AppendUint32(b, NXVendorID)
	b = be.AppendUint16(b, NXASTResubmitTable)
	b = be.AppendUint16(b, a.InPort)
	return appendZeros(append(b, a.Table), 3), nil
}

func (a ActionResubmit) String() string {
	if a.InPort == OFPPInPortNX {
		return fmt.Sprintf("resubmit(,%d)", a.Table)
	}
	return fmt.Sprintf("resubmit(%d,%d)", a.InPort, a.Table)
}

func (ActionConntrack) ActionType() uint16 { return OFPATExperimenter }
func (ActionNAT) ActionType() uint16       { return OFPATExperimenter }

func (a ActionConntrack) appendBody(b []byte) ([]byte, error) {
	b = be.AppendUint32(b, NXVendorID)
	b = be.AppendUint16(b, NXASTConntrack)
	b = be.AppendUint16(b, a.Flags)
	b = be.AppendUint32(b, a.ZoneSrc)
	b = be.AppendUint16(b, a.Zone)
	b = appendZeros(append(b, a.RecircTable), 3)
	b = be.AppendUint16(b, a.Alg)
	return AppendActions(b, a.Actions)
}

func (a ActionNAT) rangePresent() uint16 {
	var r uint16
	if a.IPv4Min != nil {
		r |= nxNATRangeIPv4Min
	}
	if a.IPv4Max != nil {
		r |= nxNATRangeIPv4Max
	}
	if a.ProtoMin != 0 {
		r |= nxNATRangeProtoMin
	}
	if a.ProtoMax != 0 {
		r |= nxNATRangeProtoMax
	}
	return r
}

func (a ActionNAT) appendBody(b []byte) ([]byte, error) {
	for _, ip := range []net.IP{a.IPv4Min, a.IPv4Max} {
		if ip != nil && ip.To4() == nil {
			return b, fmt.Errorf("openflow13: nat address %v is not IPv4", ip)
		}
	}
	b = be.AppendUint32(b, NXVendorID)
	b = be.AppendUint16(b, NXASTNAT)
	b = appendZeros(b, 2)
	b = be.AppendUint16(b, a.Flags)
	b = be.AppendUint16(b, a.rangePresent())
	if a.IPv4Min != nil {
		b = append(b, a.IPv4Min.To4()...)
	}
	if a.IPv4Max != nil {
		b = append(b, a.IPv4Max.To4()...)
	}
	if a.ProtoMin != 0 {
		b = be.AppendUint16(b, a.ProtoMin)
	}
	if a.ProtoMax != 0 {
		b = be.AppendUint16(b, a.ProtoMax)
	}
	return b, nil
}

// decodeNicira decodes a Nicira experimenter action body (everything after type and
// length, padding included). It returns nil for anything it does not model exactly:
// the caller keeps such actions as ActionUnknown, so every action re-encodes byte for
// byte.
func decodeNicira(body []byte, depth int) Action {
	if len(body) < 8 || be.Uint32(body) != NXVendorID {
		return nil
	}
	var a Action
	switch be.Uint16(body[4:]) {
	case NXASTResubmitTable:
		if len(body) != 12 {
			return nil
		}
		a = ActionResubmit{InPort: be.Uint16(body[6:]), Table: body[8]}
	case NXASTConntrack:
		if len(body) < 20 || depth >= maxNestedActions {
			return nil
		}
		ct := ActionConntrack{Flags: be.Uint16(body[6:]), ZoneSrc: be.Uint32(body[8:]),
			Zone: be.Uint16(body[12:]), RecircTable: body[14], Alg: be.Uint16(body[18:])}
		nested, err := unmarshalActionsDepth(body[20:], depth+1)
		if err != nil {
			return nil
		}
		ct.Actions = nested
		a = ct
	case NXASTLearn:
		if a = decodeLearn(body); a == nil {
			return nil
		}
	case NXASTRegMove:
		if a = decodeRegMove(body); a == nil {
			return nil
		}
	case NXASTNAT:
		if len(body) < 12 {
			return nil
		}
		nat := ActionNAT{Flags: be.Uint16(body[8:])}
		present := be.Uint16(body[10:])
		if present&(nxNATRangeIPv6Min|nxNATRangeIPv6Max) != 0 || present>>6 != 0 {
			return nil
		}
		r := newReader(body[12:])
		if present&nxNATRangeIPv4Min != 0 {
			nat.IPv4Min = net.IP(r.copyBytes(4, "nat ipv4 min"))
		}
		if present&nxNATRangeIPv4Max != 0 {
			nat.IPv4Max = net.IP(r.copyBytes(4, "nat ipv4 max"))
		}
		if present&nxNATRangeProtoMin != 0 {
			nat.ProtoMin = r.u16("nat proto min")
		}
		if present&nxNATRangeProtoMax != 0 {
			nat.ProtoMax = r.u16("nat proto max")
		}
		if r.err != nil {
			return nil
		}
		a = nat
	default:
		return nil
	}
	// Only a canonical encoding decodes as typed: zero padding, a zero port where
	// the range says one is present, and the like stay unknown.
	enc, err := appendAction(nil, a)
	if err != nil || !bytes.Equal(enc[4:], body) {
		return nil
	}
	return a
}

func (a ActionConntrack) String() string {
	var parts []string
	if a.Flags&NXCTFlagCommit != 0 {
		parts = append(parts, "commit")
	}
	if a.Flags&NXCTFlagForce != 0 {
		parts = append(parts, "force")
	}
	if a.RecircTable != NXCTRecircNone {
		parts = append(parts, fmt.Sprintf("table=%d", a.RecircTable))
	}
	switch {
	case a.ZoneSrc != 0:
		parts = append(parts, fmt.Sprintf("zone=oxm(0x%08x)[%d..%d]", a.ZoneSrc, a.Zone>>6, a.Zone>>6+a.Zone&0x3f))
	case a.Zone != 0:
		parts = append(parts, fmt.Sprintf("zone=%d", a.Zone))
	}
	acts := a.Actions
	if len(acts) > 0 {
		if nat, ok := acts[0].(ActionNAT); ok {
			parts = append(parts, nat.String())
			acts = acts[1:]
		}
	}
	if len(acts) > 0 {
		parts = append(parts, "exec("+joinActions(acts)+")")
	}
	if a.Alg != 0 {
		parts = append(parts, fmt.Sprintf("alg=%d", a.Alg))
	}
	return "ct(" + strings.Join(parts, ",") + ")"
}

func (a ActionNAT) String() string {
	s := "nat"
	var args []string
	if a.Flags&(NXNATFlagSrc|NXNATFlagDst) != 0 {
		r := "src="
		if a.Flags&NXNATFlagDst != 0 {
			r = "dst="
		}
		if a.IPv4Min != nil {
			r += a.IPv4Min.String()
			if a.IPv4Max != nil {
				r += "-" + a.IPv4Max.String()
			}
		}
		if a.ProtoMin != 0 {
			r += fmt.Sprintf(":%d", a.ProtoMin)
			if a.ProtoMax != 0 {
				r += fmt.Sprintf("-%d", a.ProtoMax)
			}
		}
		args = append(args, r)
	}
	for _, f := range []struct {
		bit  uint16
		name string
	}{{NXNATFlagPersistent, "persistent"}, {NXNATFlagProtoHash, "hash"}, {NXNATFlagProtoRandom, "random"}} {
		if a.Flags&f.bit != 0 {
			args = append(args, f.name)
		}
	}
	if len(args) > 0 {
		s += "(" + strings.Join(args, ",") + ")"
	}
	return s
}

var ctStateNames = []string{"new", "est", "rel", "rpl", "inv", "trk", "snat", "dnat"}

// ctStateString renders ct_state as OVS does: +flag for a bit that must be set,
// -flag for one that must be clear, in bit order.
func ctStateString(v, mask uint32) string {
	var s strings.Builder
	for i := 0; i < 32; i++ {
		if mask&(1<<i) == 0 {
			continue
		}
		if i >= len(ctStateNames) {
			return fmt.Sprintf("%#x/%#x", v, mask)
		}
		if v&(1<<i) != 0 {
			s.WriteByte('+')
		} else {
			s.WriteByte('-')
		}
		s.WriteString(ctStateNames[i])
	}
	if s.Len() == 0 {
		return "0/0"
	}
	return s.String()
}

// GroupStats is one entry of a GROUP statistics reply: length(2) pad(2) group_id(4)
// ref_count(4) pad(4) packet_count(8) byte_count(8) duration_sec(4) duration_nsec(4),
// then one packet_count(8) byte_count(8) pair per bucket, in bucket order.
type GroupStats struct {
	GroupID      uint32
	RefCount     uint32
	PacketCount  uint64
	ByteCount    uint64
	DurationSec  uint32
	DurationNsec uint32
	Buckets      []BucketCounter
}

// BucketCounter counts the packets and bytes one group bucket processed.
type BucketCounter struct {
	PacketCount uint64
	ByteCount   uint64
}

// groupStatsFixed is the size of a group stats entry without bucket counters.
const groupStatsFixed = 40

// NewGroupStatsRequest asks for the statistics of one group (OFPG_ALL: every group).
func NewGroupStatsRequest(groupID uint32) *MultipartRequest {
	return &MultipartRequest{MPType: MultipartGroup, Body: appendZeros(be.AppendUint32(nil, groupID), 4)}
}

// DecodeGroupStats decodes the body of a GROUP multipart reply. Entries with a length
// that does not fit, is short or leaves a partial bucket counter are an error.
func DecodeGroupStats(body []byte) ([]GroupStats, error) {
	var out []GroupStats
	r := newReader(body)
	for r.left() > 0 {
		n := int(r.u16("group stats length"))
		if r.err == nil && (n < groupStatsFixed || (n-groupStatsFixed)%16 != 0) {
			return nil, fmt.Errorf("%w: group stats entry length %d", ErrBadLength, n)
		}
		er := newReader(r.bytes(n-2, "group stats entry"))
		if r.err != nil {
			return nil, r.err
		}
		er.skip(2, "pad")
		g := GroupStats{GroupID: er.u32("group_id"), RefCount: er.u32("ref_count")}
		er.skip(4, "pad")
		g.PacketCount, g.ByteCount = er.u64("packet_count"), er.u64("byte_count")
		g.DurationSec, g.DurationNsec = er.u32("duration_sec"), er.u32("duration_nsec")
		for er.left() > 0 {
			g.Buckets = append(g.Buckets, BucketCounter{PacketCount: er.u64("bucket packets"), ByteCount: er.u64("bucket bytes")})
		}
		if er.err != nil {
			return nil, er.err
		}
		out = append(out, g)
	}
	return out, nil
}

// AppendGroupStats encodes group stats entries (the inverse of DecodeGroupStats).
func AppendGroupStats(b []byte, gs []GroupStats) []byte {
	for _, g := range gs {
		b = be.AppendUint16(b, uint16(groupStatsFixed+16*len(g.Buckets)))
		b = appendZeros(b, 2)
		b = be.AppendUint32(b, g.GroupID)
		b = appendZeros(be.AppendUint32(b, g.RefCount), 4)
		b = be.AppendUint64(be.AppendUint64(b, g.PacketCount), g.ByteCount)
		b = be.AppendUint32(be.AppendUint32(b, g.DurationSec), g.DurationNsec)
		for _, c := range g.Buckets {
			b = be.AppendUint64(be.AppendUint64(b, c.PacketCount), c.ByteCount)
		}
	}
	return b
}
