package openflow13

import "fmt"

// Action types (ofp_action_type).
const (
	OFPATOutput       uint16 = 0
	OFPATCopyTTLOut   uint16 = 11
	OFPATCopyTTLIn    uint16 = 12
	OFPATSetMPLSTTL   uint16 = 15
	OFPATDecMPLSTTL   uint16 = 16
	OFPATPushVLAN     uint16 = 17
	OFPATPopVLAN      uint16 = 18
	OFPATPushMPLS     uint16 = 19
	OFPATPopMPLS      uint16 = 20
	OFPATSetQueue     uint16 = 21
	OFPATGroup        uint16 = 22
	OFPATSetNwTTL     uint16 = 23
	OFPATDecNwTTL     uint16 = 24
	OFPATSetField     uint16 = 25
	OFPATPushPBB      uint16 = 26
	OFPATPopPBB       uint16 = 27
	OFPATExperimenter uint16 = 0xffff
)

// Reserved port numbers (ofp_port_no).
const (
	OFPPMax        uint32 = 0xffffff00
	OFPPInPort     uint32 = 0xfffffff8
	OFPPTable      uint32 = 0xfffffff9
	OFPPNormal     uint32 = 0xfffffffa
	OFPPFlood      uint32 = 0xfffffffb
	OFPPAll        uint32 = 0xfffffffc
	OFPPController uint32 = 0xfffffffd
	OFPPLocal      uint32 = 0xfffffffe
	OFPPAny        uint32 = 0xffffffff
)

// Group and buffer constants.
const (
	OFPGMax        uint32 = 0xffffff00
	OFPGAll        uint32 = 0xfffffffc
	OFPGAny        uint32 = 0xffffffff
	OFPNoBuffer    uint32 = 0xffffffff
	OFPCMLNoBuffer uint16 = 0xffff // max_len: send the whole packet to the controller
)

// Action is one OpenFlow action. The concrete types are the Action* structs below;
// anything else decodes to *ActionUnknown.
type Action interface {
	// ActionType is the ofp_action_type code.
	ActionType() uint16
	// appendBody appends everything after the 4-byte type/len header, unpadded.
	appendBody(b []byte) ([]byte, error)
	// String renders the action in ovs-ofctl syntax.
	String() string
}

// ActionOutput sends the packet to Port; MaxLen matters only for OFPP_CONTROLLER.
type ActionOutput struct {
	Port   uint32
	MaxLen uint16
}

// ActionCopyTTLOut, ActionCopyTTLIn, ActionDecMPLSTTL, ActionPopVLAN, ActionDecNwTTL,
// ActionPopPBB carry no arguments (4 bytes of padding on the wire).
type (
	ActionCopyTTLOut struct{}
	ActionCopyTTLIn  struct{}
	ActionDecMPLSTTL struct{}
	ActionPopVLAN    struct{}
	ActionDecNwTTL   struct{}
	ActionPopPBB     struct{}
)

// ActionSetMPLSTTL sets the MPLS TTL.
type ActionSetMPLSTTL struct{ TTL uint8 }

// ActionSetNwTTL sets the IP TTL (OVS mod_nw_ttl).
type ActionSetNwTTL struct{ TTL uint8 }

// ActionPushVLAN pushes an 802.1Q header with EtherType (0x8100 or 0x88a8).
type ActionPushVLAN struct{ EtherType uint16 }

// ActionPushMPLS pushes an MPLS label with EtherType (0x8847/0x8848).
type ActionPushMPLS struct{ EtherType uint16 }

// ActionPopMPLS pops the outer MPLS label; EtherType is the new payload type.
type ActionPopMPLS struct{ EtherType uint16 }

// ActionPushPBB pushes a PBB service tag.
type ActionPushPBB struct{ EtherType uint16 }

// ActionSetQueue sets the output queue.
type ActionSetQueue struct{ QueueID uint32 }

// ActionGroup sends the packet to a group.
type ActionGroup struct{ GroupID uint32 }

// ActionSetField rewrites a header field; Field is any OXM (normally unmasked).
type ActionSetField struct{ Field OXM }

