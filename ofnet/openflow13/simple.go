package openflow13

import (
	"bytes"
	"fmt"
	"net"
)

// ---- HELLO ----

// HelloElemVersionBitmap is the only defined hello element type.
const HelloElemVersionBitmap uint16 = 1

// HelloElement is one ofp_hello_elem: type(2) length(2, unpadded) data, zero padded to 8.
type HelloElement struct {
	Type uint16
	Data []byte // for a version bitmap: a sequence of 32-bit bitmaps
}

// Hello is OFPT_HELLO. A bare hello has no elements.
type Hello struct {
	Header
	Elements []HelloElement
}

// NewHello returns a HELLO with one version-bitmap element listing versions (e.g.
// NewHello(1, 4) gives bitmap 0x12, as docs/dataplane.md §2.1 requires). With no versions it
// is a bare 8-byte HELLO.
func NewHello(versions ...uint8) *Hello {
	h := &Hello{Header: Header{Version: Version}}
	if len(versions) == 0 {
		return h
	}
	maxv := uint8(0)
	for _, v := range versions {
		maxv = max(maxv, v)
	}
	words := make([]uint32, int(maxv)/32+1)
	for _, v := range versions {
		words[v/32] |= 1 << (v % 32)
	}
	var data []byte
	for _, w := range words {
		data = be.AppendUint32(data, w)
	}
	h.Elements = []HelloElement{{Type: HelloElemVersionBitmap, Data: data}}
	return h
}

// Versions returns the versions announced in the version bitmap, or nil when the hello
// has no bitmap (then the header version is the peer's highest version).
func (m *Hello) Versions() []uint8 {
	var vs []uint8
	for _, e := range m.Elements {
		if e.Type != HelloElemVersionBitmap {
			continue
		}
		for i := 0; i+4 <= len(e.Data); i += 4 {
			w := be.Uint32(e.Data[i:])
			for bit := 0; bit < 32; bit++ {
				if w&(1<<bit) != 0 && i*8+bit < 256 {
					vs = append(vs, uint8(i*8+bit))
				}
			}
		}
	}
	return vs
}

// SupportsVersion reports whether the peer announced version v (bitmap, or header
// version >= v when there is no bitmap).
func (m *Hello) SupportsVersion(v uint8) bool {
	vs := m.Versions()
	if vs == nil {
		return m.Version >= v
	}
	return bytes.IndexByte(vs, v) >= 0
}

func (*Hello) MsgType() uint8 { return TypeHello }

func (m *Hello) appendBody(b []byte) ([]byte, error) {
	for _, e := range m.Elements {
		start := len(b)
		b = be.AppendUint16(b, e.Type)
		b = be.AppendUint16(b, 0)
		b = append(b, e.Data...)
		n := len(b) - start
		if err := putLen16(b, start+2, n); err != nil {
			return b, err
		}
		b = appendZeros(b, pad8(n)-n)
	}
	return b, nil
}

func (m *Hello) decodeBody(r *reader) {
	m.Elements = nil
	for r.left() > 0 {
		t := r.u16("hello element type")
		n := int(r.u16("hello element length"))
		if r.err == nil && n < 4 {
			r.setErr(fmt.Errorf("%w: hello element length %d", ErrBadLength, n))
		}
		data := r.copyBytes(n-4, "hello element")
		// The last element's padding may be missing in the wild; tolerate that.
		r.skip(min(pad8(n)-n, r.left()), "hello element padding")
		if r.err != nil {
			return
		}
		m.Elements = append(m.Elements, HelloElement{Type: t, Data: data})
	}
}

func (m *Hello) MarshalBinary() ([]byte, error) { return marshalMsg(m) }
func (m *Hello) UnmarshalBinary(b []byte) error { return unmarshalMsg(m, b) }

// ---- ECHO, BARRIER, FEATURES_REQUEST, GET_CONFIG_REQUEST ----

// EchoRequest is OFPT_ECHO_REQUEST with an arbitrary payload.
type EchoRequest struct {
	Header
	Data []byte
}

// EchoReply is OFPT_ECHO_REPLY; answer a request with the same Xid and Data.
type EchoReply struct {
	Header
	Data []byte
}

