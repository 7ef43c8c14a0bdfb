package packet

import (
	"bytes"
	"errors"
	"net"
	"reflect"
	"testing"
)

func TestParseARP(t *testing.T) {
	zeroMAC := make(net.HardwareAddr, 6)
	tests := []struct {
		name    string
		in      string
		want    ARP
		padding int
	}{
		{"request", hexARPReqAtB,
			ARP{Op: ARPRequest, SenderMAC: macA, SenderIP: ipA, TargetMAC: zeroMAC, TargetIP: ipB}, 0},
		{"reply", hexARPRepBtA,
			ARP{Op: ARPReply, SenderMAC: macB, SenderIP: ipB, TargetMAC: macA, TargetIP: ipA}, 0},
		{"ethernet padding ignored", hexARPReqAtB + "000000000000000000000000000000000000",
			ARP{Op: ARPRequest, SenderMAC: macA, SenderIP: ipA, TargetMAC: zeroMAC, TargetIP: ipB}, 18},
		{"unknown op kept", "0001 0800 06 04 0009 0202c6120002 c6120002 0202c6120003 c6120003",
			ARP{Op: 9, SenderMAC: macA, SenderIP: ipA, TargetMAC: macB, TargetIP: ipB}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := unhex(t, tt.in)
			got, err := ParseARP(in)
			if err != nil {
				t.Fatalf("ParseARP: %v", err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", *got, tt.want)
			}
			if out := got.Marshal(); !bytes.Equal(out, in[:len(in)-tt.padding]) {
				t.Errorf("round trip:\n got %x\nwant %x", out, in)
			}
		})
	}
}

func TestParseARPErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want error
	}{
		{"empty", "", ErrShort},
		{"7 bytes", "0001 0800 06 04 00", ErrShort},
		{"fixed part only", "0001 0800 06 04 0001", ErrShort},
		{"27 bytes", "0001 0800 06 04 0001 0202c6120002 c6120002 000000000000 c61200", ErrShort},
		{"ieee802 hardware", "0006 0800 06 04 0001 0202c6120002 c6120002 000000000000 c6120003", ErrUnsupported},
		{"ipv6 protocol type", "0001 86dd 06 04 0001 0202c6120002 c6120002 000000000000 c6120003", ErrUnsupported},
		{"hlen 8", "0001 0800 08 04 0001 0202c6120002 c6120002 000000000000 c6120003 00000000", ErrUnsupported},
		{"plen 16", "0001 0800 06 10 0001 0202c6120002 c6120002 000000000000 c6120003", ErrUnsupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseARP(unhex(t, tt.in))
			if !errors.Is(err, tt.want) || got != nil {
				t.Fatalf("ParseARP = %+v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestARPMarshal(t *testing.T) {
	// 16-byte IP forms are written as IPv4; nil and IPv6 addresses and short MACs as zeros.
	a := &ARP{Op: ARPReply, SenderMAC: macB, SenderIP: net.ParseIP("198.18.0.3"),
		TargetMAC: macA[:5], TargetIP: net.ParseIP("2001:db8::1")}
	want := unhex(t, "0001 0800 06 04 0002 0202c6120003 c6120003 000000000000 00000000")
	if got := a.Marshal(); !bytes.Equal(got, want) {
		t.Fatalf("Marshal:\n got %x\nwant %x", got, want)
	}
	if got := (&ARP{}).Marshal(); !bytes.Equal(got, unhex(t, "0001 0800 06 04 0000"+
		"000000000000 00000000 000000000000 00000000")) {
		t.Fatalf("Marshal of zero ARP: %x", got)
	}
}

func TestARPIsGratuitous(t *testing.T) {
	tests := []struct {
		name   string
		sender net.IP
		target net.IP
		want   bool
	}{
		{"same ip", ipA, ipA, true},
		{"same ip in 4- and 16-byte forms", ipA, net.ParseIP("198.18.0.2"), true},
		{"different ips", ipA, ipB, false},
		{"probe from 0.0.0.0", net.IPv4zero, ipA, false},
		{"both nil", nil, nil, false},
		{"ipv6", net.ParseIP("2001:db8::1"), net.ParseIP("2001:db8::1"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &ARP{Op: ARPRequest, SenderIP: tt.sender, TargetIP: tt.target}
			if got := a.IsGratuitous(); got != tt.want {
				t.Fatalf("IsGratuitous() = %v, want %v", got, tt.want)
			}
		})
	}
}
