package openflow13

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// TestRoundTrip: every sample message encodes, parses back to an equal value and
// re-encodes to the same bytes.
func TestRoundTrip(t *testing.T) {
	for i, m := range sampleMessages() {
		t.Run(fmt.Sprintf("%d_%s", i, TypeName(m.MsgType())), func(t *testing.T) {
			b := mustMarshal(t, m)
			if int(be.Uint16(b[2:])) != len(b) || b[1] != m.MsgType() {
				t.Fatalf("bad header %x", b[:8])
			}
			got, err := Parse(b)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			want := m
			*want.MsgHeader() = *got.MsgHeader() // Parse fills version/type/length
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Parse mismatch:\n got %#v\nwant %#v", got, want)
			}
			if b2 := mustMarshal(t, got); !bytes.Equal(b, b2) {
				t.Errorf("re-encode differs:\n%x\n%x", b, b2)
			}
			// The typed UnmarshalBinary agrees with Parse.
			fresh := reflect.New(reflect.TypeOf(m).Elem()).Interface().(Message)
			if err := fresh.UnmarshalBinary(b); err != nil || !reflect.DeepEqual(fresh, got) {
				t.Errorf("UnmarshalBinary: %v", err)
			}
			// Every strict prefix fails cleanly.
			for n := 0; n < len(b); n++ {
				if _, err := Parse(b[:n]); err == nil {
					t.Fatalf("Parse of %d-byte prefix succeeded", n)
				}
			}
		})
	}
}

// Wire layouts fixed by docs/dataplane.md §2 and §7.
func TestGoldenBytes(t *testing.T) {
	hello := NewHello(1, 4)
	hello.Xid = 2
	del := NewFlowDeleteByCookie(3, 0x2a)
	del.Priority = 100
	pi := &PacketIn{BufferID: OFPNoBuffer, Reason: 1, TableID: 3, Cookie: 1, Match: NewMatch(OXMInPort(3))}
	cases := []struct {
		name string
		m    interface{ MarshalBinary() ([]byte, error) }
		hex  string
	}{
		{"hello bitmap 0x12", hello, "04000010 00000002 00010008 00000012"},
		{"empty match", Match{}, "00010004 00000000"},
		{"match in_port", NewMatch(OXMInPort(3)), "0001000c 80000004 00000003 00000000"},
		{"masked metadata", NewMatch(OXMMetadataMasked(0x100000000, 0xff00000000)),
			"00010018 80000510 00000001 00000000 000000ff 00000000"},
		{"vlan vid present", NewMatch(OXMVlanVID(10)), "0001000a 8000 0c02 100a 000000000000"},
		{"tcp_flags field 42", NewMatch(OXMTCPFlags(2, 0x12)), "0001000c 80005504 00020012 00000000"},
		{"flow delete by cookie", del, "040e0038 00000000 000000000000002a ffffffffffffffff 03 03 0000 0000 0064 ffffffff ffffffff ffffffff 0000 0000 00010004 00000000"},
		{"flood group modify", &GroupMod{Command: GroupModify, GroupID: 1, Buckets: []Bucket{NewBucket(ActionPopVLAN{}, ActionOutput{Port: 3, MaxLen: 256})}},
			"040f0038 00000000 0001 00 00 00000001 0028 0000 ffffffff ffffffff 00000000 0012 0008 00000000 0000 0010 00000003 0100 000000000000"},
		{"group delete all", &GroupMod{Command: GroupDelete, GroupID: OFPGAll}, "040f0010 00000000 0002 0000 fffffffc"},
		{"packet-in", pi, "040a002a 00000000 ffffffff 0000 01 03 0000000000000001 0001000c 80000004 00000003 00000000 0000"},
		{"features request", &FeaturesRequest{Header: Header{Xid: 9}}, "04050008 00000009"},
		{"flow stats request table 3", NewFlowStatsRequest(3, 0, 0),
			"04120038 00000000 0001 0000 00000000 03 000000 ffffffff ffffffff 00000000 0000000000000000 0000000000000000 00010004 00000000"},
	}
	for _, c := range cases {
		b, err := c.m.MarshalBinary()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		want, _ := hex.DecodeString(strings.ReplaceAll(c.hex, " ", ""))
		if !bytes.Equal(b, want) {
			t.Errorf("%s:\n got %x\nwant %x", c.name, b, want)
		}
	}
	// apply-actions: type 4, len 24 = 8 + set_field(type, len 16, 12-byte OXM: no padding)
	b, err := MarshalInstructions([]Instruction{apply(ActionSetField{OXMTunnelID(5000)})})
	want := "000400180000000000190010" + "80004c080000000000001388"
	if err != nil || hex.EncodeToString(b) != want {
		t.Errorf("set_field tun_id: %x %v", b, err)
	}
}

