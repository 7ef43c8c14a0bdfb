package openflow13

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// Fuzz targets: no input may panic; whatever decodes must re-encode, and the
// re-encoding must be a fixed point (decode(encode(x)) encodes to the same bytes).

func seedMessages(f *testing.F, typ ...uint8) {
	for _, m := range sampleMessages() {
		if len(typ) > 0 && m.MsgType() != typ[0] {
			continue
		}
		f.Add(mustMarshal(f, m))
	}
}

func render(m Message) string {
	s := fmt.Sprintf("%v", m)
	switch m := m.(type) {
	case *FlowMod:
		s += m.String() + m.Match.String()
	case *PacketIn:
		s += m.Match.String()
	case *GroupMod:
		s += m.String()
	case *ErrorMsg:
		s += m.Error()
	case *Hello:
		_ = m.Versions()
	case *MultipartReply:
		for i := range m.Flows {
			s += m.Flows[i].String()
		}
		for i := range m.Groups {
			s += m.Groups[i].String()
		}
	}
	return s
}

func checkMessageFixpoint(t *testing.T, m Message) {
	enc1, err := m.MarshalBinary()
	if err != nil {
		return // e.g. a re-padded hello element exceeding 65535 bytes
	}
	m2, err := Parse(enc1)
	if err != nil {
		t.Fatalf("re-parse of %T failed: %v\n%x", m, err, enc1)
	}
	enc2, err := m2.MarshalBinary()
	if err != nil || !bytes.Equal(enc1, enc2) {
		t.Fatalf("%T not a fixed point: %v\n%x\n%x", m, err, enc1, enc2)
	}
	_ = render(m2)
}

func FuzzParse(f *testing.F) {
	seedMessages(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(b)
		if err != nil {
			return
		}
		_ = render(m)
		checkMessageFixpoint(t, m)
	})
}

func FuzzReadMessage(f *testing.F) {
	// Short streams of 2-3 messages (large seeds make the mutator crawl).
	msgs := sampleMessages()
	for i := 0; i+2 < len(msgs); i += 3 {
		var stream []byte
		for _, m := range msgs[i : i+3] {
			stream = append(stream, mustMarshal(f, m)...)
		}
		f.Add(stream)
	}
	f.Add([]byte{4, 0, 0, 7, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		for i := 0; i < 1000; i++ {
			m, err := ReadMessage(r)
			var pe *ParseError
			if errors.As(err, &pe) {
				_ = pe.Error()
				continue
			}
			if err != nil {
				return
			}
			checkMessageFixpoint(t, m)
		}
	})
}

// fuzzBody fuzzes one message type's body: the fuzzer's bytes get a valid header.
func fuzzBody(f *testing.F, typ uint8) {
	seedMessages(f, typ)
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) >= HeaderLen {
			b = append([]byte(nil), b...)
			b[0], b[1] = Version, typ
			be.PutUint16(b[2:], uint16(min(len(b), 0xffff)))
			b = b[:min(len(b), 0xffff)]
		}
		m, err := Parse(b)
		if err != nil {
			return
		}
		_ = render(m)
		checkMessageFixpoint(t, m)
	})
}

func FuzzFlowMod(f *testing.F)        { fuzzBody(f, TypeFlowMod) }
func FuzzPacketIn(f *testing.F)       { fuzzBody(f, TypePacketIn) }
func FuzzPacketOut(f *testing.F)      { fuzzBody(f, TypePacketOut) }
func FuzzGroupMod(f *testing.F)       { fuzzBody(f, TypeGroupMod) }
func FuzzMultipartReply(f *testing.F) { fuzzBody(f, TypeMultipartReply) }
func FuzzHello(f *testing.F)          { fuzzBody(f, TypeHello) }

func FuzzMatch(f *testing.F) {
	for _, m := range sampleMessages() {
		switch m := m.(type) {
		case *FlowMod:
			f.Add(mustMarshal(f, m.Match))
		case *PacketIn:
			f.Add(mustMarshal(f, m.Match))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m Match
		if err := m.UnmarshalBinary(b); err != nil {
			return
		}
		_ = m.String() + MatchString(m, 1)
		_ = m.CheckPrereqs()
		_ = NewMatch(m.Fields...)
		enc1, err := m.MarshalBinary()
		if err != nil {
			return
		}
		var m2 Match
		if err := m2.UnmarshalBinary(enc1); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if enc2, _ := m2.MarshalBinary(); !bytes.Equal(enc1, enc2) {
			t.Fatalf("not a fixed point\n%x\n%x", enc1, enc2)
		}
	})
}

func seedActions(f *testing.F) [][]Action {
	var lists [][]Action
	for _, m := range sampleMessages() {
		switch m := m.(type) {
		case *FlowMod:
			for _, in := range m.Instructions {
				if ap, ok := in.(InstrApplyActions); ok {
					lists = append(lists, ap.Actions)
				}
			}
		case *PacketOut:
			lists = append(lists, m.Actions)
		}
	}
	return lists
}

func FuzzActions(f *testing.F) {
	for _, l := range seedActions(f) {
		b, _ := MarshalActions(l)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		acts, err := UnmarshalActions(b)
		if err != nil {
			return
		}
		_ = ActionsString(acts)
		enc1, err := MarshalActions(acts)
		if err != nil {
			return
		}
		acts2, err := UnmarshalActions(enc1)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if enc2, _ := MarshalActions(acts2); !bytes.Equal(enc1, enc2) {
			t.Fatalf("not a fixed point\n%x\n%x", enc1, enc2)
		}
	})
}

func FuzzInstructions(f *testing.F) {
	for _, m := range sampleMessages() {
		if fm, ok := m.(*FlowMod); ok {
			b, _ := MarshalInstructions(fm.Instructions)
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ins, err := UnmarshalInstructions(b)
		if err != nil {
			return
		}
		_ = InstructionsString(ins)
		enc1, err := MarshalInstructions(ins)
		if err != nil {
			return
		}
		ins2, err := UnmarshalInstructions(enc1)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if enc2, _ := MarshalInstructions(ins2); !bytes.Equal(enc1, enc2) {
			t.Fatalf("not a fixed point\n%x\n%x", enc1, enc2)
		}
	})
}
