package openflow13

import (
	"fmt"
	"strings"
)

// Error types (ofp_error_type).
const (
	ErrTypeHelloFailed         uint16 = 0
	ErrTypeBadRequest          uint16 = 1
	ErrTypeBadAction           uint16 = 2
	ErrTypeBadInstruction      uint16 = 3
	ErrTypeBadMatch            uint16 = 4
	ErrTypeFlowModFailed       uint16 = 5
	ErrTypeGroupModFailed      uint16 = 6
	ErrTypePortModFailed       uint16 = 7
	ErrTypeTableModFailed      uint16 = 8
	ErrTypeQueueOpFailed       uint16 = 9
	ErrTypeSwitchConfigFailed  uint16 = 10
	ErrTypeRoleRequestFailed   uint16 = 11
	ErrTypeMeterModFailed      uint16 = 12
	ErrTypeTableFeaturesFailed uint16 = 13
	ErrTypeExperimenter        uint16 = 0xffff
)

// errorNames: type name, code prefix, code names (OF1.3.5 §7.4.4).
var errorNames = map[uint16]struct {
	typ, prefix string
	codes       []string
}{
	0: {"HELLO_FAILED", "OFPHFC_", []string{"INCOMPATIBLE", "EPERM"}},
	1: {"BAD_REQUEST", "OFPBRC_", []string{"BAD_VERSION", "BAD_TYPE", "BAD_MULTIPART",
		"BAD_EXPERIMENTER", "BAD_EXP_TYPE", "EPERM", "BAD_LEN", "BUFFER_EMPTY",
		"BUFFER_UNKNOWN", "BAD_TABLE_ID", "IS_SLAVE", "BAD_PORT", "BAD_PACKET",
		"MULTIPART_BUFFER_OVERFLOW"}},
	2: {"BAD_ACTION", "OFPBAC_", []string{"BAD_TYPE", "BAD_LEN", "BAD_EXPERIMENTER",
		"BAD_EXP_TYPE", "BAD_OUT_PORT", "BAD_ARGUMENT", "EPERM", "TOO_MANY", "BAD_QUEUE",
		"BAD_OUT_GROUP", "MATCH_INCONSISTENT", "UNSUPPORTED_ORDER", "BAD_TAG",
		"BAD_SET_TYPE", "BAD_SET_LEN", "BAD_SET_ARGUMENT"}},
	3: {"BAD_INSTRUCTION", "OFPBIC_", []string{"UNKNOWN_INST", "UNSUP_INST", "BAD_TABLE_ID",
		"UNSUP_METADATA", "UNSUP_METADATA_MASK", "BAD_EXPERIMENTER", "BAD_EXP_TYPE",
		"BAD_LEN", "EPERM"}},
	4: {"BAD_MATCH", "OFPBMC_", []string{"BAD_TYPE", "BAD_LEN", "BAD_TAG", "BAD_DL_ADDR_MASK",
		"BAD_NW_ADDR_MASK", "BAD_WILDCARDS", "BAD_FIELD", "BAD_VALUE", "BAD_MASK",
		"BAD_PREREQ", "DUP_FIELD", "EPERM"}},
	5: {"FLOW_MOD_FAILED", "OFPFMFC_", []string{"UNKNOWN", "TABLE_FULL", "BAD_TABLE_ID",
		"OVERLAP", "EPERM", "BAD_TIMEOUT", "BAD_COMMAND", "BAD_FLAGS"}},
	6: {"GROUP_MOD_FAILED", "OFPGMFC_", []string{"GROUP_EXISTS", "INVALID_GROUP",
		"WEIGHT_UNSUPPORTED", "OUT_OF_GROUPS", "OUT_OF_BUCKETS", "CHAINING_UNSUPPORTED",
		"WATCH_UNSUPPORTED", "LOOP", "UNKNOWN_GROUP", "CHAINED_GROUP", "BAD_TYPE",
		"BAD_COMMAND", "BAD_BUCKET", "BAD_WATCH", "EPERM"}},
	7:  {"PORT_MOD_FAILED", "OFPPMFC_", []string{"BAD_PORT", "BAD_HW_ADDR", "BAD_CONFIG", "BAD_ADVERTISE", "EPERM"}},
	8:  {"TABLE_MOD_FAILED", "OFPTMFC_", []string{"BAD_TABLE", "BAD_CONFIG", "EPERM"}},
	9:  {"QUEUE_OP_FAILED", "OFPQOFC_", []string{"BAD_PORT", "BAD_QUEUE", "EPERM"}},
	10: {"SWITCH_CONFIG_FAILED", "OFPSCFC_", []string{"BAD_FLAGS", "BAD_LEN", "EPERM"}},
	11: {"ROLE_REQUEST_FAILED", "OFPRRFC_", []string{"STALE", "UNSUP", "BAD_ROLE"}},
	12: {"METER_MOD_FAILED", "OFPMMFC_", []string{"UNKNOWN", "METER_EXISTS", "INVALID_METER",
		"UNKNOWN_METER", "BAD_COMMAND", "BAD_FLAGS", "BAD_RATE", "BAD_BURST", "BAD_BAND",
		"BAD_BAND_VALUE", "OUT_OF_METERS", "OUT_OF_BANDS"}},
	13: {"TABLE_FEATURES_FAILED", "OFPTFFC_", []string{"BAD_TABLE", "BAD_METADATA",
		"BAD_TYPE", "BAD_LEN", "BAD_ARGUMENT", "EPERM"}},
}