// TestFieldTable: every table entry builds, encodes and decodes, and constructors use
// the right lengths.
func TestFieldTable(t *testing.T) {
	for _, d := range FieldDefs() {
		v := bytes.Repeat([]byte{1}, d.Len)
		var mask []byte
		if d.Maskable {
			mask = bytes.Repeat([]byte{0xf0}, d.Len)
		}
		for _, o := range []OXM{NewOXM(d.Class, d.Field, v, nil), NewOXM(d.Class, d.Field, v, mask)} {
			o.Experimenter = d.Experimenter
			m := Match{Fields: []OXM{o}}
			b, err := m.MarshalBinary()
			if err != nil {
				t.Fatalf("%s: %v", d.Name, err)
			}
			var got Match
			if err := got.UnmarshalBinary(b); err != nil || !reflect.DeepEqual(got, m) {
				t.Errorf("%s: %v %#v", d.Name, err, got)
			}
			if got.Fields[0].Def() == nil || got.Fields[0].Def().Name != d.Name || got.String() == "" {
				t.Errorf("%s: lookup/render failed: %q", d.Name, got.String())
			}
		}
	}
	for _, o := range []OXM{OXMInPort(1), OXMMetadata(1), OXMEthDst(mustMAC("00:00:00:00:00:01")), OXMEthType(1),
		OXMVlanVID(1), OXMVlanPCP(1), OXMIPDSCP(1), OXMIPECN(1), OXMIPProto(1), OXMIPv4Src(ip("1.1.1.1"), nil),
		OXMIPv6Dst(ip("::1"), nil), OXMTCPSrc(1), OXMUDPDst(1), OXMICMPv4Type(1), OXMICMPv4Code(1), OXMARPOp(1),
		OXMARPSpa(ip("1.1.1.1"), nil), OXMARPTpa(ip("1.1.1.1"), nil), OXMTunnelID(1), OXMTCPFlags(1, 1),
		OXMTunIPv4Src(ip("1.1.1.1")), OXMTunIPv4Dst(ip("1.1.1.1")), OXMReg(3, 1, 0xff), OXMReg(15, 1, 0xffffffff)} {
		d := o.Def()
		if d == nil || len(o.Value) != d.Len || (o.HasMask && len(o.Mask) != d.Len) || (o.HasMask && !d.Maskable) {
			t.Errorf("constructor for %v builds a bad field %#v", d, o)
		}
	}
}

func TestMatchOrderAndPrereqs(t *testing.T) {
	m := NewMatch(OXMTunnelID(1), OXMMetadata(2), OXMTCPDst(80), OXMIPProto(6), OXMIPv4Dst(ip("1.2.3.4"), nil),
		OXMEthType(0x800), OXMVlanVID(3), OXMEthSrc(mustMAC("00:00:00:00:00:01")), OXMInPort(1))
	var names []string
	for _, f := range m.Fields {
		names = append(names, f.Def().Name)
	}
	want := "in_port eth_src eth_type vlan_vid ip_dst ip_proto tcp_dst metadata tun_id"
	if strings.Join(names, " ") != want {
		t.Errorf("order %v, want %s", names, want)
	}
	if err := m.CheckPrereqs(); err != nil {
		t.Error(err)
	}
	for _, bad := range []Match{
		{Fields: []OXM{OXMTCPDst(80), OXMEthType(0x800), OXMIPProto(6)}},
		{Fields: []OXM{OXMEthType(0x806), OXMIPProto(6)}},
		{Fields: []OXM{OXMInPort(1), OXMInPort(2)}},
	} {
		if err := bad.CheckPrereqs(); err == nil {
			t.Errorf("CheckPrereqs(%v) = nil", bad)
		}
	}
}