// ActionUnknown keeps an action this codec does not model (including experimenter
// actions) as its type and body bytes (everything after type/len, padding included).
type ActionUnknown struct {
	Type uint16
	Body []byte
}

func (ActionOutput) ActionType() uint16     { return OFPATOutput }
func (ActionCopyTTLOut) ActionType() uint16 { return OFPATCopyTTLOut }
func (ActionCopyTTLIn) ActionType() uint16  { return OFPATCopyTTLIn }
func (ActionSetMPLSTTL) ActionType() uint16 { return OFPATSetMPLSTTL }
func (ActionDecMPLSTTL) ActionType() uint16 { return OFPATDecMPLSTTL }
func (ActionPushVLAN) ActionType() uint16   { return OFPATPushVLAN }
func (ActionPopVLAN) ActionType() uint16    { return OFPATPopVLAN }
func (ActionPushMPLS) ActionType() uint16   { return OFPATPushMPLS }
func (ActionPopMPLS) ActionType() uint16    { return OFPATPopMPLS }
func (ActionSetQueue) ActionType() uint16   { return OFPATSetQueue }
func (ActionGroup) ActionType() uint16      { return OFPATGroup }
func (ActionSetNwTTL) ActionType() uint16   { return OFPATSetNwTTL }
func (ActionDecNwTTL) ActionType() uint16   { return OFPATDecNwTTL }
func (ActionSetField) ActionType() uint16   { return OFPATSetField }
func (ActionPushPBB) ActionType() uint16    { return OFPATPushPBB }
func (ActionPopPBB) ActionType() uint16     { return OFPATPopPBB }
func (a ActionUnknown) ActionType() uint16  { return a.Type }

// Wire bodies (after type(2) len(2)); every action is padded to a multiple of 8.
func (a ActionOutput) appendBody(b []byte) ([]byte, error) {
	b = be.AppendUint32(b, a.Port)
	b = be.AppendUint16(b, a.MaxLen)
	return appendZeros(b, 6), nil
}
func (ActionCopyTTLOut) appendBody(b []byte) ([]byte, error) { return appendZeros(b, 4), nil }
func (ActionCopyTTLIn) appendBody(b []byte) ([]byte, error)  { return appendZeros(b, 4), nil }
func (ActionDecMPLSTTL) appendBody(b []byte) ([]byte, error) { return appendZeros(b, 4), nil }
func (ActionPopVLAN) appendBody(b []byte) ([]byte, error)    { return appendZeros(b, 4), nil }
func (ActionDecNwTTL) appendBody(b []byte) ([]byte, error)   { return appendZeros(b, 4), nil }
func (ActionPopPBB) appendBody(b []byte) ([]byte, error)     { return appendZeros(b, 4), nil }
func (a ActionSetMPLSTTL) appendBody(b []byte) ([]byte, error) {
	return appendZeros(append(b, a.TTL), 3), nil
}
func (a ActionSetNwTTL) appendBody(b []byte) ([]byte, error) {
	return appendZeros(append(b, a.TTL), 3), nil
}
func (a ActionPushVLAN) appendBody(b []byte) ([]byte, error) { return ethTypeBody(b, a.EtherType) }
func (a ActionPushMPLS) appendBody(b []byte) ([]byte, error) { return ethTypeBody(b, a.EtherType) }
func (a ActionPopMPLS) appendBody(b []byte) ([]byte, error)  { return ethTypeBody(b, a.EtherType) }
func (a ActionPushPBB) appendBody(b []byte) ([]byte, error)  { return ethTypeBody(b, a.EtherType) }
func (a ActionSetQueue) appendBody(b []byte) ([]byte, error) {
	return be.AppendUint32(b, a.QueueID), nil
}
func (a ActionGroup) appendBody(b []byte) ([]byte, error) { return be.AppendUint32(b, a.GroupID), nil }

// set_field: type, len, OXM TLV, zero padding to 8 (padding added by appendAction).
func (a ActionSetField) appendBody(b []byte) ([]byte, error) { return a.Field.appendTo(b) }
func (a ActionUnknown) appendBody(b []byte) ([]byte, error)  { return append(b, a.Body...), nil }

