package packet

import (
	"bytes"
	"net"
	"testing"
)

// parseARPFrame decodes an Ethernet/ARP frame or fails the test.
func parseARPFrame(t *testing.T, b []byte) (*Ethernet, *ARP) {
	t.Helper()
	e, err := ParseEthernet(b)
	if err != nil {
		t.Fatalf("ParseEthernet(%x): %v", b, err)
	}
	if e.EtherType != EtherTypeARP {
		t.Fatalf("ethertype %#04x, want ARP", e.EtherType)
	}
	a, err := ParseARP(e.Payload)
	if err != nil {
		t.Fatalf("ParseARP(%x): %v", e.Payload, err)
	}
	return e, a
}

func TestARPReplyFrame(t *testing.T) {
	tests := []struct {
		name    string
		request string // nil Ethernet when empty
		arp     string
		want    string
	}{
		{"untagged", hexBcast + hexMacA + "0806", hexARPReqAtB,
			hexMacA + hexMacB + "0806" + hexARPRepBtA},
		{"vlan tag with pcp copied", hexBcast + hexMacA + "8100 a064 0806", hexARPReqAtB,
			hexMacA + hexMacB + "8100 a064 0806" + hexARPRepBtA},
		{"priority tag kept", hexBcast + hexMacA + "8100 e000 0806", hexARPReqAtB,
			hexMacA + hexMacB + "8100 e000 0806" + hexARPRepBtA},
		{"ethernet dst is the frame's source", hexBcast + "020000000099" + "0806", hexARPReqAtB,
			"020000000099" + hexMacB + "0806" + hexARPRepBtA},
		{"nil ethernet", "", hexARPReqAtB,
			hexMacA + hexMacB + "0806" + hexARPRepBtA},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var reqEth *Ethernet
			if tt.request != "" {
				var err error
				if reqEth, err = ParseEthernet(unhex(t, tt.request)); err != nil {
					t.Fatal(err)
				}
			}
			req, err := ParseARP(unhex(t, tt.arp))
			if err != nil {
				t.Fatal(err)
			}
			got := ARPReplyFrame(reqEth, req, macB)
			if want := unhex(t, tt.want); !bytes.Equal(got, want) {
				t.Fatalf("ARPReplyFrame:\n got %x\nwant %x", got, want)
			}
		})
	}
}

func TestARPRequestFrame(t *testing.T) {
	got := ARPRequestFrame(macA, ipA, ipB, 0)
	if want := unhex(t, hexBcast+hexMacA+"0806"+hexARPReqAtB); !bytes.Equal(got, want) {
		t.Fatalf("untagged:\n got %x\nwant %x", got, want)
	}
	got = ARPRequestFrame(macA, net.ParseIP("198.18.0.2"), net.ParseIP("198.18.0.3"), 10)
	if want := unhex(t, hexBcast+hexMacA+"8100 000a 0806"+hexARPReqAtB); !bytes.Equal(got, want) {
		t.Fatalf("vlan 10:\n got %x\nwant %x", got, want)
	}
	_, a := parseARPFrame(t, got)
	if a.IsGratuitous() {
		t.Fatal("ordinary request reported as gratuitous")
	}
}

func TestGARPFrame(t *testing.T) {
	got := GARPFrame(macA, ipA, 4093)
	want := unhex(t, hexBcast+hexMacA+"8100 0ffd 0806"+
		"0001 0800 06 04 0001 0202c6120002 c6120002 000000000000 c6120002")
	if !bytes.Equal(got, want) {
		t.Fatalf("GARPFrame:\n got %x\nwant %x", got, want)
	}
	e, a := parseARPFrame(t, got)
	if e.VLAN != 4093 || !a.IsGratuitous() || a.Op != ARPRequest || !a.SenderIP.Equal(ipA) {
		t.Fatalf("parsed GARP: vlan %d %+v", e.VLAN, a)
	}
	if untagged := GARPFrame(macA, ipA, 0); len(untagged) != 42 {
		t.Fatalf("untagged GARP is %d bytes, want 42 (no padding)", len(untagged))
	}
}

func TestICMPEchoFrame(t *testing.T) {
	got := ICMPEchoFrame(Echo{SrcMAC: macA, DstMAC: macB, SrcIP: ipA, DstIP: ipB, ID: 0x1234, Seq: 1, Data: []byte("abcd")})
	want := unhex(t, hexMacB+hexMacA+"0800"+
		"4500 0020 0000 0000 4001 eeb3 c6120002 c6120003"+
		"0800 2104 1234 0001 61626364")
	if !bytes.Equal(got, want) {
		t.Fatalf("ICMPEchoFrame:\n got %x\nwant %x", got, want)
	}

	reply := ICMPEchoFrame(Echo{SrcMAC: macB, DstMAC: macA, SrcIP: ipB, DstIP: ipA, VLAN: 7, ID: 9, Seq: 2, Reply: true})
	e, err := ParseEthernet(reply)
	if err != nil || e.VLAN != 7 || e.EtherType != EtherTypeIPv4 {
		t.Fatalf("ethernet %+v, %v", e, err)
	}
	ip, err := ParseIPv4(e.Payload)
	if err != nil || !IPv4ChecksumOK(e.Payload) || ip.Protocol != ProtoICMP || ip.TTL != 64 {
		t.Fatalf("ipv4 %+v, %v", ip, err)
	}
	m, err := ParseICMP(ip.Payload)
	if err != nil || !ICMPChecksumOK(ip.Payload) || m.Type != ICMPTypeEchoReply || m.EchoID() != 9 || m.EchoSeq() != 2 {
		t.Fatalf("icmp %+v, %v", m, err)
	}
}
