package openflow13

import (
	"fmt"
	"math/big"
	"net"
	"strings"
)

// OVS's learn action (NXAST_LEARN, Nicira subtype 16): when a packet executes it, the
// switch adds (or refreshes) a flow in another table whose match and actions are
// built from the packet's fields and immediate values. The service load balancer's
// session affinity (docs/services.md, "Session affinity") learns one flow per client.
//
// Wire layout after the experimenter header (vendor 0x2320, subtype 16):
// idle_timeout(2) hard_timeout(2) priority(2) cookie(8) flags(2) table_id(1) pad(1)
// fin_idle_timeout(2) fin_hard_timeout(2), then flow_mod_specs up to the end of the
// action, each a 16-bit header (bit 13: source is an immediate value; bits 11-12:
// destination match, load or output; bits 0-10: n_bits), the source (a field: its
// 32-bit NXM/OXM header and a 16-bit bit offset; an immediate: n_bits rounded up to
// 16 bits, right aligned) and, for match and load, the destination field the same
// way. Zero bytes pad the action to a multiple of 8 (a zero header ends the specs).

// NXASTLearn is the learn action's Nicira subtype.
const NXASTLearn uint16 = 16

// Learn flags (NX_LEARN_F_*).
const (
	// NXLearnFlagSendFlowRem sets OFPFF_SEND_FLOW_REM on the learned flows.
	NXLearnFlagSendFlowRem uint16 = 1 << 0
	// NXLearnFlagDeleteLearned deletes the learned flows (those of the learn's table
	// and cookie) once no flow holding such a learn action is left.
	NXLearnFlagDeleteLearned uint16 = 1 << 1
)

// Destinations of a learn spec (bits 11-12 of its header).
const (
	LearnDstMatch  uint16 = 0 << 11 // the learned flow matches the field
	LearnDstLoad   uint16 = 1 << 11 // the learned flow loads the field
	LearnDstOutput uint16 = 2 << 11 // the learned flow outputs to the port in the source
)

const (
	learnSrcImmediate uint16 = 1 << 13
	learnDstMask      uint16 = 3 << 11
	learnNBitsMask    uint16 = 0x7ff
	learnFixedLen            = 28 // body after type/len up to the specs
)

// NXM/OXM headers (class<<16 | field<<9 | length; no mask bit) of the fields learn
// actions name here, as OVS encodes them (the NXM form where one exists).
const (
	NXMOfEthType  uint32 = 0x00000602
	NXMOfIPProto  uint32 = 0x00000c01
	NXMOfIPSrc    uint32 = 0x00000e04
	NXMOfIPDst    uint32 = 0x00001004
	NXMOfTCPSrc   uint32 = 0x00001202
	NXMOfTCPDst   uint32 = 0x00001402
	NXMOfUDPSrc   uint32 = 0x00001602
	NXMOfUDPDst   uint32 = 0x00001802
	OXMOfMetadata uint32 = 0x80000408
)

// NXMReg is the header of NXM_NX_REG<n> (n 0..15).
func NXMReg(n int) uint32 { return 0x00010004 | uint32(n&15)<<9 }

// learnFieldDef names a field for rendering: its NXM name and, for an immediate
// match of the whole field, its ovs-ofctl name and value format.
type learnFieldDef struct {
	nxm, name string
	format    valueFormat
}

var learnFieldDefs = func() map[uint32]learnFieldDef {
	m := map[uint32]learnFieldDef{
		NXMOfEthType:  {"NXM_OF_ETH_TYPE", "eth_type", fmtHex},
		NXMOfIPProto:  {"NXM_OF_IP_PROTO", "nw_proto", fmtDec},
		NXMOfIPSrc:    {"NXM_OF_IP_SRC", "ip_src", fmtIPv4},
		NXMOfIPDst:    {"NXM_OF_IP_DST", "ip_dst", fmtIPv4},
		NXMOfTCPSrc:   {"NXM_OF_TCP_SRC", "tcp_src", fmtDec},
		NXMOfTCPDst:   {"NXM_OF_TCP_DST", "tcp_dst", fmtDec},
		NXMOfUDPSrc:   {"NXM_OF_UDP_SRC", "udp_src", fmtDec},
		NXMOfUDPDst:   {"NXM_OF_UDP_DST", "udp_dst", fmtDec},
		OXMOfMetadata: {"OXM_OF_METADATA", "metadata", fmtHex},
	}
	for i := 0; i < 16; i++ {
		m[NXMReg(i)] = learnFieldDef{fmt.Sprintf("NXM_NX_REG%d", i), fmt.Sprintf("reg%d", i), fmtHex}
	}
	return m
}()

