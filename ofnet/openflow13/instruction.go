package openflow13

import "fmt"

// Instruction types (ofp_instruction_type).
const (
	OFPITGotoTable     uint16 = 1
	OFPITWriteMetadata uint16 = 2
	OFPITWriteActions  uint16 = 3
	OFPITApplyActions  uint16 = 4
	OFPITClearActions  uint16 = 5
	OFPITMeter         uint16 = 6
	OFPITExperimenter  uint16 = 0xffff
)

// Instruction is one flow instruction; concrete types are the Instr* structs.
type Instruction interface {
	InstructionType() uint16
	appendBody(b []byte) ([]byte, error) // after type(2) len(2)
	String() string
}

// InstrGotoTable: type, len 8, table id, 3 pad.
type InstrGotoTable struct{ TableID uint8 }

// InstrWriteMetadata: type, len 24, 4 pad, metadata(8), mask(8).
type InstrWriteMetadata struct{ Metadata, Mask uint64 }

// InstrApplyActions: type, len 8+actions, 4 pad, actions.
type InstrApplyActions struct{ Actions []Action }

// InstrWriteActions adds actions to the action set (same layout as apply-actions).
type InstrWriteActions struct{ Actions []Action }

// InstrClearActions clears the action set (len 8, 4 pad).
type InstrClearActions struct{}

// InstrMeter: type, len 8, meter id.
type InstrMeter struct{ MeterID uint32 }

// InstrUnknown keeps any other instruction (including experimenter) as raw body bytes.
type InstrUnknown struct {
	Type uint16
	Body []byte
}

func (InstrGotoTable) InstructionType() uint16     { return OFPITGotoTable }
func (InstrWriteMetadata) InstructionType() uint16 { return OFPITWriteMetadata }
func (InstrApplyActions) InstructionType() uint16  { return OFPITApplyActions }
func (InstrWriteActions) InstructionType() uint16  { return OFPITWriteActions }
func (InstrClearActions) InstructionType() uint16  { return OFPITClearActions }
func (InstrMeter) InstructionType() uint16         { return OFPITMeter }
func (i InstrUnknown) InstructionType() uint16     { return i.Type }

func (i InstrGotoTable) appendBody(b []byte) ([]byte, error) {
	return appendZeros(append(b, i.TableID), 3), nil
}
func (i InstrWriteMetadata) appendBody(b []byte) ([]byte, error) {
	b = appendZeros(b, 4)
	return be.AppendUint64(be.AppendUint64(b, i.Metadata), i.Mask), nil
}
func (i InstrApplyActions) appendBody(b []byte) ([]byte, error) {
	return AppendActions(appendZeros(b, 4), i.Actions)
}
func (i InstrWriteActions) appendBody(b []byte) ([]byte, error) {
	return AppendActions(appendZeros(b, 4), i.Actions)
}
func (InstrClearActions) appendBody(b []byte) ([]byte, error) { return appendZeros(b, 4), nil }
func (i InstrMeter) appendBody(b []byte) ([]byte, error)      { return be.AppendUint32(b, i.MeterID), nil }
func (i InstrUnknown) appendBody(b []byte) ([]byte, error)    { return append(b, i.Body...), nil }

// AppendInstructions appends an instruction list in the order given.
func AppendInstructions(b []byte, ins []Instruction) ([]byte, error) {
	for _, in := range ins {
		if in == nil {
			return b, fmt.Errorf("openflow13: nil instruction")
		}
		start := len(b)
		b = be.AppendUint16(b, in.InstructionType())
		b = be.AppendUint16(b, 0)
		var err error
		if b, err = in.appendBody(b); err != nil {
			return b, err
		}
		n := len(b) - start
		b = appendZeros(b, pad8(n)-n)
		if err := putLen16(b, start+2, len(b)-start); err != nil {
			return b, err
		}
	}
	return b, nil
}

// MarshalInstructions encodes an instruction list.
func MarshalInstructions(ins []Instruction) ([]byte, error) { return AppendInstructions(nil, ins) }

// UnmarshalInstructions decodes a complete instruction list; unknown types become
// InstrUnknown.
func UnmarshalInstructions(b []byte) ([]Instruction, error) {
	var ins []Instruction
	r := newReader(b)
	for r.left() > 0 {
		in := decodeInstruction(r)
		if r.err != nil {
			return nil, r.err
		}
		ins = append(ins, in)
	}
	return ins, nil
}

func decodeInstruction(r *reader) Instruction {
	typ := r.u16("instruction type")
	n := int(r.u16("instruction length"))
	if r.err != nil {
		return nil
	}
	if n < 8 || n%8 != 0 {
		r.setErr(fmt.Errorf("%w: instruction type %d length %d", ErrBadLength, typ, n))
		return nil
	}
	body := r.bytes(n-4, "instruction body")
	if r.err != nil {
		return nil
	}
	switch {
	case typ == OFPITGotoTable && n == 8:
		return InstrGotoTable{TableID: body[0]}
	case typ == OFPITWriteMetadata && n == 24:
		return InstrWriteMetadata{Metadata: be.Uint64(body[4:]), Mask: be.Uint64(body[12:])}
	case typ == OFPITApplyActions || typ == OFPITWriteActions:
		acts, err := UnmarshalActions(body[4:])
		if err != nil {
			r.setErr(err)
			return nil
		}
		if typ == OFPITApplyActions {
			return InstrApplyActions{Actions: acts}
		}
		return InstrWriteActions{Actions: acts}
	case typ == OFPITClearActions && n == 8:
		return InstrClearActions{}
	case typ == OFPITMeter && n == 8:
		return InstrMeter{MeterID: be.Uint32(body)}
	}
	return InstrUnknown{Type: typ, Body: append([]byte(nil), body...)}
}
