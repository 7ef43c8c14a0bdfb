package openflow13

import "fmt"

// Flow-mod commands.
const (
	FlowAdd          uint8 = 0
	FlowModify       uint8 = 1
	FlowModifyStrict uint8 = 2
	FlowDelete       uint8 = 3
	FlowDeleteStrict uint8 = 4
)

// Flow-mod flags.
const (
	FlowFlagSendFlowRem  uint16 = 1 << 0
	FlowFlagCheckOverlap uint16 = 1 << 1
	FlowFlagResetCounts  uint16 = 1 << 2
	FlowFlagNoPktCounts  uint16 = 1 << 3
	FlowFlagNoBytCounts  uint16 = 1 << 4
)

// Table ids.
const (
	OFPTTMax uint8 = 0xfe
	OFPTTAll uint8 = 0xff // delete/stats in all tables
)

// FlowMod is OFPT_FLOW_MOD: cookie(8) cookie_mask(8) table_id(1) command(1)
// idle_timeout(2) hard_timeout(2) priority(2) buffer_id(4) out_port(4) out_group(4)
// flags(2) pad(2), then the padded match and the instructions.
type FlowMod struct {
	Header
	Cookie       uint64
	CookieMask   uint64
	TableID      uint8
	Command      uint8
	IdleTimeout  uint16
	HardTimeout  uint16
	Priority     uint16
	BufferID     uint32
	OutPort      uint32
	OutGroup     uint32
	Flags        uint16
	Match        Match
	Instructions []Instruction
}

// NewFlowMod returns an ADD with buffer_id NO_BUFFER and out_port/out_group ANY
// (the conventions of docs/dataplane.md §2.3). Fill in table, priority, cookie, match and
// instructions.
func NewFlowMod(table uint8, priority uint16, cookie uint64) *FlowMod {
	return &FlowMod{TableID: table, Priority: priority, Cookie: cookie, Command: FlowAdd,
		BufferID: OFPNoBuffer, OutPort: OFPPAny, OutGroup: OFPGAny}
}

// NewFlowDeleteByCookie removes exactly the flows carrying cookie in table (non-strict
// delete, cookie mask all-ones, empty match).
func NewFlowDeleteByCookie(table uint8, cookie uint64) *FlowMod {
	fm := NewFlowMod(table, 0, cookie)
	fm.Command, fm.CookieMask = FlowDelete, ^uint64(0)
	return fm
}

func (*FlowMod) MsgType() uint8 { return TypeFlowMod }
func (m *FlowMod) appendBody(b []byte) ([]byte, error) {
	b = be.AppendUint64(b, m.Cookie)
	b = be.AppendUint64(b, m.CookieMask)
	b = append(b, m.TableID, m.Command)
	b = be.AppendUint16(b, m.IdleTimeout)
	b = be.AppendUint16(b, m.HardTimeout)
	b = be.AppendUint16(b, m.Priority)
	b = be.AppendUint32(b, m.BufferID)
	b = be.AppendUint32(b, m.OutPort)
	b = be.AppendUint32(b, m.OutGroup)
	b = appendZeros(be.AppendUint16(b, m.Flags), 2)
	b, err := m.Match.AppendBinary(b)
	if err != nil {
		return b, err
	}
	return AppendInstructions(b, m.Instructions)
}
func (m *FlowMod) decodeBody(r *reader) {
	m.Cookie = r.u64("cookie")
	m.CookieMask = r.u64("cookie_mask")
	m.TableID = r.u8("table_id")
	m.Command = r.u8("command")
	m.IdleTimeout = r.u16("idle_timeout")
	m.HardTimeout = r.u16("hard_timeout")
	m.Priority = r.u16("priority")
	m.BufferID = r.u32("buffer_id")
	m.OutPort = r.u32("out_port")
	m.OutGroup = r.u32("out_group")
	m.Flags = r.u16("flags")
	r.skip(2, "pad")
	m.Match.decode(r)
	if r.err != nil {
		return
	}
	ins, err := UnmarshalInstructions(r.bytes(r.left(), "instructions"))
	r.setErr(err)
	m.Instructions = ins
}
func (m *FlowMod) MarshalBinary() ([]byte, error) { return marshalMsg(m) }
func (m *FlowMod) UnmarshalBinary(b []byte) error { return unmarshalMsg(m, b) }

// ---- FLOW_REMOVED ----