// headerBits is the width in bits of the field a 32-bit header names.
func headerBits(h uint32) int { return int(h&0xff) * 8 }

// LearnField is bits Ofs.. of the field whose 32-bit NXM/OXM header is Header.
type LearnField struct {
	Header uint32
	Ofs    uint16
}

// LearnSpec is one flow_mod_spec of a learn action: NBits bits of Src (or of the
// immediate value Imm, when Immediate) go to DstField of the learned flow's match
// (LearnDstMatch) or actions (LearnDstLoad), or name its output port
// (LearnDstOutput, no DstField). Imm holds 2*ceil(NBits/16) bytes, big-endian.
type LearnSpec struct {
	Dst       uint16
	NBits     uint16
	Immediate bool
	Src       LearnField
	Imm       []byte
	DstField  LearnField
}

// immBytes returns v as the immediate of an n-bit spec (v must fit 64 bits).
func immBytes(v uint64, nbits uint16) []byte {
	n := 2 * ((int(nbits) + 15) / 16)
	b := make([]byte, n)
	for i := n - 1; i >= 0 && v != 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
	return b
}

// LearnMatchField makes the learned flow match nbits of field f equal to the same bits
// of the packet that ran the learn action.
func LearnMatchField(f LearnField, nbits uint16) LearnSpec {
	return LearnSpec{Dst: LearnDstMatch, NBits: nbits, Src: f, DstField: f}
}

// LearnMatchValue makes the learned flow match nbits of field f equal to v.
func LearnMatchValue(f LearnField, nbits uint16, v uint64) LearnSpec {
	return LearnSpec{Dst: LearnDstMatch, NBits: nbits, Immediate: true, Imm: immBytes(v, nbits), DstField: f}
}

// LearnLoadValue makes the learned flow load v into nbits of field f.
func LearnLoadValue(v uint64, f LearnField, nbits uint16) LearnSpec {
	return LearnSpec{Dst: LearnDstLoad, NBits: nbits, Immediate: true, Imm: immBytes(v, nbits), DstField: f}
}

// ActionLearn is OVS's learn action: add a flow to Table with the given timeouts
// (seconds, 0: none), priority, cookie and flags (NXLearnFlag*), built by Specs.
type ActionLearn struct {
	IdleTimeout    uint16
	HardTimeout    uint16
	Priority       uint16
	Cookie         uint64
	Flags          uint16
	Table          uint8
	FinIdleTimeout uint16
	FinHardTimeout uint16
	Specs          []LearnSpec
}

func (ActionLearn) ActionType() uint16 { return OFPATExperimenter }

func (s LearnSpec) check() error {
	switch {
	case s.NBits == 0 || s.NBits > learnNBitsMask:
		return fmt.Errorf("openflow13: learn spec of %d bits: want 1..%d", s.NBits, learnNBitsMask)
	case s.Dst != LearnDstMatch && s.Dst != LearnDstLoad && s.Dst != LearnDstOutput:
		return fmt.Errorf("openflow13: learn spec destination %#x", s.Dst)
	case s.Immediate && len(s.Imm) != 2*((int(s.NBits)+15)/16):
		return fmt.Errorf("openflow13: learn immediate of %d bytes for %d bits", len(s.Imm), s.NBits)
	case s.Immediate && s.Dst == LearnDstOutput:
		return fmt.Errorf("openflow13: learn output from an immediate value")
	case s.Dst == LearnDstOutput && s.DstField != (LearnField{}):
		return fmt.Errorf("openflow13: learn output with a destination field")
	case !s.Immediate && s.Imm != nil:
		return fmt.Errorf("openflow13: learn spec from a field with an immediate value")
	}
	return nil
}

