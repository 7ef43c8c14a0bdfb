package openflow13

import (
	"errors"
	"fmt"
	"io"
)

// Version is the OpenFlow 1.3 wire version.
const Version uint8 = 4

// HeaderLen is the size of ofp_header.
const HeaderLen = 8

// Message types (ofp_type).
const (
	TypeHello                 uint8 = 0
	TypeError                 uint8 = 1
	TypeEchoRequest           uint8 = 2
	TypeEchoReply             uint8 = 3
	TypeExperimenter          uint8 = 4
	TypeFeaturesRequest       uint8 = 5
	TypeFeaturesReply         uint8 = 6
	TypeGetConfigRequest      uint8 = 7
	TypeGetConfigReply        uint8 = 8
	TypeSetConfig             uint8 = 9
	TypePacketIn              uint8 = 10
	TypeFlowRemoved           uint8 = 11
	TypePortStatus            uint8 = 12
	TypePacketOut             uint8 = 13
	TypeFlowMod               uint8 = 14
	TypeGroupMod              uint8 = 15
	TypePortMod               uint8 = 16
	TypeTableMod              uint8 = 17
	TypeMultipartRequest      uint8 = 18
	TypeMultipartReply        uint8 = 19
	TypeBarrierRequest        uint8 = 20
	TypeBarrierReply          uint8 = 21
	TypeQueueGetConfigRequest uint8 = 22
	TypeQueueGetConfigReply   uint8 = 23
	TypeRoleRequest           uint8 = 24
	TypeRoleReply             uint8 = 25
	TypeGetAsyncRequest       uint8 = 26
	TypeGetAsyncReply         uint8 = 27
	TypeSetAsync              uint8 = 28
	TypeMeterMod              uint8 = 29
)

// Header is ofp_header: version(1) type(1) length(2, whole message) xid(4).
// On encoding, Type and Length are always computed; Version 0 means 4.
type Header struct {
	Version uint8
	Type    uint8
	Length  uint16
	Xid     uint32
}

// MsgHeader gives access to the embedded header (every message embeds Header).
func (h *Header) MsgHeader() *Header { return h }

// Message is one OpenFlow message. MarshalBinary returns the complete framed message;
// UnmarshalBinary takes one (header included).
type Message interface {
	MsgHeader() *Header
	MsgType() uint8
	MarshalBinary() ([]byte, error)
	UnmarshalBinary(b []byte) error
}

// body is implemented by every concrete message.
type body interface {
	Message
	appendBody(b []byte) ([]byte, error)
	decodeBody(r *reader)
}

func marshalMsg(m body) ([]byte, error) {
	h := m.MsgHeader()
	b := make([]byte, HeaderLen, 64)
	b, err := m.appendBody(b)
	if err != nil {
		return nil, err
	}
	ver := h.Version
	if _, raw := m.(*Unknown); ver == 0 && !raw { // Unknown keeps the version it came with
		ver = Version
	}
	b[0], b[1] = ver, m.MsgType()
	if err := putLen16(b, 2, len(b)); err != nil {
		return nil, err
	}
	be.PutUint32(b[4:], h.Xid)
	return b, nil
}

func decodeHeader(b []byte) (Header, error) {
	if len(b) < HeaderLen {
		return Header{}, fmt.Errorf("%w: %d bytes, need an 8-byte header", ErrShort, len(b))
	}
	h := Header{Version: b[0], Type: b[1], Length: be.Uint16(b[2:]), Xid: be.Uint32(b[4:])}
	if h.Length < HeaderLen {
		return h, fmt.Errorf("%w: header length %d < 8", ErrBadLength, h.Length)
	}
	return h, nil
}

func unmarshalMsg(m body, b []byte) error {
	h, err := decodeHeader(b)
	if err != nil {
		return err
	}
	if int(h.Length) != len(b) {
		return fmt.Errorf("%w: header length %d, buffer %d", ErrBadLength, h.Length, len(b))
	}
	if h.Type != m.MsgType() {
		return fmt.Errorf("openflow13: message type %d, want %d", h.Type, m.MsgType())
	}
	*m.MsgHeader() = h
	r := newReader(b[HeaderLen:])
	m.decodeBody(r)
	if r.err != nil {
		return fmt.Errorf("openflow13: %s: %w", TypeName(h.Type), r.err)
	}
	if r.left() != 0 {
		return fmt.Errorf("%w: %s: %d trailing bytes", ErrBadLength, TypeName(h.Type), r.left())
	}
	return nil
}

