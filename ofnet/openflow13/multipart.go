package openflow13

import "fmt"

// Multipart types (ofp_multipart_type).
const (
	MultipartDesc          uint16 = 0
	MultipartFlow          uint16 = 1
	MultipartAggregate     uint16 = 2
	MultipartTable         uint16 = 3
	MultipartPortStats     uint16 = 4
	MultipartQueue         uint16 = 5
	MultipartGroup         uint16 = 6
	MultipartGroupDesc     uint16 = 7
	MultipartGroupFeatures uint16 = 8
	MultipartMeter         uint16 = 9
	MultipartMeterConfig   uint16 = 10
	MultipartMeterFeatures uint16 = 11
	MultipartTableFeatures uint16 = 12
	MultipartPortDesc      uint16 = 13
	MultipartExperimenter  uint16 = 0xffff
)

// MultipartFlagMore (OFPMPF_REQ_MORE / OFPMPF_REPLY_MORE): more parts follow.
const MultipartFlagMore uint16 = 1

// FlowStatsRequest is the body of a FLOW (and AGGREGATE) request: table_id(1) pad(3)
// out_port(4) out_group(4) pad(4) cookie(8) cookie_mask(8) match.
type FlowStatsRequest struct {
	TableID    uint8
	OutPort    uint32
	OutGroup   uint32
	Cookie     uint64
	CookieMask uint64
	Match      Match
}

func (f *FlowStatsRequest) appendTo(b []byte) ([]byte, error) {
	b = appendZeros(append(b, f.TableID), 3)
	b = be.AppendUint32(b, f.OutPort)
	b = appendZeros(be.AppendUint32(b, f.OutGroup), 4)
	b = be.AppendUint64(b, f.Cookie)
	b = be.AppendUint64(b, f.CookieMask)
	return f.Match.AppendBinary(b)
}

func (f *FlowStatsRequest) decode(r *reader) {
	f.TableID = r.u8("table_id")
	r.skip(3, "pad")
	f.OutPort = r.u32("out_port")
	f.OutGroup = r.u32("out_group")
	r.skip(4, "pad")
	f.Cookie = r.u64("cookie")
	f.CookieMask = r.u64("cookie_mask")
	f.Match.decode(r)
}

// MultipartRequest is OFPT_MULTIPART_REQUEST: type(2) flags(2) pad(4) body. For
// MultipartFlow and MultipartAggregate the body is Flow; for every other type it is
// kept raw in Body (PORT_DESC and GROUP_DESC requests have an empty body).
type MultipartRequest struct {
	Header
	MPType uint16
	Flags  uint16
	Flow   *FlowStatsRequest
	Body   []byte
}

// NewFlowStatsRequest asks for the flows of one table (OFPTT_ALL for all), all ports and
// groups, optionally filtered by cookie/mask.
func NewFlowStatsRequest(table uint8, cookie, cookieMask uint64) *MultipartRequest {
	return &MultipartRequest{MPType: MultipartFlow, Flow: &FlowStatsRequest{TableID: table,
		OutPort: OFPPAny, OutGroup: OFPGAny, Cookie: cookie, CookieMask: cookieMask}}
}

func (*MultipartRequest) MsgType() uint8 { return TypeMultipartRequest }
func (m *MultipartRequest) appendBody(b []byte) ([]byte, error) {
	b = be.AppendUint16(b, m.MPType)
	b = appendZeros(be.AppendUint16(b, m.Flags), 4)
	if m.MPType == MultipartFlow || m.MPType == MultipartAggregate {
		if m.Flow == nil {
			return b, fmt.Errorf("openflow13: multipart type %d needs a FlowStatsRequest", m.MPType)
		}
		return m.Flow.appendTo(b)
	}
	return append(b, m.Body...), nil
}
func (m *MultipartRequest) decodeBody(r *reader) {
	m.MPType = r.u16("multipart type")
	m.Flags = r.u16("flags")
	r.skip(4, "pad")
	m.Flow, m.Body = nil, nil
	if m.MPType == MultipartFlow || m.MPType == MultipartAggregate {
		m.Flow = &FlowStatsRequest{}
		m.Flow.decode(r)
		return
	}
	m.Body = r.rest()
}
func (m *MultipartRequest) MarshalBinary() ([]byte, error) { return marshalMsg(m) }
func (m *MultipartRequest) UnmarshalBinary(b []byte) error { return unmarshalMsg(m, b) }

// FlowStats is one flow-stats reply entry: length(2) table_id(1) pad(1) duration_sec(4)
// duration_nsec(4) priority(2) idle(2) hard(2) flags(2) pad(4) cookie(8) packet_count(8)
// byte_count(8) match instructions.
type FlowStats struct {
	TableID      uint8
	DurationSec  uint32
	DurationNsec uint32
	Priority     uint16
	IdleTimeout  uint16
	HardTimeout  uint16
	Flags        uint16
	Cookie       uint64
	PacketCount  uint64
	ByteCount    uint64
	Match        Match
	Instructions []Instruction
}