// FlowRemoved is OFPT_FLOW_REMOVED: cookie(8) priority(2) reason(1) table_id(1)
// duration_sec(4) duration_nsec(4) idle(2) hard(2) packet_count(8) byte_count(8) match.
type FlowRemoved struct {
	Header
	Cookie       uint64
	Priority     uint16
	Reason       uint8
	TableID      uint8
	DurationSec  uint32
	DurationNsec uint32
	IdleTimeout  uint16
	HardTimeout  uint16
	PacketCount  uint64
	ByteCount    uint64
	Match        Match
}

func (*FlowRemoved) MsgType() uint8 { return TypeFlowRemoved }
func (m *FlowRemoved) appendBody(b []byte) ([]byte, error) {
	b = be.AppendUint64(b, m.Cookie)
	b = be.AppendUint16(b, m.Priority)
	b = append(b, m.Reason, m.TableID)
	b = be.AppendUint32(b, m.DurationSec)
	b = be.AppendUint32(b, m.DurationNsec)
	b = be.AppendUint16(b, m.IdleTimeout)
	b = be.AppendUint16(b, m.HardTimeout)
	b = be.AppendUint64(b, m.PacketCount)
	b = be.AppendUint64(b, m.ByteCount)
	return m.Match.AppendBinary(b)
}
func (m *FlowRemoved) decodeBody(r *reader) {
	m.Cookie = r.u64("cookie")
	m.Priority = r.u16("priority")
	m.Reason = r.u8("reason")
	m.TableID = r.u8("table_id")
	m.DurationSec = r.u32("duration_sec")
	m.DurationNsec = r.u32("duration_nsec")
	m.IdleTimeout = r.u16("idle_timeout")
	m.HardTimeout = r.u16("hard_timeout")
	m.PacketCount = r.u64("packet_count")
	m.ByteCount = r.u64("byte_count")
	m.Match.decode(r)
}
func (m *FlowRemoved) MarshalBinary() ([]byte, error) { return marshalMsg(m) }
func (m *FlowRemoved) UnmarshalBinary(b []byte) error { return unmarshalMsg(m, b) }

// ---- PACKET_IN ----

// Packet-in reasons.
const (
	PacketInReasonNoMatch    uint8 = 0
	PacketInReasonAction     uint8 = 1
	PacketInReasonInvalidTTL uint8 = 2
)

// PacketIn is OFPT_PACKET_IN: buffer_id(4) total_len(2) reason(1) table_id(1)
// cookie(8), padded match, 2 bytes of pad, then the frame.
type PacketIn struct {
	Header
	BufferID uint32
	TotalLen uint16
	Reason   uint8
	TableID  uint8
	Cookie   uint64
	Match    Match
	Data     []byte
}

func (*PacketIn) MsgType() uint8 { return TypePacketIn }
func (m *PacketIn) appendBody(b []byte) ([]byte, error) {
	b = be.AppendUint32(b, m.BufferID)
	b = be.AppendUint16(b, m.TotalLen)
	b = append(b, m.Reason, m.TableID)
	b = be.AppendUint64(b, m.Cookie)
	b, err := m.Match.AppendBinary(b)
	if err != nil {
		return b, err
	}
	return append(appendZeros(b, 2), m.Data...), nil
}
func (m *PacketIn) decodeBody(r *reader) {
	m.BufferID = r.u32("buffer_id")
	m.TotalLen = r.u16("total_len")
	m.Reason = r.u8("reason")
	m.TableID = r.u8("table_id")
	m.Cookie = r.u64("cookie")
	m.Match.decode(r)
	r.skip(2, "pad")
	m.Data = r.rest()
}
func (m *PacketIn) MarshalBinary() ([]byte, error) { return marshalMsg(m) }
func (m *PacketIn) UnmarshalBinary(b []byte) error { return unmarshalMsg(m, b) }

// ---- PACKET_OUT ----

// PacketOut is OFPT_PACKET_OUT: buffer_id(4) in_port(4) actions_len(2) pad(6) actions
// frame.
type PacketOut struct {
	Header
	BufferID uint32
	InPort   uint32
	Actions  []Action
	Data     []byte
}

// NewPacketOut returns an unbuffered packet-out of frame (in_port ANY).
func NewPacketOut(frame []byte, actions ...Action) *PacketOut {
	return &PacketOut{BufferID: OFPNoBuffer, InPort: OFPPAny, Actions: actions, Data: frame}
}