func (*EchoRequest) MsgType() uint8                        { return TypeEchoRequest }
func (m *EchoRequest) appendBody(b []byte) ([]byte, error) { return append(b, m.Data...), nil }
func (m *EchoRequest) decodeBody(r *reader)                { m.Data = r.rest() }
func (m *EchoRequest) MarshalBinary() ([]byte, error)      { return marshalMsg(m) }
func (m *EchoRequest) UnmarshalBinary(b []byte) error      { return unmarshalMsg(m, b) }
func (*EchoReply) MsgType() uint8                          { return TypeEchoReply }
func (m *EchoReply) appendBody(b []byte) ([]byte, error)   { return append(b, m.Data...), nil }
func (m *EchoReply) decodeBody(r *reader)                  { m.Data = r.rest() }
func (m *EchoReply) MarshalBinary() ([]byte, error)        { return marshalMsg(m) }
func (m *EchoReply) UnmarshalBinary(b []byte) error        { return unmarshalMsg(m, b) }

// NewEchoReply answers req with its xid and payload.
func NewEchoReply(req *EchoRequest) *EchoReply {
	return &EchoReply{Header: Header{Xid: req.Xid}, Data: append([]byte(nil), req.Data...)}
}

// headerOnly implements the body-less messages.
type headerOnly struct{}

func (headerOnly) appendBody(b []byte) ([]byte, error) { return b, nil }
func (headerOnly) decodeBody(*reader)                  {}

// BarrierRequest is OFPT_BARRIER_REQUEST (header only).
type BarrierRequest struct {
	Header
	headerOnly
}

// BarrierReply is OFPT_BARRIER_REPLY (header only).
type BarrierReply struct {
	Header
	headerOnly
}

// FeaturesRequest is OFPT_FEATURES_REQUEST (header only).
type FeaturesRequest struct {
	Header
	headerOnly
}

// GetConfigRequest is OFPT_GET_CONFIG_REQUEST (header only).
type GetConfigRequest struct {
	Header
	headerOnly
}

func (*BarrierRequest) MsgType() uint8                     { return TypeBarrierRequest }
func (m *BarrierRequest) MarshalBinary() ([]byte, error)   { return marshalMsg(m) }
func (m *BarrierRequest) UnmarshalBinary(b []byte) error   { return unmarshalMsg(m, b) }
func (*BarrierReply) MsgType() uint8                       { return TypeBarrierReply }
func (m *BarrierReply) MarshalBinary() ([]byte, error)     { return marshalMsg(m) }
func (m *BarrierReply) UnmarshalBinary(b []byte) error     { return unmarshalMsg(m, b) }
func (*FeaturesRequest) MsgType() uint8                    { return TypeFeaturesRequest }
func (m *FeaturesRequest) MarshalBinary() ([]byte, error)  { return marshalMsg(m) }
func (m *FeaturesRequest) UnmarshalBinary(b []byte) error  { return unmarshalMsg(m, b) }
func (*GetConfigRequest) MsgType() uint8                   { return TypeGetConfigRequest }
func (m *GetConfigRequest) MarshalBinary() ([]byte, error) { return marshalMsg(m) }
func (m *GetConfigRequest) UnmarshalBinary(b []byte) error { return unmarshalMsg(m, b) }

// ---- FEATURES_REPLY ----

// FeaturesReply is OFPT_FEATURES_REPLY: datapath_id(8) n_buffers(4) n_tables(1)
// auxiliary_id(1) pad(2) capabilities(4) reserved(4).
type FeaturesReply struct {
	Header
	DatapathID   uint64
	NBuffers     uint32
	NTables      uint8
	AuxiliaryID  uint8
	Capabilities uint32
	Reserved     uint32
}