func TestErrorMsg(t *testing.T) {
	fm := flow(1, 1, nil)
	e := &ErrorMsg{Header: Header{Xid: 5}, ErrType: ErrTypeBadMatch, Code: 9, Data: mustMarshal(t, fm)}
	var err error = e
	if got := err.Error(); got != "openflow error OFPET_BAD_MATCH/OFPBMC_BAD_PREREQ (xid=0x5) for OFPT_FLOW_MOD" {
		t.Error(got)
	}
	for _, c := range []struct {
		typ, code uint16
		want      string
	}{{0, 0, "OFPHFC_INCOMPATIBLE"}, {2, 10, "OFPBAC_MATCH_INCONSISTENT"}, {5, 3, "OFPFMFC_OVERLAP"},
		{6, 8, "OFPGMFC_UNKNOWN_GROUP"}, {13, 5, "OFPTFFC_EPERM"}, {4, 99, "OFPBMC_UNKNOWN(99)"}, {77, 1, "code(1)"}} {
		if got := ErrorCodeName(c.typ, c.code); got != c.want {
			t.Errorf("ErrorCodeName(%d,%d) = %s", c.typ, c.code, got)
		}
	}
	if ErrorTypeName(0xffff) != "OFPET_EXPERIMENTER" || ErrorTypeName(4) != "OFPET_BAD_MATCH" {
		t.Error("type names")
	}
}

func TestHelloVersions(t *testing.T) {
	h := NewHello(1, 4)
	if v := h.Versions(); !bytes.Equal(v, []byte{1, 4}) || !h.SupportsVersion(4) || h.SupportsVersion(3) {
		t.Errorf("versions %v", v)
	}
	bare := &Hello{Header: Header{Version: 4}}
	if bare.Versions() != nil || !bare.SupportsVersion(4) || bare.SupportsVersion(5) {
		t.Error("bare hello")
	}
	// A bitmap element whose padding is missing (length 8 already aligned) and a
	// second unknown element.
	b, _ := hex.DecodeString("04000018000000010001000800000010" + "0007000500000000")
	m, err := Parse(b)
	if err != nil || !m.(*Hello).SupportsVersion(4) || len(m.(*Hello).Elements) != 2 {
		t.Fatalf("%v %#v", err, m)
	}
}

// Unknown things are kept raw and re-encode byte for byte.
func TestUnknownsKept(t *testing.T) {
	raw := []string{
		"041d0010000000010000000100000002",                      // METER_MOD: not modelled
		"05000008000000aa",                                      // HELLO version 5
		"0514000800000001",                                      // non-1.3 message
		"04130018000000010000000000000000" + "0000000000000000", // DESC reply raw body
		unknownFlowMod(t),
	}
	for _, h := range raw {
		b, err := hex.DecodeString(strings.ReplaceAll(h, " ", ""))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) >= 4 {
			be.PutUint16(b[2:], uint16(len(b)))
		}
		m, err := Parse(b)
		if err != nil {
			t.Errorf("Parse(%x): %v", b, err)
			continue
		}
		if b2 := mustMarshal(t, m); !bytes.Equal(b, b2) {
			t.Errorf("re-encode of %T:\n%x\n%x", m, b, b2)
		}
		_ = fmt.Sprint(m)
		if fm, ok := m.(*FlowMod); ok {
			s := fm.String()
			for _, want := range []string{"reg0=0x5", "oxm(exp", "oxm(class=0x8000,field=60)", "unknown_action(type=2989", "unknown_action(type=65535", "unknown_instruction(type=7"} {
				if !strings.Contains(s, want) {
					t.Errorf("%q lacks %q", s, want)
				}
			}
		}
	}
}

func TestMalformed(t *testing.T) {
	for _, h := range []string{
		"0400000400000001",                 // length < 8
		"040000090000000100",               // length 9 but HELLO element truncated
		"040e0008000000",                   // short header
		"0402000a0000000100",               // length says 10, buffer 9
		"04060010000000010000000000000000", // features reply too short
		"04050009000000010a",               // trailing byte on a header-only message
		"040d0018000000010000000000000000" + "0100000000000000", // packet-out actions_len 256
		"040f00100000000100000000000000010000",                  // group bucket truncated (len field 0)
		"04130018000000010001000000000000" + "0001000000000000", // flow stats entry too short
	} {
		b, _ := hex.DecodeString(h)
		if m, err := Parse(b); err == nil {
			t.Errorf("Parse(%s) = %#v, want error", h, m)
		}
	}
	var acts = [][]byte{{0, 0, 0, 4}, {0, 0, 0, 9, 0, 0, 0, 0, 0}, {0, 0, 0, 16, 0, 0, 0, 0}, {0, 25, 0, 8, 0x80, 0, 0, 200}}
	for _, a := range acts {
		if got, err := UnmarshalActions(a); err == nil && len(a)%8 != 0 {
			t.Errorf("UnmarshalActions(%x) = %v", a, got)
		}
	}
	if _, err := UnmarshalInstructions([]byte{0, 1, 0, 0}); err == nil {
		t.Error("zero-length instruction accepted")
	}
}