func (*PacketOut) MsgType() uint8 { return TypePacketOut }
func (m *PacketOut) appendBody(b []byte) ([]byte, error) {
	b = be.AppendUint32(b, m.BufferID)
	b = be.AppendUint32(b, m.InPort)
	at := len(b)
	b = appendZeros(b, 8) // actions_len + pad(6)
	b, err := AppendActions(b, m.Actions)
	if err != nil {
		return b, err
	}
	if err := putLen16(b, at, len(b)-at-8); err != nil {
		return b, err
	}
	return append(b, m.Data...), nil
}
func (m *PacketOut) decodeBody(r *reader) {
	m.BufferID = r.u32("buffer_id")
	m.InPort = r.u32("in_port")
	n := int(r.u16("actions_len"))
	r.skip(6, "pad")
	acts, err := UnmarshalActions(r.bytes(n, "actions"))
	r.setErr(err)
	m.Actions = acts
	m.Data = r.rest()
}
func (m *PacketOut) MarshalBinary() ([]byte, error) { return marshalMsg(m) }
func (m *PacketOut) UnmarshalBinary(b []byte) error { return unmarshalMsg(m, b) }

// ---- GROUP_MOD ----

// Group-mod commands and group types.
const (
	GroupAdd    uint16 = 0
	GroupModify uint16 = 1
	GroupDelete uint16 = 2

	GroupTypeAll          uint8 = 0
	GroupTypeSelect       uint8 = 1
	GroupTypeIndirect     uint8 = 2
	GroupTypeFastFailover uint8 = 3
)

// Bucket is ofp_bucket: len(2) weight(2) watch_port(4) watch_group(4) pad(4) actions.
type Bucket struct {
	Weight     uint16
	WatchPort  uint32
	WatchGroup uint32
	Actions    []Action
}

// NewBucket returns a bucket with weight 0 and watch port/group ANY.
func NewBucket(actions ...Action) Bucket {
	return Bucket{WatchPort: OFPPAny, WatchGroup: OFPGAny, Actions: actions}
}

func appendBuckets(b []byte, bs []Bucket) ([]byte, error) {
	for _, bk := range bs {
		start := len(b)
		b = be.AppendUint16(b, 0)
		b = be.AppendUint16(b, bk.Weight)
		b = be.AppendUint32(b, bk.WatchPort)
		b = be.AppendUint32(b, bk.WatchGroup)
		b = appendZeros(b, 4)
		var err error
		if b, err = AppendActions(b, bk.Actions); err != nil {
			return b, err
		}
		if err := putLen16(b, start, len(b)-start); err != nil {
			return b, err
		}
	}
	return b, nil
}

func decodeBuckets(r *reader) []Bucket {
	var bs []Bucket
	for r.left() > 0 {
		n := int(r.u16("bucket len"))
		if r.err == nil && (n < 16 || n%8 != 0) {
			r.setErr(fmt.Errorf("%w: bucket length %d", ErrBadLength, n))
		}
		bk := Bucket{Weight: r.u16("weight"), WatchPort: r.u32("watch_port"), WatchGroup: r.u32("watch_group")}
		r.skip(4, "pad")
		acts, err := UnmarshalActions(r.bytes(n-16, "bucket actions"))
		r.setErr(err)
		if r.err != nil {
			return nil
		}
		bk.Actions = acts
		bs = append(bs, bk)
	}
	return bs
}

// GroupMod is OFPT_GROUP_MOD: command(2) type(1) pad(1) group_id(4) buckets (DELETE has
// none).
type GroupMod struct {
	Header
	Command   uint16
	GroupType uint8
	GroupID   uint32
	Buckets   []Bucket
}

func (*GroupMod) MsgType() uint8 { return TypeGroupMod }
func (m *GroupMod) appendBody(b []byte) ([]byte, error) {
	b = be.AppendUint16(b, m.Command)
	b = append(b, m.GroupType, 0)
	b = be.AppendUint32(b, m.GroupID)
	return appendBuckets(b, m.Buckets)
}
func (m *GroupMod) decodeBody(r *reader) {
	m.Command = r.u16("command")
	m.GroupType = r.u8("type")
	r.skip(1, "pad")
	m.GroupID = r.u32("group_id")
	m.Buckets = decodeBuckets(r)
}
func (m *GroupMod) MarshalBinary() ([]byte, error) { return marshalMsg(m) }
func (m *GroupMod) UnmarshalBinary(b []byte) error { return unmarshalMsg(m, b) }