func (a ActionLearn) appendBody(b []byte) ([]byte, error) {
	b = be.AppendUint32(b, NXVendorID)
	b = be.AppendUint16(b, NXASTLearn)
	b = be.AppendUint16(b, a.IdleTimeout)
	b = be.AppendUint16(b, a.HardTimeout)
	b = be.AppendUint16(b, a.Priority)
	b = be.AppendUint64(b, a.Cookie)
	b = be.AppendUint16(b, a.Flags)
	b = append(b, a.Table, 0)
	b = be.AppendUint16(b, a.FinIdleTimeout)
	b = be.AppendUint16(b, a.FinHardTimeout)
	for _, s := range a.Specs {
		if err := s.check(); err != nil {
			return b, err
		}
		h := s.NBits | s.Dst
		if s.Immediate {
			h |= learnSrcImmediate
		}
		b = be.AppendUint16(b, h)
		if s.Immediate {
			b = append(b, s.Imm...)
		} else {
			b = be.AppendUint32(b, s.Src.Header)
			b = be.AppendUint16(b, s.Src.Ofs)
		}
		if s.Dst != LearnDstOutput {
			b = be.AppendUint32(b, s.DstField.Header)
			b = be.AppendUint16(b, s.DstField.Ofs)
		}
	}
	return b, nil
}

// decodeLearn decodes a learn action's body (after type and length, from the vendor
// id on, padding included). It returns nil for anything malformed; decodeNicira then
// keeps only a canonical encoding as typed.
func decodeLearn(body []byte) Action {
	if len(body) < learnFixedLen {
		return nil
	}
	r := newReader(body[6:])
	a := ActionLearn{IdleTimeout: r.u16(""), HardTimeout: r.u16(""), Priority: r.u16(""),
		Cookie: r.u64(""), Flags: r.u16(""), Table: r.u8("")}
	r.skip(1, "pad")
	a.FinIdleTimeout, a.FinHardTimeout = r.u16(""), r.u16("")
	for r.err == nil && r.left() >= 2 {
		h := r.u16("learn spec header")
		if h == 0 {
			break // the padding
		}
		if h&^(learnSrcImmediate|learnDstMask|learnNBitsMask) != 0 {
			return nil
		}
		s := LearnSpec{Dst: h & learnDstMask, NBits: h & learnNBitsMask, Immediate: h&learnSrcImmediate != 0}
		if s.Immediate {
			s.Imm = r.copyBytes(2*((int(s.NBits)+15)/16), "learn immediate")
		} else {
			s.Src = LearnField{Header: r.u32("learn source"), Ofs: r.u16("learn source offset")}
		}
		if s.Dst == LearnDstMatch || s.Dst == LearnDstLoad {
			s.DstField = LearnField{Header: r.u32("learn destination"), Ofs: r.u16("learn destination offset")}
		}
		if r.err != nil || s.check() != nil {
			return nil
		}
		a.Specs = append(a.Specs, s)
	}
	if r.err != nil {
		return nil
	}
	return a
}

func (a ActionLearn) String() string {
	p := []string{fmt.Sprintf("table=%d", a.Table)}
	if a.IdleTimeout != 0 {
		p = append(p, fmt.Sprintf("idle_timeout=%d", a.IdleTimeout))
	}
	if a.HardTimeout != 0 {
		p = append(p, fmt.Sprintf("hard_timeout=%d", a.HardTimeout))
	}
	if a.FinIdleTimeout != 0 {
		p = append(p, fmt.Sprintf("fin_idle_timeout=%d", a.FinIdleTimeout))
	}
	if a.FinHardTimeout != 0 {
		p = append(p, fmt.Sprintf("fin_hard_timeout=%d", a.FinHardTimeout))
	}
	if a.Priority != DefaultPriority {
		p = append(p, fmt.Sprintf("priority=%d", a.Priority))
	}
	if a.Flags&NXLearnFlagSendFlowRem != 0 {
		p = append(p, "send_flow_rem")
	}
	if a.Flags&NXLearnFlagDeleteLearned != 0 {
		p = append(p, "delete_learned")
	}
	if a.Cookie != 0 {
		p = append(p, fmt.Sprintf("cookie=%#x", a.Cookie))
	}
	for _, s := range a.Specs {
		p = append(p, s.String())
	}
	return "learn(" + strings.Join(p, ",") + ")"
}

// DefaultPriority is OpenFlow's default flow priority (OFP_DEFAULT_PRIORITY).
const DefaultPriority uint16 = 0x8000

