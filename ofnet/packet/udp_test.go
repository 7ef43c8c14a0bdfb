package packet

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

func TestParseUDP(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		trailing int
		want     UDP
	}{
		{"dns query", "9c40 0035 000c 0000 646e7371", 0,
			UDP{SrcPort: 40000, DstPort: 53, Length: 12, Payload: []byte("dnsq")}},
		{"checksum kept", "0035 9c40 0009 beef 2a", 0,
			UDP{SrcPort: 53, DstPort: 40000, Length: 9, Checksum: 0xbeef, Payload: []byte{0x2a}}},
		{"header only", "0001 0002 0008 0000", 0, UDP{SrcPort: 1, DstPort: 2, Length: 8, Payload: []byte{}}},
		{"bytes after length dropped", "0001 0002 0009 0000 2a 0000", 2,
			UDP{SrcPort: 1, DstPort: 2, Length: 9, Payload: []byte{0x2a}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := unhex(t, tt.in)
			got, err := ParseUDP(in)
			if err != nil {
				t.Fatalf("ParseUDP: %v", err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", *got, tt.want)
			}
			if out := got.Marshal(); !bytes.Equal(out, in[:len(in)-tt.trailing]) {
				t.Errorf("round trip:\n got %x\nwant %x", out, in)
			}
		})
	}
}

func TestParseUDPErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want error
	}{
		{"empty", "", ErrShort},
		{"7 bytes", "0001 0002 0008 00", ErrShort},
		{"length 7", "0001 0002 0007 0000", ErrBadLength},
		{"length 0", "0001 0002 0000 0000 00", ErrBadLength},
		{"length beyond buffer", "0001 0002 000a 0000 00", ErrShort},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseUDP(unhex(t, tt.in))
			if !errors.Is(err, tt.want) || got != nil {
				t.Fatalf("ParseUDP = %+v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestUDPMarshal(t *testing.T) {
	// Length is derived from the payload, the checksum written as given.
	u := &UDP{SrcPort: 53, DstPort: 40000, Length: 1, Checksum: 0, Payload: []byte("ans")}
	if got, want := u.Marshal(), unhex(t, "0035 9c40 000b 0000 616e73"); !bytes.Equal(got, want) {
		t.Fatalf("Marshal:\n got %x\nwant %x", got, want)
	}
	if u.Length != 1 {
		t.Fatal("Marshal modified its receiver")
	}
	big := (&UDP{Payload: make([]byte, 70000)}).Marshal()
	if len(big) != 0xffff || big[4] != 0xff || big[5] != 0xff {
		t.Fatalf("oversize payload: len %d length field %x", len(big), big[4:6])
	}
}
