package packet

import (
	"encoding/binary"
	"fmt"
	"net"
)

// ARP operation codes.
const (
	ARPRequest = 1
	ARPReply   = 2
)

const (
	arpLen        = 28 // Ethernet/IPv4 ARP: 8-byte fixed part + 2×(6+4) addresses
	arpHTypeEther = 1
)

// ARP is an Ethernet/IPv4 ARP packet (RFC 826).
type ARP struct {
	Op        uint16
	SenderMAC net.HardwareAddr
	SenderIP  net.IP
	TargetMAC net.HardwareAddr
	TargetIP  net.IP
}

// ParseARP decodes an Ethernet/IPv4 ARP packet; any other hardware or protocol type
// or address length is ErrUnsupported. Bytes after the 28-byte packet (Ethernet
// padding) are ignored. IPs are returned in their 4-byte form.
func ParseARP(b []byte) (*ARP, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("parse arp: %w: %d bytes, fixed part needs 8", ErrShort, len(b))
	}
	htype := binary.BigEndian.Uint16(b[0:2])
	ptype := binary.BigEndian.Uint16(b[2:4])
	hlen, plen := b[4], b[5]
	if htype != arpHTypeEther || ptype != EtherTypeIPv4 || hlen != macLen || plen != net.IPv4len {
		return nil, fmt.Errorf("parse arp: %w: htype %d ptype %#04x hlen %d plen %d",
			ErrUnsupported, htype, ptype, hlen, plen)
	}
	if len(b) < arpLen {
		return nil, fmt.Errorf("parse arp: %w: %d bytes, packet needs %d", ErrShort, len(b), arpLen)
	}
	return &ARP{
		Op:        binary.BigEndian.Uint16(b[6:8]),
		SenderMAC: cloneMAC(b[8:14]),
		SenderIP:  cloneIPv4(b[14:18]),
		TargetMAC: cloneMAC(b[18:24]),
		TargetIP:  cloneIPv4(b[24:28]),
	}, nil
}

// Marshal encodes the packet (28 bytes).
func (a *ARP) Marshal() []byte {
	b := make([]byte, arpLen)
	binary.BigEndian.PutUint16(b[0:2], arpHTypeEther)
	binary.BigEndian.PutUint16(b[2:4], EtherTypeIPv4)
	b[4], b[5] = macLen, net.IPv4len
	binary.BigEndian.PutUint16(b[6:8], a.Op)
	putMAC(b[8:14], a.SenderMAC)
	putIPv4(b[14:18], a.SenderIP)
	putMAC(b[18:24], a.TargetMAC)
	putIPv4(b[24:28], a.TargetIP)
	return b
}

// IsGratuitous reports whether the sender and target IPs are the same IPv4 address
// (a GARP announcement, whatever the op).
func (a *ARP) IsGratuitous() bool {
	s := a.SenderIP.To4()
	return s != nil && s.Equal(a.TargetIP)
}
