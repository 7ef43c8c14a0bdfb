package packet

import (
	"bytes"
	"errors"
	"net"
	"reflect"
	"testing"
)

func TestChecksumKnownAnswers(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want uint16
	}{
		{"RFC 1071 §3 example", "0001 f203 f4f5 f6f7", 0x220d},
		{"odd length pads with zero", "0001 f203 f4f5 f6", 0x2304},
		{"ipv4 header, checksum field zero", "4500 0073 0000 4000 4011 0000 c0a8 0001 c0a8 00c7", 0xb861},
		{"ipv4 header with its checksum", "4500 0073 0000 4000 4011 b861 c0a8 0001 c0a8 00c7", 0},
		{"empty", "", 0xffff},
		{"carry folds twice", "ffff ffff ffff 0001", 0xfffe},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Checksum(unhex(t, tt.in)); got != tt.want {
				t.Fatalf("Checksum = %#04x, want %#04x", got, tt.want)
			}
		})
	}
}

func TestParseIPv4(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		trailing int
		want     IPv4
	}{
		{"udp", hexIPv4UDP, 0, IPv4{Version: 4, IHL: 5, TotalLen: 32, ID: 0x1c46, Flags: IPv4DontFragment,
			TTL: 64, Protocol: ProtoUDP, Checksum: 0x925f, Src: ipA, Dst: ipGW,
			Payload: unhex(t, "9c40 0035 000c 0000 646e7371")}},
		{"options skipped by IHL", hexIPv4ICMPOpt, 0, IPv4{Version: 4, IHL: 6, TotalLen: 36, ID: 1,
			TTL: 64, Protocol: ProtoICMP, Checksum: 0x59ac, Src: ipA, Dst: ipGW,
			Options: unhex(t, "94040000"), Payload: unhex(t, "0800 2104 1234 0001 61626364")}},
		{"ethernet padding dropped by total length", hexIPv4UDP + "000000000000", 6, IPv4{Version: 4, IHL: 5,
			TotalLen: 32, ID: 0x1c46, Flags: IPv4DontFragment, TTL: 64, Protocol: ProtoUDP, Checksum: 0x925f,
			Src: ipA, Dst: ipGW, Payload: unhex(t, "9c40 0035 000c 0000 646e7371")}},
		// Second fragment, MF set, offset 185 (1480 bytes), dscp 46 ecn 1; checksum deliberately wrong.
		{"fragment fields", "45b9 0018 abcd 20b9 0111 0000 c6120002 c6120003 deadbeef", 0, IPv4{
			Version: 4, IHL: 5, TOS: 0xb9, TotalLen: 24, ID: 0xabcd, Flags: IPv4MoreFragments, FragOff: 185,
			TTL: 1, Protocol: ProtoUDP, Src: ipA, Dst: ipB, Payload: unhex(t, "deadbeef")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := unhex(t, tt.in)
			got, err := ParseIPv4(in)
			if err != nil {
				t.Fatalf("ParseIPv4: %v", err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", *got, tt.want)
			}
			out := got.Marshal()
			pkt := in[:len(in)-tt.trailing]
			if IPv4ChecksumOK(pkt) {
				if !bytes.Equal(out, pkt) {
					t.Errorf("round trip:\n got %x\nwant %x", out, pkt)
				}
			} else if !bytes.Equal(out[:10], pkt[:10]) || !bytes.Equal(out[12:], pkt[12:]) || !IPv4ChecksumOK(out) {
				t.Errorf("round trip must differ only by a corrected checksum:\n got %x\nwant %x", out, pkt)
			}
		})
	}
}

func TestIPv4Accessors(t *testing.T) {
	p, err := ParseIPv4(unhex(t, "45b9 0018 abcd 20b9 0111 0000 c6120002 c6120003 deadbeef"))
	if err != nil {
		t.Fatal(err)
	}
	if p.DSCP() != 46 || p.ECN() != 1 || !p.IsFragment() {
		t.Fatalf("DSCP %d ECN %d IsFragment %v; want 46 1 true", p.DSCP(), p.ECN(), p.IsFragment())
	}
	if (&IPv4{Flags: IPv4DontFragment}).IsFragment() {
		t.Fatal("DF-only packet reported as fragment")
	}
	if !(&IPv4{FragOff: 1}).IsFragment() {
		t.Fatal("last fragment (offset, no MF) not reported as fragment")
	}
}

