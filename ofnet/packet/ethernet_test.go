package packet

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

func TestParseEthernet(t *testing.T) {
	arp := unhex(t, hexARPReqAtB)
	tests := []struct {
		name string
		in   string
		want Ethernet
	}{
		{"untagged arp", hexBcast + hexMacA + "0806" + hexARPReqAtB,
			Ethernet{Dst: mac("ff:ff:ff:ff:ff:ff"), Src: macA, EtherType: EtherTypeARP, Payload: arp}},
		{"vlan 100 pcp 5", hexBcast + hexMacA + "8100 a064 0806" + hexARPReqAtB,
			Ethernet{Dst: mac("ff:ff:ff:ff:ff:ff"), Src: macA, VLAN: 100, PCP: 5, Tagged: true,
				EtherType: EtherTypeARP, Payload: arp}},
		{"priority tag vlan 0", hexMacB + hexMacA + "8100 e000 0800 45",
			Ethernet{Dst: macB, Src: macA, PCP: 7, Tagged: true, EtherType: EtherTypeIPv4, Payload: []byte{0x45}}},
		{"dei and vlan 4095", hexMacB + hexMacA + "8100 1fff 86dd",
			Ethernet{Dst: macB, Src: macA, VLAN: 4095, DEI: true, Tagged: true, EtherType: EtherTypeIPv6, Payload: []byte{}}},
		{"inner tag left in payload", hexMacB + hexMacA + "8100 000a 8100 0014 0800",
			Ethernet{Dst: macB, Src: macA, VLAN: 10, Tagged: true, EtherType: EtherTypeVLAN,
				Payload: []byte{0x00, 0x14, 0x08, 0x00}}},
		{"header only", hexMacB + hexMacA + "0800",
			Ethernet{Dst: macB, Src: macA, EtherType: EtherTypeIPv4, Payload: []byte{}}},
		{"802.3 length kept raw", hexMacB + hexMacA + "0003 424203",
			Ethernet{Dst: macB, Src: macA, EtherType: 3, Payload: []byte{0x42, 0x42, 0x03}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := unhex(t, tt.in)
			got, err := ParseEthernet(in)
			if err != nil {
				t.Fatalf("ParseEthernet: %v", err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", *got, tt.want)
			}
			if got.HasTag() != tt.want.Tagged {
				t.Errorf("HasTag() = %v, want %v", got.HasTag(), tt.want.Tagged)
			}
			if out := got.Marshal(); !bytes.Equal(out, in) {
				t.Errorf("round trip:\n got %x\nwant %x", out, in)
			}
		})
	}
}

func TestParseEthernetErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{"empty", ""},
		{"13 bytes", hexMacB + hexMacA + "08"},
		{"tag without tci", hexMacB + hexMacA + "8100"},
		{"tag without inner type", hexMacB + hexMacA + "8100 000a 08"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseEthernet(unhex(t, tt.in))
			if !errors.Is(err, ErrShort) || got != nil {
				t.Fatalf("ParseEthernet = %+v, %v; want ErrShort", got, err)
			}
		})
	}
}

func TestEthernetMarshal(t *testing.T) {
	tests := []struct {
		name string
		in   Ethernet
		want string
	}{
		{"untagged", Ethernet{Dst: macB, Src: macA, EtherType: EtherTypeIPv4, Payload: []byte{1, 2}},
			hexMacB + hexMacA + "0800 0102"},
		{"vlan tag", Ethernet{Dst: macB, Src: macA, VLAN: 4093, EtherType: EtherTypeIPv4},
			hexMacB + hexMacA + "8100 0ffd 0800"},
		{"tag flag with vlan 0", Ethernet{Dst: macB, Src: macA, Tagged: true, PCP: 3, EtherType: EtherTypeARP},
			hexMacB + hexMacA + "8100 6000 0806"},
		{"out-of-range vlan and pcp are masked", Ethernet{Dst: macB, Src: macA, VLAN: 0x1064, PCP: 0xff, DEI: true, EtherType: 0x0800},
			hexMacB + hexMacA + "8100 f064 0800"},
		{"bad-length and nil MACs are zero", Ethernet{Dst: macB[:3], EtherType: EtherTypeARP},
			"000000000000 000000000000 0806"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := unhex(t, tt.want)
			if got := tt.in.Marshal(); !bytes.Equal(got, want) {
				t.Fatalf("Marshal:\n got %x\nwant %x", got, want)
			}
		})
	}
}

func TestParseEthernetCopiesAddresses(t *testing.T) {
	in := unhex(t, hexMacB+hexMacA+"0800 45")
	e, err := ParseEthernet(in)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		in[i] = 0
	}
	if !bytes.Equal(e.Dst, macB) || !bytes.Equal(e.Src, macA) {
		t.Fatalf("addresses alias the input: dst %s src %s", e.Dst, e.Src)
	}
	if e.Payload[0] != 0 {
		t.Fatalf("payload should alias the input (documented), got %x", e.Payload)
	}
}