// ErrorTypeName returns e.g. "OFPET_BAD_MATCH".
func ErrorTypeName(t uint16) string {
	if t == ErrTypeExperimenter {
		return "OFPET_EXPERIMENTER"
	}
	if n, ok := errorNames[t]; ok {
		return "OFPET_" + n.typ
	}
	return fmt.Sprintf("OFPET_UNKNOWN(%d)", t)
}

// ErrorCodeName returns e.g. "OFPBMC_BAD_PREREQ".
func ErrorCodeName(t, code uint16) string {
	if n, ok := errorNames[t]; ok {
		if int(code) < len(n.codes) {
			return n.prefix + n.codes[code]
		}
		return fmt.Sprintf("%sUNKNOWN(%d)", n.prefix, code)
	}
	return fmt.Sprintf("code(%d)", code)
}

// ErrorMsg is OFPT_ERROR: type(2) code(2) data (at least 64 bytes of the offending
// request, by convention). It implements error.
type ErrorMsg struct {
	Header
	ErrType uint16
	Code    uint16
	Data    []byte
}

func (*ErrorMsg) MsgType() uint8 { return TypeError }
func (m *ErrorMsg) appendBody(b []byte) ([]byte, error) {
	return append(be.AppendUint16(be.AppendUint16(b, m.ErrType), m.Code), m.Data...), nil
}
func (m *ErrorMsg) decodeBody(r *reader) {
	m.ErrType = r.u16("type")
	m.Code = r.u16("code")
	m.Data = r.rest()
}
func (m *ErrorMsg) MarshalBinary() ([]byte, error) { return marshalMsg(m) }
func (m *ErrorMsg) UnmarshalBinary(b []byte) error { return unmarshalMsg(m, b) }

// FailedRequest returns the header of the request that caused the error, if Data holds
// at least one.
func (m *ErrorMsg) FailedRequest() (Header, bool) {
	if m.ErrType == ErrTypeExperimenter || m.ErrType == ErrTypeHelloFailed {
		return Header{}, false
	}
	h, err := decodeHeader(m.Data)
	return h, err == nil
}

// Error renders e.g. "openflow error OFPET_BAD_MATCH/OFPBMC_BAD_PREREQ (xid=0x5) for
// OFPT_FLOW_MOD".
func (m *ErrorMsg) Error() string {
	var s strings.Builder
	fmt.Fprintf(&s, "openflow error %s/%s (xid=0x%x)", ErrorTypeName(m.ErrType), ErrorCodeName(m.ErrType, m.Code), m.Xid)
	if m.ErrType == ErrTypeHelloFailed && len(m.Data) > 0 {
		fmt.Fprintf(&s, ": %q", strings.TrimRight(string(m.Data), "\x00"))
	} else if h, ok := m.FailedRequest(); ok {
		fmt.Fprintf(&s, " for %s", TypeName(h.Type))
	}
	return s.String()
}