func TestParseIPv4Errors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want error
	}{
		{"empty", "", ErrShort},
		{"19 bytes", "4500 0013 0000 0000 4011 0000 c6120002 c61200", ErrShort},
		{"version 6", "6500 0014 0000 0000 4011 0000 c6120002 c6120001", ErrUnsupported},
		{"IHL 4", "4400 0014 0000 0000 4011 0000 c6120002 c6120001", ErrBadLength},
		{"IHL 0", "4000 0014 0000 0000 4011 0000 c6120002 c6120001", ErrBadLength},
		{"total length below header", "4500 0013 0000 0000 4011 0000 c6120002 c6120001", ErrBadLength},
		{"total length below IHL 6", "4600 0014 0000 0000 4011 0000 c6120002 c6120001 00000000", ErrBadLength},
		{"total length beyond buffer", "4500 0020 0000 0000 4011 0000 c6120002 c6120001 0000", ErrShort},
		{"options beyond buffer", "4f00 003c 0000 0000 4011 0000 c6120002 c6120001 00000000", ErrShort},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseIPv4(unhex(t, tt.in))
			if !errors.Is(err, tt.want) || got != nil {
				t.Fatalf("ParseIPv4 = %+v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestIPv4Marshal(t *testing.T) {
	tests := []struct {
		name string
		in   IPv4
		want string
	}{
		// Version, IHL, TotalLen and Checksum in the struct are ignored: Marshal derives them.
		{"derived fields", IPv4{Version: 9, IHL: 1, TotalLen: 999, Checksum: 1, ID: 0x1c46, Flags: IPv4DontFragment,
			TTL: 64, Protocol: ProtoUDP, Src: ipA, Dst: ipGW, Payload: unhex(t, "9c40 0035 000c 0000 646e7371")},
			hexIPv4UDP},
		{"options padded to 4", IPv4{ID: 1, TTL: 64, Protocol: ProtoICMP, Src: ipA, Dst: ipGW,
			Options: []byte{0x94, 0x04, 0x00}, Payload: unhex(t, "0800 2104 1234 0001 61626364")},
			hexIPv4ICMPOpt},
		{"16-byte IPs written as IPv4, IPv6 as zero", IPv4{TTL: 1, Protocol: 253,
			Src: net.ParseIP("198.18.0.2"), Dst: net.ParseIP("2001:db8::1")},
			"4500 0014 0000 0000 01fd f2d9 c6120002 00000000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.in
			got := tt.in.Marshal()
			if want := unhex(t, tt.want); !bytes.Equal(got, want) {
				t.Fatalf("Marshal:\n got %x\nwant %x", got, want)
			}
			if !reflect.DeepEqual(before, tt.in) {
				t.Fatal("Marshal modified its receiver")
			}
		})
	}
}

func TestIPv4MarshalOversize(t *testing.T) {
	p := &IPv4{Options: bytes.Repeat([]byte{1}, 50), Payload: make([]byte, 70000)}
	b := p.Marshal()
	if len(b) != 0xffff {
		t.Fatalf("len = %d, want 65535", len(b))
	}
	got, err := ParseIPv4(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.IHL != 15 || len(got.Options) != 40 || len(got.Payload) != 0xffff-60 || !IPv4ChecksumOK(b) {
		t.Fatalf("IHL %d options %d payload %d checksum ok %v", got.IHL, len(got.Options), len(got.Payload), IPv4ChecksumOK(b))
	}
}

func TestIPv4ChecksumOK(t *testing.T) {
	good := unhex(t, hexIPv4UDP)
	bad := append([]byte(nil), good...)
	bad[8]-- // TTL changed without fixing the checksum
	tests := []struct {
		name string
		in   []byte
		want bool
	}{
		{"good", good, true},
		{"bad", bad, false},
		{"short", good[:19], false},
		{"IHL beyond buffer", unhex(t, "4f00"+hexIPv4UDP[4:]), false},
		{"IHL below 5", unhex(t, "4000 0014 0000 0000 4011 0000 c6120002 c6120001"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IPv4ChecksumOK(tt.in); got != tt.want {
				t.Fatalf("IPv4ChecksumOK = %v, want %v", got, tt.want)
			}
		})
	}
}
