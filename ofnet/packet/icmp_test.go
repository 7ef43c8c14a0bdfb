package packet

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

func TestParseICMP(t *testing.T) {
	in := unhex(t, "0800 2104 1234 0001 61626364")
	got, err := ParseICMP(in)
	if err != nil {
		t.Fatalf("ParseICMP: %v", err)
	}
	want := ICMP{Type: ICMPTypeEchoRequest, Checksum: 0x2104, Rest: 0x12340001, Payload: []byte("abcd")}
	if !reflect.DeepEqual(*got, want) {
		t.Fatalf("got  %+v\nwant %+v", *got, want)
	}
	if got.EchoID() != 0x1234 || got.EchoSeq() != 1 {
		t.Fatalf("EchoID %#x EchoSeq %d", got.EchoID(), got.EchoSeq())
	}
	if out := got.Marshal(); !bytes.Equal(out, in) {
		t.Fatalf("round trip:\n got %x\nwant %x", out, in)
	}
	if !ICMPChecksumOK(in) {
		t.Fatal("ICMPChecksumOK(valid) = false")
	}
}

func TestICMPMarshalComputesChecksum(t *testing.T) {
	m := &ICMP{Type: ICMPTypeEchoReply, Checksum: 0x1111, Rest: 0x12340001, Payload: []byte("abcd")}
	if got, want := m.Marshal(), unhex(t, "0000 2904 1234 0001 61626364"); !bytes.Equal(got, want) {
		t.Fatalf("Marshal:\n got %x\nwant %x", got, want)
	}
	odd := (&ICMP{Type: 3, Code: 3, Payload: []byte{1, 2, 3}}).Marshal()
	if !ICMPChecksumOK(odd) {
		t.Fatalf("odd-length message has a bad checksum: %x", odd)
	}
}

func TestParseICMPErrors(t *testing.T) {
	for _, in := range []string{"", "0800 2104 1234 00"} {
		got, err := ParseICMP(unhex(t, in))
		if !errors.Is(err, ErrShort) || got != nil {
			t.Fatalf("ParseICMP(%q) = %+v, %v; want ErrShort", in, got, err)
		}
	}
	if ICMPChecksumOK(unhex(t, "0800 f7ff")) {
		t.Fatal("ICMPChecksumOK accepted a 4-byte message")
	}
	if ICMPChecksumOK(unhex(t, "0800 2105 1234 0001 61626364")) {
		t.Fatal("ICMPChecksumOK accepted a wrong checksum")
	}
}