var newMsg = map[uint8]func() body{
	TypeHello:            func() body { return &Hello{} },
	TypeError:            func() body { return &ErrorMsg{} },
	TypeEchoRequest:      func() body { return &EchoRequest{} },
	TypeEchoReply:        func() body { return &EchoReply{} },
	TypeExperimenter:     func() body { return &Experimenter{} },
	TypeFeaturesRequest:  func() body { return &FeaturesRequest{} },
	TypeFeaturesReply:    func() body { return &FeaturesReply{} },
	TypeGetConfigRequest: func() body { return &GetConfigRequest{} },
	TypeGetConfigReply:   func() body { return &GetConfigReply{} },
	TypeSetConfig:        func() body { return &SetConfig{} },
	TypePacketIn:         func() body { return &PacketIn{} },
	TypeFlowRemoved:      func() body { return &FlowRemoved{} },
	TypePortStatus:       func() body { return &PortStatus{} },
	TypePacketOut:        func() body { return &PacketOut{} },
	TypeFlowMod:          func() body { return &FlowMod{} },
	TypeGroupMod:         func() body { return &GroupMod{} },
	TypeMeterMod:         func() body { return &MeterMod{} },
	TypeMultipartRequest: func() body { return &MultipartRequest{} },
	TypeMultipartReply:   func() body { return &MultipartReply{} },
	TypeBarrierRequest:   func() body { return &BarrierRequest{} },
	TypeBarrierReply:     func() body { return &BarrierReply{} },
	TypeRoleRequest:      func() body { return &RoleRequest{} },
	TypeRoleReply:        func() body { return &RoleReply{} },
}

// Parse decodes exactly one framed message (len(b) must equal the header length).
// Types the codec does not model, and any non-HELLO/ERROR message whose version is not
// 4, are returned as *Unknown. Parse never keeps a reference to b.
func Parse(b []byte) (Message, error) {
	h, err := decodeHeader(b)
	if err != nil {
		return nil, err
	}
	if int(h.Length) != len(b) {
		return nil, fmt.Errorf("%w: header length %d, buffer %d", ErrBadLength, h.Length, len(b))
	}
	mk, ok := newMsg[h.Type]
	if !ok || (h.Version != Version && h.Type != TypeHello && h.Type != TypeError) {
		mk = func() body { return &Unknown{Header: Header{Type: h.Type}} }
	}
	m := mk()
	if err := unmarshalMsg(m, b); err != nil {
		return nil, err
	}
	return m, nil
}

// ParseError is returned by ReadMessage when a complete frame was read but could not be
// decoded: the stream is still in sync and the caller may continue reading.
type ParseError struct {
	Header Header
	Raw    []byte // the whole frame
	Err    error
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("openflow13: cannot decode %s (xid=0x%x, %d bytes): %v",
		TypeName(e.Header.Type), e.Header.Xid, len(e.Raw), e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// MaxMessageLen is the largest possible frame (the length field is 16 bits).
const MaxMessageLen = 0xffff

// ReadFrame reads one complete framed message (header + body) from r, looping over
// partial reads. A header length < 8 is an error (the stream cannot be resynchronised).
func ReadFrame(r io.Reader) ([]byte, error) {
	var hdr [HeaderLen]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	h, err := decodeHeader(hdr[:])
	if err != nil {
		return nil, err
	}
	b := make([]byte, h.Length)
	copy(b, hdr[:])
	if _, err := io.ReadFull(r, b[HeaderLen:]); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return b, nil
}

// ReadMessage reads and decodes one message. Decoding failures come back as
// *ParseError (stream still in sync); I/O and framing failures as other errors.
func ReadMessage(r io.Reader) (Message, error) {
	b, err := ReadFrame(r)
	if err != nil {
		return nil, err
	}
	m, err := Parse(b)
	if err != nil {
		h, _ := decodeHeader(b)
		return nil, &ParseError{Header: h, Raw: b, Err: err}
	}
	return m, nil
}

// WriteMessage marshals m and writes it with one Write call.
func WriteMessage(w io.Writer, m Message) error {
	b, err := m.MarshalBinary()
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

var typeNames = []string{"HELLO", "ERROR", "ECHO_REQUEST", "ECHO_REPLY", "EXPERIMENTER",
	"FEATURES_REQUEST", "FEATURES_REPLY", "GET_CONFIG_REQUEST", "GET_CONFIG_REPLY",
	"SET_CONFIG", "PACKET_IN", "FLOW_REMOVED", "PORT_STATUS", "PACKET_OUT", "FLOW_MOD",
	"GROUP_MOD", "PORT_MOD", "TABLE_MOD", "MULTIPART_REQUEST", "MULTIPART_REPLY",
	"BARRIER_REQUEST", "BARRIER_REPLY", "QUEUE_GET_CONFIG_REQUEST",
	"QUEUE_GET_CONFIG_REPLY", "ROLE_REQUEST", "ROLE_REPLY", "GET_ASYNC_REQUEST",
	"GET_ASYNC_REPLY", "SET_ASYNC", "METER_MOD"}

// TypeName returns "OFPT_<NAME>" for a message type.
func TypeName(t uint8) string {
	if int(t) < len(typeNames) {
		return "OFPT_" + typeNames[t]
	}
	return fmt.Sprintf("OFPT_UNKNOWN_%d", t)
}