func ethTypeBody(b []byte, t uint16) ([]byte, error) {
	return appendZeros(be.AppendUint16(b, t), 2), nil
}

func appendAction(b []byte, a Action) ([]byte, error) {
	if a == nil {
		return b, fmt.Errorf("openflow13: nil action")
	}
	start := len(b)
	b = be.AppendUint16(b, a.ActionType())
	b = be.AppendUint16(b, 0)
	b, err := a.appendBody(b)
	if err != nil {
		return b, err
	}
	n := len(b) - start
	b = appendZeros(b, pad8(n)-n)
	return b, putLen16(b, start+2, len(b)-start)
}

// AppendActions appends an action list.
func AppendActions(b []byte, acts []Action) ([]byte, error) {
	var err error
	for _, a := range acts {
		if b, err = appendAction(b, a); err != nil {
			return b, err
		}
	}
	return b, nil
}

// MarshalActions encodes an action list (as found in apply-actions, buckets, packet-out).
func MarshalActions(acts []Action) ([]byte, error) { return AppendActions(nil, acts) }

// UnmarshalActions decodes a complete action list. Unknown actions become
// *ActionUnknown; an action whose length is < 8, not a multiple of 8, or beyond the
// buffer is an error.
func UnmarshalActions(b []byte) ([]Action, error) { return unmarshalActionsDepth(b, 0) }

// unmarshalActionsDepth decodes an action list nested depth levels inside ct actions.
func unmarshalActionsDepth(b []byte, depth int) ([]Action, error) {
	var acts []Action
	r := newReader(b)
	for r.left() > 0 {
		a := decodeAction(r, depth)
		if r.err != nil {
			return nil, r.err
		}
		acts = append(acts, a)
	}
	return acts, nil
}

func decodeAction(r *reader, depth int) Action {
	typ := r.u16("action type")
	n := int(r.u16("action length"))
	if r.err != nil {
		return nil
	}
	if n < 8 || n%8 != 0 {
		r.setErr(fmt.Errorf("%w: action type %d length %d", ErrBadLength, typ, n))
		return nil
	}
	body := r.bytes(n-4, "action body")
	if r.err != nil {
		return nil
	}
	br := newReader(body)
	var a Action
	switch typ {
	case OFPATOutput:
		if n != 16 {
			break
		}
		a = ActionOutput{Port: br.u32(""), MaxLen: br.u16("")}
	case OFPATCopyTTLOut:
		a = ActionCopyTTLOut{}
	case OFPATCopyTTLIn:
		a = ActionCopyTTLIn{}
	case OFPATDecMPLSTTL:
		a = ActionDecMPLSTTL{}
	case OFPATPopVLAN:
		a = ActionPopVLAN{}
	case OFPATDecNwTTL:
		a = ActionDecNwTTL{}
	case OFPATPopPBB:
		a = ActionPopPBB{}
	case OFPATSetMPLSTTL:
		a = ActionSetMPLSTTL{TTL: br.u8("")}
	case OFPATSetNwTTL:
		a = ActionSetNwTTL{TTL: br.u8("")}
	case OFPATPushVLAN:
		a = ActionPushVLAN{EtherType: br.u16("")}
	case OFPATPushMPLS:
		a = ActionPushMPLS{EtherType: br.u16("")}
	case OFPATPopMPLS:
		a = ActionPopMPLS{EtherType: br.u16("")}
	case OFPATPushPBB:
		a = ActionPushPBB{EtherType: br.u16("")}
	case OFPATSetQueue:
		a = ActionSetQueue{QueueID: br.u32("")}
	case OFPATGroup:
		a = ActionGroup{GroupID: br.u32("")}
	case OFPATExperimenter:
		if nx := decodeNicira(body, depth); nx != nil {
			return nx
		}
	case OFPATSetField:
		f := decodeOXM(br)
		// Only canonical padding (to the next multiple of 8) is accepted as typed.
		if br.err == nil && pad8(4+br.off) == n {
			a = ActionSetField{Field: f}
		}
	}
	if a == nil || (typ != OFPATSetField && n != 8 && typ != OFPATOutput) {
		a = ActionUnknown{Type: typ, Body: append([]byte(nil), body...)}
	}
	return a
}