func TestReadMessage(t *testing.T) {
	var stream []byte
	msgs := sampleMessages()
	for _, m := range msgs {
		stream = append(stream, mustMarshal(t, m)...)
	}
	// one byte at a time
	r := iotest.OneByteReader(bytes.NewReader(stream))
	for i := range msgs {
		m, err := ReadMessage(r)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if m.MsgType() != msgs[i].MsgType() {
			t.Fatalf("message %d: type %d", i, m.MsgType())
		}
	}
	if _, err := ReadMessage(r); err != io.EOF {
		t.Errorf("at end: %v", err)
	}
	// truncated body
	if _, err := ReadMessage(bytes.NewReader(stream[:12])); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated: %v", err)
	}
	// length < 8
	if _, err := ReadMessage(bytes.NewReader([]byte{4, 0, 0, 7, 0, 0, 0, 0})); !errors.Is(err, ErrBadLength) {
		t.Errorf("short length: %v", err)
	}
	// an undecodable frame is a ParseError and the stream stays in sync
	bad := []byte{4, 6, 0, 9, 0, 0, 0, 1, 0}
	in := bytes.NewReader(append(bad, mustMarshal(t, &BarrierReply{})...))
	_, err := ReadMessage(in)
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Header.Type != TypeFeaturesReply || !bytes.Equal(pe.Raw, bad) {
		t.Fatalf("want ParseError, got %v", err)
	}
	if m, err := ReadMessage(in); err != nil || m.MsgType() != TypeBarrierReply {
		t.Errorf("after ParseError: %v %v", m, err)
	}
	var w bytes.Buffer
	if err := WriteMessage(&w, &EchoRequest{Header: Header{Xid: 3}}); err != nil || w.Len() != 8 {
		t.Error(err)
	}
}

func TestEchoReply(t *testing.T) {
	req := &EchoRequest{Header: Header{Xid: 77}, Data: []byte{1, 2}}
	rep := NewEchoReply(req)
	if rep.Xid != 77 || !bytes.Equal(rep.Data, req.Data) {
		t.Errorf("%#v", rep)
	}
}

func TestRenderExtras(t *testing.T) {
	cases := []struct {
		got, want string
	}{
		{MatchString(NewMatch(OXMVlanVIDRaw(0x1000, ptr16(0x1000))), 5), "priority=5,vlan_tci=0x1000/0x1000"},
		{MatchString(NewMatch(OXMEthType(0x800), OXMIPProto(6), OXMTCPFlags(0x12, 0xfff)), 32768), "tcp,tcp_flags=syn|ack"},
		{MatchString(NewMatch(OXMEthType(0x88cc)), 1), "priority=1,dl_type=0x88cc"},
		{MatchString(NewMatch(OXMEthType(0x800), OXMIPv4Src(ip("10.0.0.1"), []byte{255, 0, 255, 0})), 1), "priority=1,ip,nw_src=10.0.0.1/255.0.255.0"},
		{MatchString(NewMatch(OXMInPort(OFPPLocal), OXMTunnelID(0)), 1), "priority=1,tun_id=0,in_port=LOCAL"},
		{ActionsString(nil), "drop"},
		{InstructionsString([]Instruction{wmd(1, ^uint64(0))}), "write_metadata:0x1"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got %s want %s", c.got, c.want)
		}
	}
}

// unknownFlowMod has an NXM reg0 field, an experimenter OXM, an unknown basic field,
// an unknown action, an experimenter action and an unknown instruction.
func unknownFlowMod(t *testing.T) string {
	fm := flow(0, 100, nil,
		apply(ActionUnknown{Type: 0xbad, Body: make([]byte, 4)}, ActionUnknown{Type: 0xffff, Body: []byte{0, 0, 0x23, 0x20, 0, 0x0f, 0, 0}}),
		InstrUnknown{Type: 7, Body: make([]byte, 4)})
	fm.Match.Fields = []OXM{OXMReg(0, 5, 0xffffffff),
		{Class: 0xffff, Field: 4, Experimenter: 0x2320, Value: []byte{1, 2, 3, 4}},
		{Class: 0x8000, Field: 60, Value: []byte{1, 2}}}
	return hex.EncodeToString(mustMarshal(t, fm))
}

func ptr16(v uint16) *uint16 { return &v }