// String renders a spec as ovs-ofctl does inside learn(...).
func (s LearnSpec) String() string {
	switch {
	case s.Dst == LearnDstMatch && s.Immediate:
		d, known := learnFieldDefs[s.DstField.Header]
		if known && s.DstField.Ofs == 0 && int(s.NBits) == headerBits(s.DstField.Header) {
			return d.name + "=" + learnValueString(d.format, s.Imm, int(s.NBits))
		}
		return s.DstField.subfieldString(s.NBits) + "=" + hexBytes(s.Imm)
	case s.Dst == LearnDstMatch:
		out := s.DstField.subfieldString(s.NBits)
		if s.Src != s.DstField {
			out += "=" + s.Src.subfieldString(s.NBits)
		}
		return out
	case s.Dst == LearnDstLoad && s.Immediate:
		return "load:" + hexBytes(s.Imm) + "->" + s.DstField.subfieldString(s.NBits)
	case s.Dst == LearnDstLoad:
		return "load:" + s.Src.subfieldString(s.NBits) + "->" + s.DstField.subfieldString(s.NBits)
	}
	return "output:" + s.Src.subfieldString(s.NBits)
}

// subfieldString renders nbits of the field from Ofs as OVS does: NAME[] for the whole
// field, NAME[i] for one bit, NAME[i..j] otherwise.
func (f LearnField) subfieldString(nbits uint16) string {
	name := fmt.Sprintf("NXM(%#x)", f.Header)
	if d, ok := learnFieldDefs[f.Header]; ok {
		name = d.nxm
	}
	switch {
	case f.Ofs == 0 && int(nbits) == headerBits(f.Header):
		return name + "[]"
	case nbits == 1:
		return fmt.Sprintf("%s[%d]", name, f.Ofs)
	}
	return fmt.Sprintf("%s[%d..%d]", name, f.Ofs, int(f.Ofs)+int(nbits)-1)
}

// hexBytes renders a big-endian value as 0x with no leading zeros ("0x0" for zero).
func hexBytes(b []byte) string {
	return "0x" + new(big.Int).SetBytes(b).Text(16)
}

// learnValueString renders an immediate of a whole field in the field's format.
func learnValueString(f valueFormat, imm []byte, nbits int) string {
	v := imm[len(imm)-(nbits+7)/8:]
	switch f {
	case fmtDec:
		return new(big.Int).SetBytes(v).String()
	case fmtIPv4:
		if len(v) == 4 {
			return net.IP(v).String()
		}
	}
	return hexBytes(v)
}

// NXASTRegMove is the Nicira subtype of move (NXAST_REG_MOVE).
const NXASTRegMove uint16 = 6

// ActionRegMove is OVS's move action: copy NBits bits of Src to Dst (fields by their
// 32-bit NXM/OXM headers). Besides moving data it makes OVS's cached datapath flow
// depend on the source bits (the service load balancer uses that, docs/services.md).
// Wire body: vendor, subtype 6, n_bits(2) src_ofs(2) dst_ofs(2) src(4) dst(4).
type ActionRegMove struct {
	NBits uint16
	Src   LearnField
	Dst   LearnField
}

func (ActionRegMove) ActionType() uint16 { return OFPATExperimenter }

func (a ActionRegMove) appendBody(b []byte) ([]byte, error) {
	if a.NBits == 0 {
		return b, fmt.Errorf("openflow13: move of 0 bits")
	}
	b = be.AppendUint32(b, NXVendorID)
	b = be.AppendUint16(b, NXASTRegMove)
	b = be.AppendUint16(b, a.NBits)
	b = be.AppendUint16(b, a.Src.Ofs)
	b = be.AppendUint16(b, a.Dst.Ofs)
	b = be.AppendUint32(b, a.Src.Header)
	return be.AppendUint32(b, a.Dst.Header), nil
}

// decodeRegMove decodes a move action's body (vendor id on, padding included).
func decodeRegMove(body []byte) Action {
	if len(body) != 20 {
		return nil
	}
	a := ActionRegMove{NBits: be.Uint16(body[6:]), Src: LearnField{Header: be.Uint32(body[12:]), Ofs: be.Uint16(body[8:])},
		Dst: LearnField{Header: be.Uint32(body[16:]), Ofs: be.Uint16(body[10:])}}
	if a.NBits == 0 {
		return nil
	}
	return a
}

func (a ActionRegMove) String() string {
	return "move:" + a.Src.subfieldString(a.NBits) + "->" + a.Dst.subfieldString(a.NBits)
}