func (*FeaturesReply) MsgType() uint8 { return TypeFeaturesReply }
func (m *FeaturesReply) appendBody(b []byte) ([]byte, error) {
	b = be.AppendUint64(b, m.DatapathID)
	b = be.AppendUint32(b, m.NBuffers)
	b = append(b, m.NTables, m.AuxiliaryID, 0, 0)
	b = be.AppendUint32(b, m.Capabilities)
	return be.AppendUint32(b, m.Reserved), nil
}
func (m *FeaturesReply) decodeBody(r *reader) {
	m.DatapathID = r.u64("datapath_id")
	m.NBuffers = r.u32("n_buffers")
	m.NTables = r.u8("n_tables")
	m.AuxiliaryID = r.u8("auxiliary_id")
	r.skip(2, "pad")
	m.Capabilities = r.u32("capabilities")
	m.Reserved = r.u32("reserved")
}
func (m *FeaturesReply) MarshalBinary() ([]byte, error) { return marshalMsg(m) }
func (m *FeaturesReply) UnmarshalBinary(b []byte) error { return unmarshalMsg(m, b) }

// ---- GET_CONFIG_REPLY / SET_CONFIG ----

// SwitchConfig is the body of GET_CONFIG_REPLY and SET_CONFIG: flags(2) miss_send_len(2).
type SwitchConfig struct {
	Flags       uint16
	MissSendLen uint16
}

func (c *SwitchConfig) appendBody(b []byte) ([]byte, error) {
	return be.AppendUint16(be.AppendUint16(b, c.Flags), c.MissSendLen), nil
}
func (c *SwitchConfig) decodeBody(r *reader) {
	c.Flags = r.u16("flags")
	c.MissSendLen = r.u16("miss_send_len")
}

// GetConfigReply is OFPT_GET_CONFIG_REPLY.
type GetConfigReply struct {
	Header
	SwitchConfig
}

// SetConfig is OFPT_SET_CONFIG.
type SetConfig struct {
	Header
	SwitchConfig
}

func (*GetConfigReply) MsgType() uint8                   { return TypeGetConfigReply }
func (m *GetConfigReply) MarshalBinary() ([]byte, error) { return marshalMsg(m) }
func (m *GetConfigReply) UnmarshalBinary(b []byte) error { return unmarshalMsg(m, b) }
func (*SetConfig) MsgType() uint8                        { return TypeSetConfig }
func (m *SetConfig) MarshalBinary() ([]byte, error)      { return marshalMsg(m) }
func (m *SetConfig) UnmarshalBinary(b []byte) error      { return unmarshalMsg(m, b) }

// ---- ROLE ----

// Controller roles.
const (
	RoleNoChange uint32 = 0
	RoleEqual    uint32 = 1
	RoleMaster   uint32 = 2
	RoleSlave    uint32 = 3
)

// RoleBody is role(4) pad(4) generation_id(8).
type RoleBody struct {
	Role         uint32
	GenerationID uint64
}

func (c *RoleBody) appendBody(b []byte) ([]byte, error) {
	return be.AppendUint64(appendZeros(be.AppendUint32(b, c.Role), 4), c.GenerationID), nil
}
func (c *RoleBody) decodeBody(r *reader) {
	c.Role = r.u32("role")
	r.skip(4, "pad")
	c.GenerationID = r.u64("generation_id")
}

// RoleRequest is OFPT_ROLE_REQUEST.
type RoleRequest struct {
	Header
	RoleBody
}

// RoleReply is OFPT_ROLE_REPLY.
type RoleReply struct {
	Header
	RoleBody
}

func (*RoleRequest) MsgType() uint8                   { return TypeRoleRequest }
func (m *RoleRequest) MarshalBinary() ([]byte, error) { return marshalMsg(m) }
func (m *RoleRequest) UnmarshalBinary(b []byte) error { return unmarshalMsg(m, b) }
func (*RoleReply) MsgType() uint8                     { return TypeRoleReply }
func (m *RoleReply) MarshalBinary() ([]byte, error)   { return marshalMsg(m) }
func (m *RoleReply) UnmarshalBinary(b []byte) error   { return unmarshalMsg(m, b) }

// ---- EXPERIMENTER, Unknown ----

// Experimenter is OFPT_EXPERIMENTER: experimenter(4) exp_type(4) data. No vendor message
// is interpreted (docs/dataplane.md §2.9 uses none).
type Experimenter struct {
	Header
	Experimenter uint32
	ExpType      uint32
	Data         []byte
}

