package openflow13

import (
	"bytes"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// affinityLearn is the learn action of the service load balancer's session affinity
// (docs/services.md): remember, for 3 h, which provider a client of a VIP:port got.
func affinityLearn() ActionLearn {
	return ActionLearn{HardTimeout: 10800, Priority: 100, Cookie: 0x0c00000000000001,
		Flags: NXLearnFlagDeleteLearned, Table: 14, Specs: []LearnSpec{
			LearnMatchValue(LearnField{Header: NXMOfEthType}, 16, 0x0800),
			LearnMatchValue(LearnField{Header: NXMOfIPProto}, 8, 6),
			LearnMatchField(LearnField{Header: OXMOfMetadata, Ofs: 32}, 8),
			LearnMatchField(LearnField{Header: NXMOfIPSrc}, 32),
			LearnMatchField(LearnField{Header: NXMOfIPDst}, 32),
			LearnMatchField(LearnField{Header: NXMOfTCPDst}, 16),
			LearnLoadValue(0xc6130105, LearnField{Header: NXMReg(0)}, 32),
			LearnLoadValue(8080, LearnField{Header: NXMReg(1)}, 32),
		}}
}

const affinityLearnText = "learn(table=14,hard_timeout=10800,priority=100,delete_learned,cookie=0xc00000000000001," +
	"eth_type=0x800,nw_proto=6,OXM_OF_METADATA[32..39],NXM_OF_IP_SRC[],NXM_OF_IP_DST[],NXM_OF_TCP_DST[]," +
	"load:0xc6130105->NXM_NX_REG0[],load:0x1f90->NXM_NX_REG1[])"

func affinityFlow() *FlowMod {
	fm := NewFlowMod(15, 100, 0)
	fm.Xid = 1
	fm.Match = NewMatch(OXMEthType(0x0800), OXMIPProto(6), OXMIPv4Dst(net.ParseIP("198.19.9.9"), nil), OXMTCPDst(80),
		OXMReg(0, 0xc6130105, 0xffffffff), OXMReg(1, 8080, 0xffffffff), OXMMetadataMasked(0x100000000, 0xff00000000))
	fm.Instructions = []Instruction{apply(affinityLearn(), ActionConntrack{Flags: NXCTFlagCommit, Zone: 4097, RecircTable: 4,
		Actions: []Action{ActionNAT{Flags: NXNATFlagDst, IPv4Min: net.ParseIP("198.19.1.5"), ProtoMin: 8080}}})}
	return fm
}

// The flow as ovs-ofctl writes it (OVS 3.1).
const affinityFlowText = "table=15, priority=100,tcp,reg0=0xc6130105,reg1=0x1f90,metadata=0x100000000/0xff00000000," +
	"nw_dst=198.19.9.9,tp_dst=80 actions=" + affinityLearnText + ",ct(commit,table=4,zone=4097,nat(dst=198.19.1.5:8080))"

// TestLearnEncoding pins the bytes of the learn action: the fixed part, then each
// spec's header, source and destination, then zero padding to 8.
func TestLearnEncoding(t *testing.T) {
	b, err := MarshalActions([]Action{affinityLearn()})
	if err != nil {
		t.Fatal(err)
	}
	want := "ffff" + "0088" + "00002320" + "0010" + // experimenter, len 136, Nicira, learn
		"0000" + "2a30" + "0064" + "0c00000000000001" + "0002" + "0e" + "00" + "0000" + "0000" +
		"2010" + "0800" + "00000602" + "0000" + // eth_type=0x800: immediate, match, 16 bits
		"2008" + "0006" + "00000c01" + "0000" + // nw_proto=6: immediate, 8 bits
		"0008" + "80000408" + "0020" + "80000408" + "0020" + // metadata[32..39]
		"0020" + "00000e04" + "0000" + "00000e04" + "0000" + // ip_src
		"0020" + "00001004" + "0000" + "00001004" + "0000" + // ip_dst
		"0010" + "00001402" + "0000" + "00001402" + "0000" + // tcp_dst
		"2820" + "c6130105" + "00010004" + "0000" + // load to reg0: immediate, load, 32 bits
		"2820" + "00001f90" + "00010204" + "0000" + // load to reg1
		"00000000" // padding
	if got := hex.EncodeToString(b); got != want {
		t.Errorf("learn encoding:\n got %s\nwant %s", got, want)
	}
	if len(b)%8 != 0 {
		t.Errorf("length %d is not a multiple of 8", len(b))
	}
	if got := affinityLearn().String(); got != affinityLearnText {
		t.Errorf("String:\n got %s\nwant %s", got, affinityLearnText)
	}
	acts, err := UnmarshalActions(b)
	if err != nil || len(acts) != 1 {
		t.Fatalf("decode: %v %v", acts, err)
	}
	l, ok := acts[0].(ActionLearn)
	if !ok {
		t.Fatalf("decoded as %T", acts[0])
	}
	if l.String() != affinityLearnText || l.HardTimeout != 10800 || len(l.Specs) != 8 || l.Specs[6].Imm[0] != 0xc6 {
		t.Errorf("decoded %+v", l)
	}
}

func TestLearnFlowRender(t *testing.T) {
	if got := affinityFlow().String(); got != affinityFlowText {
		t.Errorf("flow:\n got %s\nwant %s", got, affinityFlowText)
	}
}

// TestLearnRejectsBadSpecs: specs OVS could not decode are refused when encoding.
func TestLearnRejectsBadSpecs(t *testing.T) {
	for name, s := range map[string]LearnSpec{
		"zero bits":         {Dst: LearnDstMatch, Src: LearnField{Header: NXMOfIPSrc}, DstField: LearnField{Header: NXMOfIPSrc}},
		"short immediate":   {Dst: LearnDstLoad, NBits: 32, Immediate: true, Imm: []byte{1, 2}, DstField: LearnField{Header: NXMReg(0)}},
		"output immediate":  {Dst: LearnDstOutput, NBits: 16, Immediate: true, Imm: []byte{0, 1}},
		"reserved dst":      {Dst: 3 << 11, NBits: 16, Src: LearnField{Header: NXMOfTCPDst}},
		"output with a dst": {Dst: LearnDstOutput, NBits: 16, Src: LearnField{Header: NXMReg(0)}, DstField: LearnField{Header: NXMReg(1)}},
	} {
		if _, err := MarshalActions([]Action{ActionLearn{Specs: []LearnSpec{s}}}); err == nil {
			t.Errorf("%s: encoded without error", name)
		}
	}
}

// TestLearnNonCanonicalStaysUnknown: truncated specs, a reserved header bit or junk in
// the padding keep the action as ActionUnknown, byte for byte; nothing panics.
func TestLearnNonCanonicalStaysUnknown(t *testing.T) {
	good, err := MarshalActions([]Action{affinityLearn()})
	if err != nil {
		t.Fatal(err)
	}
	mutate := map[string]func([]byte) []byte{
		"junk in padding": func(b []byte) []byte { b[len(b)-1] = 1; return b },
		"reserved bit":    func(b []byte) []byte { b[32] |= 0x80; return b },
		"pad byte":        func(b []byte) []byte { b[27] = 1; return b },
		"extra padding": func(b []byte) []byte {
			b = append(b, make([]byte, 8)...)
			b[3] += 8
			return b
		},
		"cut in a spec": func(b []byte) []byte {
			b = b[:40]
			b[3] = 40
			return b
		},
	}
	for name, m := range mutate {
		b := m(bytes.Clone(good))
		acts, err := UnmarshalActions(b)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if _, ok := acts[0].(ActionUnknown); !ok {
			t.Errorf("%s: decoded as %T", name, acts[0])
		}
		if enc, _ := MarshalActions(acts); !bytes.Equal(enc, b) {
			t.Errorf("%s: does not re-encode verbatim", name)
		}
	}
	// Every prefix of the body, as an action of that length padded out, decodes
	// without panicking.
	for n := 8; n <= len(good); n += 8 {
		b := bytes.Clone(good[:n])
		b[2], b[3] = 0, byte(n)
		_, _ = UnmarshalActions(b)
	}
}

// TestOVSDecodesLearn: ovs-ofctl reads our flow with the learn action as the text
// OVS itself prints for it.
func TestOVSDecodesLearn(t *testing.T) {
	needOVS(t)
	out := ofpPrint(t, mustMarshal(t, affinityFlow()))
	if want := ofpPrintFlowMod(affinityFlow()); !strings.Contains(out, want) {
		t.Errorf("ovs-ofctl ofp-print:\n got %s\nwant %s", out, want)
	}
	if !strings.Contains(out, affinityLearnText) {
		t.Errorf("ovs-ofctl ofp-print lacks %s:\n%s", affinityLearnText, out)
	}
}

// TestDecodeOVSLearn: ovs-ofctl encodes the flow (and a learn with an output spec and
// other options); we decode typed learn actions that re-encode to OVS's bytes.
func TestDecodeOVSLearn(t *testing.T) {
	needOVS(t)
	lines := []string{affinityFlowText,
		"table=2, priority=5,udp actions=learn(table=3,idle_timeout=60,fin_idle_timeout=5,fin_hard_timeout=9,send_flow_rem," +
			"eth_type=0x800,nw_proto=17,NXM_OF_UDP_DST[]=NXM_OF_UDP_SRC[],NXM_OF_IP_DST[0..23],output:NXM_NX_REG3[0..15])",
	}
	file := filepath.Join(t.TempDir(), "flows")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := newFakeSwitch(t, nil)
	_, msgs := fs.run(t, "--no-names", "add-flows", "SWITCH", file)
	if len(msgs) != len(lines) {
		t.Fatalf("switch got %d messages, want %d", len(msgs), len(lines))
	}
	for i, m := range msgs {
		fm, ok := m.(*FlowMod)
		if !ok {
			t.Fatalf("got %T", m)
		}
		if got := fm.String(); got != lines[i] {
			t.Errorf("decoded OVS flow mod:\n got %s\nwant %s", got, lines[i])
		}
		ap, _ := fm.Instructions[0].(InstrApplyActions)
		if len(ap.Actions) == 0 {
			t.Fatalf("no actions: %s", fm)
		}
		if _, ok := ap.Actions[0].(ActionLearn); !ok {
			t.Errorf("learn decoded as %T", ap.Actions[0])
		}
		raw, _ := MarshalActions(ap.Actions)
		enc, _ := MarshalInstructions(fm.Instructions)
		if !bytes.Contains(enc, raw) {
			t.Errorf("re-encoding differs")
		}
		if i == 0 {
			ours := affinityFlow()
			ours.Xid = fm.Xid
			if a, b := mustMarshal(t, canonFlowMod(fm)), mustMarshal(t, canonFlowMod(ours)); !bytes.Equal(a, b) {
				t.Errorf("OVS's bytes differ from ours:\novs  %x\nours %x", a, b)
			}
		}
	}
}

// moveFlow is the service load balancer's new-connection flow with session affinity.
func moveFlow() *FlowMod {
	fm := NewFlowMod(3, 100, 0)
	fm.Xid = 1
	fm.Match = NewMatch(OXMEthType(0x0800), OXMIPProto(6), OXMIPv4Dst(net.ParseIP("198.19.9.9"), nil), OXMTCPDst(80))
	fm.Instructions = []Instruction{apply(ActionRegMove{NBits: 16, Src: LearnField{Header: NXMOfTCPSrc}, Dst: LearnField{Header: NXMReg(2)}},
		ActionResubmit{InPort: OFPPInPortNX, Table: 14}), gotoT(15)}
	return fm
}

const moveFlowText = "table=3, priority=100,tcp,nw_dst=198.19.9.9,tp_dst=80 actions=move:NXM_OF_TCP_SRC[]->NXM_NX_REG2[0..15],resubmit(,14),goto_table:15"

// TestRegMove: the move action's bytes, text and round trip; a move of 0 bits is
// refused, and a body of another length stays unknown.
func TestRegMove(t *testing.T) {
	mv := ActionRegMove{NBits: 16, Src: LearnField{Header: NXMOfTCPSrc}, Dst: LearnField{Header: NXMReg(2)}}
	b, err := MarshalActions([]Action{mv})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := hex.EncodeToString(b), "ffff0018"+"00002320"+"0006"+"0010"+"0000"+"0000"+"00001202"+"00010404"; got != want {
		t.Errorf("move encoding:\n got %s\nwant %s", got, want)
	}
	if got := moveFlow().String(); got != moveFlowText {
		t.Errorf("flow:\n got %s\nwant %s", got, moveFlowText)
	}
	acts, err := UnmarshalActions(b)
	if err != nil || len(acts) != 1 || acts[0] != Action(mv) {
		t.Errorf("decoded %v %v", acts, err)
	}
	if _, err := MarshalActions([]Action{ActionRegMove{Src: mv.Src, Dst: mv.Dst}}); err == nil {
		t.Error("a move of 0 bits encoded")
	}
	long := append(bytes.Clone(b), make([]byte, 8)...)
	long[3] = 32
	if acts, err := UnmarshalActions(long); err != nil || len(acts) != 1 {
		t.Fatalf("decode: %v %v", acts, err)
	} else if _, ok := acts[0].(ActionUnknown); !ok {
		t.Errorf("a 32-byte move decoded as %T", acts[0])
	}
	zero := bytes.Clone(b)
	zero[11] = 0
	if acts, _ := UnmarshalActions(zero); len(acts) != 1 {
		t.Fatal("decode of a 0-bit move failed")
	} else if _, ok := acts[0].(ActionUnknown); !ok {
		t.Errorf("a 0-bit move decoded as %T", acts[0])
	}
}

// TestOVSAgreesOnMove: ovs-ofctl reads our move flow as its own text, and its bytes
// for that text are ours.
func TestOVSAgreesOnMove(t *testing.T) {
	needOVS(t)
	out := ofpPrint(t, mustMarshal(t, moveFlow()))
	if want := ofpPrintFlowMod(moveFlow()); !strings.Contains(out, want) {
		t.Errorf("ovs-ofctl ofp-print:\n got %s\nwant %s", out, want)
	}
	file := filepath.Join(t.TempDir(), "flows")
	if err := os.WriteFile(file, []byte(moveFlowText+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := newFakeSwitch(t, nil)
	_, msgs := fs.run(t, "--no-names", "add-flows", "SWITCH", file)
	if len(msgs) != 1 {
		t.Fatalf("switch got %d messages", len(msgs))
	}
	fm := msgs[0].(*FlowMod)
	if fm.String() != moveFlowText {
		t.Errorf("decoded OVS flow mod:\n got %s\nwant %s", fm.String(), moveFlowText)
	}
	ours := moveFlow()
	ours.Xid = fm.Xid
	if a, b := mustMarshal(t, canonFlowMod(fm)), mustMarshal(t, canonFlowMod(ours)); !bytes.Equal(a, b) {
		t.Errorf("OVS's bytes differ from ours:\novs  %x\nours %x", a, b)
	}
}