func (f *FlowStats) appendTo(b []byte) ([]byte, error) {
	start := len(b)
	b = append(b, 0, 0, f.TableID, 0)
	b = be.AppendUint32(b, f.DurationSec)
	b = be.AppendUint32(b, f.DurationNsec)
	b = be.AppendUint16(b, f.Priority)
	b = be.AppendUint16(b, f.IdleTimeout)
	b = be.AppendUint16(b, f.HardTimeout)
	b = appendZeros(be.AppendUint16(b, f.Flags), 4)
	b = be.AppendUint64(b, f.Cookie)
	b = be.AppendUint64(b, f.PacketCount)
	b = be.AppendUint64(b, f.ByteCount)
	b, err := f.Match.AppendBinary(b)
	if err != nil {
		return b, err
	}
	if b, err = AppendInstructions(b, f.Instructions); err != nil {
		return b, err
	}
	return b, putLen16(b, start, len(b)-start)
}

func decodeFlowStats(r *reader) (FlowStats, bool) {
	var f FlowStats
	n := int(r.u16("flow stats length"))
	if r.err == nil && n < 48+8 {
		r.setErr(fmt.Errorf("%w: flow stats entry length %d", ErrBadLength, n))
	}
	er := newReader(r.bytes(n-2, "flow stats entry"))
	if r.err != nil {
		return f, false
	}
	f.TableID = er.u8("table_id")
	er.skip(1, "pad")
	f.DurationSec = er.u32("duration_sec")
	f.DurationNsec = er.u32("duration_nsec")
	f.Priority = er.u16("priority")
	f.IdleTimeout = er.u16("idle_timeout")
	f.HardTimeout = er.u16("hard_timeout")
	f.Flags = er.u16("flags")
	er.skip(4, "pad")
	f.Cookie = er.u64("cookie")
	f.PacketCount = er.u64("packet_count")
	f.ByteCount = er.u64("byte_count")
	f.Match.decode(er)
	if er.err == nil {
		var err error
		f.Instructions, err = UnmarshalInstructions(er.bytes(er.left(), "instructions"))
		er.setErr(err)
	}
	r.setErr(er.err)
	return f, r.err == nil
}

// GroupDesc is one group-desc reply entry: length(2) type(1) pad(1) group_id(4) buckets.
type GroupDesc struct {
	GroupType uint8
	GroupID   uint32
	Buckets   []Bucket
}

func (g *GroupDesc) appendTo(b []byte) ([]byte, error) {
	start := len(b)
	b = append(b, 0, 0, g.GroupType, 0)
	b = be.AppendUint32(b, g.GroupID)
	b, err := appendBuckets(b, g.Buckets)
	if err != nil {
		return b, err
	}
	return b, putLen16(b, start, len(b)-start)
}

func decodeGroupDesc(r *reader) (GroupDesc, bool) {
	var g GroupDesc
	n := int(r.u16("group desc length"))
	if r.err == nil && n < 8 {
		r.setErr(fmt.Errorf("%w: group desc length %d", ErrBadLength, n))
	}
	er := newReader(r.bytes(n-2, "group desc entry"))
	if r.err != nil {
		return g, false
	}
	g.GroupType = er.u8("type")
	er.skip(1, "pad")
	g.GroupID = er.u32("group_id")
	g.Buckets = decodeBuckets(er)
	r.setErr(er.err)
	return g, r.err == nil
}

// MultipartReply is OFPT_MULTIPART_REPLY: type(2) flags(2) pad(4) body. Depending on
// MPType exactly one of Flows (FLOW), Ports (PORT_DESC), Groups (GROUP_DESC) or Body
// (every other type, kept raw) is used.
type MultipartReply struct {
	Header
	MPType uint16
	Flags  uint16
	Flows  []FlowStats
	Ports  []Port
	Groups []GroupDesc
	Body   []byte
}

func (*MultipartReply) MsgType() uint8 { return TypeMultipartReply }
func (m *MultipartReply) appendBody(b []byte) ([]byte, error) {
	b = be.AppendUint16(b, m.MPType)
	b = appendZeros(be.AppendUint16(b, m.Flags), 4)
	var err error
	switch m.MPType {
	case MultipartFlow:
		for i := range m.Flows {
			if b, err = m.Flows[i].appendTo(b); err != nil {
				return b, err
			}
		}
	case MultipartPortDesc:
		for i := range m.Ports {
			b = m.Ports[i].appendTo(b)
		}
	case MultipartGroupDesc:
		for i := range m.Groups {
			if b, err = m.Groups[i].appendTo(b); err != nil {
				return b, err
			}
		}
	default:
		b = append(b, m.Body...)
	}
	return b, nil
}
func (m *MultipartReply) decodeBody(r *reader) {
	m.MPType = r.u16("multipart type")
	m.Flags = r.u16("flags")
	r.skip(4, "pad")
	m.Flows, m.Ports, m.Groups, m.Body = nil, nil, nil, nil
	switch m.MPType {
	case MultipartFlow:
		for r.left() > 0 {
			f, ok := decodeFlowStats(r)
			if !ok {
				return
			}
			m.Flows = append(m.Flows, f)
		}
	case MultipartPortDesc:
		for r.left() > 0 {
			var p Port
			p.decode(r)
			if r.err != nil {
				return
			}
			m.Ports = append(m.Ports, p)
		}
	case MultipartGroupDesc:
		for r.left() > 0 {
			g, ok := decodeGroupDesc(r)
			if !ok {
				return
			}
			m.Groups = append(m.Groups, g)
		}
	default:
		m.Body = r.rest()
	}
}
func (m *MultipartReply) MarshalBinary() ([]byte, error) { return marshalMsg(m) }
func (m *MultipartReply) UnmarshalBinary(b []byte) error { return unmarshalMsg(m, b) }