func (*Experimenter) MsgType() uint8 { return TypeExperimenter }
func (m *Experimenter) appendBody(b []byte) ([]byte, error) {
	return append(be.AppendUint32(be.AppendUint32(b, m.Experimenter), m.ExpType), m.Data...), nil
}
func (m *Experimenter) decodeBody(r *reader) {
	m.Experimenter = r.u32("experimenter")
	m.ExpType = r.u32("exp_type")
	m.Data = r.rest()
}
func (m *Experimenter) MarshalBinary() ([]byte, error) { return marshalMsg(m) }
func (m *Experimenter) UnmarshalBinary(b []byte) error { return unmarshalMsg(m, b) }

// Unknown keeps a message the codec does not model (or of another version) verbatim;
// its Version is written as is (0 stays 0).
type Unknown struct {
	Header
	Body []byte
}

func (m *Unknown) MsgType() uint8                      { return m.Type }
func (m *Unknown) appendBody(b []byte) ([]byte, error) { return append(b, m.Body...), nil }
func (m *Unknown) decodeBody(r *reader)                { m.Body = r.rest() }
func (m *Unknown) MarshalBinary() ([]byte, error)      { return marshalMsg(m) }
func (m *Unknown) UnmarshalBinary(b []byte) error {
	if len(b) >= 2 {
		m.Type = b[1]
	}
	return unmarshalMsg(m, b)
}

// ---- PORT_STATUS and ofp_port ----

// Port is ofp_port (64 bytes): port_no(4) pad(4) hw_addr(6) pad(2) name(16) config(4)
// state(4) curr(4) advertised(4) supported(4) peer(4) curr_speed(4) max_speed(4).
type Port struct {
	PortNo     uint32
	HWAddr     net.HardwareAddr
	Name       string
	Config     uint32
	State      uint32
	Curr       uint32
	Advertised uint32
	Supported  uint32
	Peer       uint32
	CurrSpeed  uint32
	MaxSpeed   uint32
}

// PortLen is the size of ofp_port.
const PortLen = 64

func (p *Port) appendTo(b []byte) []byte {
	b = appendZeros(be.AppendUint32(b, p.PortNo), 4)
	b = append(b, macBytes(p.HWAddr)...)
	b = appendZeros(b, 2)
	var name [16]byte
	copy(name[:15], p.Name) // NUL-terminated
	b = append(b, name[:]...)
	for _, v := range []uint32{p.Config, p.State, p.Curr, p.Advertised, p.Supported, p.Peer, p.CurrSpeed, p.MaxSpeed} {
		b = be.AppendUint32(b, v)
	}
	return b
}

func (p *Port) decode(r *reader) {
	p.PortNo = r.u32("port_no")
	r.skip(4, "pad")
	p.HWAddr = net.HardwareAddr(r.copyBytes(6, "hw_addr"))
	r.skip(2, "pad")
	name := r.bytes(16, "name")
	if i := bytes.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	p.Name = string(name)
	for _, v := range []*uint32{&p.Config, &p.State, &p.Curr, &p.Advertised, &p.Supported, &p.Peer, &p.CurrSpeed, &p.MaxSpeed} {
		*v = r.u32("port field")
	}
}

// Port status reasons.
const (
	PortReasonAdd    uint8 = 0
	PortReasonDelete uint8 = 1
	PortReasonModify uint8 = 2
)

// PortStatus is OFPT_PORT_STATUS: reason(1) pad(7) ofp_port.
type PortStatus struct {
	Header
	Reason uint8
	Desc   Port
}

func (*PortStatus) MsgType() uint8 { return TypePortStatus }
func (m *PortStatus) appendBody(b []byte) ([]byte, error) {
	return m.Desc.appendTo(appendZeros(append(b, m.Reason), 7)), nil
}
func (m *PortStatus) decodeBody(r *reader) {
	m.Reason = r.u8("reason")
	r.skip(7, "pad")
	m.Desc.decode(r)
}
func (m *PortStatus) MarshalBinary() ([]byte, error) { return marshalMsg(m) }
func (m *PortStatus) UnmarshalBinary(b []byte) error { return unmarshalMsg(m, b) }
