package packet

import (
	"encoding/binary"
	"fmt"
	"net"
)

// EtherType values this package and the ofnet agent dispatch on.
const (
	EtherTypeIPv4 = 0x0800
	EtherTypeARP  = 0x0806
	EtherTypeVLAN = 0x8100
	EtherTypeIPv6 = 0x86dd
)

const (
	ethHeaderLen = 14
	vlanTagLen   = 4
	macLen       = 6
)

// Ethernet is an Ethernet II frame with at most one 802.1Q tag.
type Ethernet struct {
	Dst, Src net.HardwareAddr
	// VLAN is the 12-bit VLAN id of the 802.1Q tag; 0 means untagged unless Tagged is set.
	VLAN uint16
	// PCP is the 3-bit priority code point of the tag.
	PCP uint8
	// DEI is the drop-eligible bit of the tag.
	DEI bool
	// Tagged records that a tag is present even when VLAN is 0 (a priority tag).
	// Marshal writes a tag when Tagged is set or VLAN is non-zero.
	Tagged bool
	// EtherType is the type after the tag, if any. A second (inner) 802.1Q tag is
	// not decoded: it is reported as EtherTypeVLAN with the tag at the start of Payload.
	EtherType uint16
	// Payload is everything after the header, including any Ethernet padding.
	Payload []byte
}

// ParseEthernet decodes an Ethernet frame (without FCS). Payload aliases b.
func ParseEthernet(b []byte) (*Ethernet, error) {
	if len(b) < ethHeaderLen {
		return nil, fmt.Errorf("parse ethernet: %w: %d bytes, header needs %d", ErrShort, len(b), ethHeaderLen)
	}
	e := &Ethernet{
		Dst:       cloneMAC(b[0:6]),
		Src:       cloneMAC(b[6:12]),
		EtherType: binary.BigEndian.Uint16(b[12:14]),
	}
	off := ethHeaderLen
	if e.EtherType == EtherTypeVLAN {
		if len(b) < ethHeaderLen+vlanTagLen {
			return nil, fmt.Errorf("parse ethernet: %w: %d bytes, tagged header needs %d",
				ErrShort, len(b), ethHeaderLen+vlanTagLen)
		}
		tci := binary.BigEndian.Uint16(b[14:16])
		e.Tagged = true
		e.PCP = uint8(tci >> 13)
		e.DEI = tci&0x1000 != 0
		e.VLAN = tci & 0x0fff
		e.EtherType = binary.BigEndian.Uint16(b[16:18])
		off += vlanTagLen
	}
	e.Payload = b[off:]
	return e, nil
}

// HasTag reports whether the frame carries an 802.1Q tag.
func (e *Ethernet) HasTag() bool { return e.Tagged || e.VLAN != 0 }

// Marshal encodes the frame. VLAN and PCP are truncated to their field widths.
func (e *Ethernet) Marshal() []byte {
	n := ethHeaderLen + len(e.Payload)
	if e.HasTag() {
		n += vlanTagLen
	}
	b := make([]byte, n)
	putMAC(b[0:6], e.Dst)
	putMAC(b[6:12], e.Src)
	off := 12
	if e.HasTag() {
		tci := uint16(e.PCP&0x7)<<13 | e.VLAN&0x0fff
		if e.DEI {
			tci |= 0x1000
		}
		binary.BigEndian.PutUint16(b[12:14], EtherTypeVLAN)
		binary.BigEndian.PutUint16(b[14:16], tci)
		off += vlanTagLen
	}
	binary.BigEndian.PutUint16(b[off:off+2], e.EtherType)
	copy(b[off+2:], e.Payload)
	return b
}

func cloneMAC(b []byte) net.HardwareAddr {
	return append(net.HardwareAddr(nil), b...)
}

// putMAC writes mac into dst (6 bytes); a MAC of any other length leaves zeros.
func putMAC(dst []byte, mac net.HardwareAddr) {
	if len(mac) == macLen {
		copy(dst, mac)
	}
}

// putIPv4 writes ip into dst (4 bytes); a nil or non-IPv4 address leaves zeros.
func putIPv4(dst []byte, ip net.IP) {
	if ip4 := ip.To4(); ip4 != nil {
		copy(dst, ip4)
	}
}

// cloneIPv4 returns a 4-byte copy of b.
func cloneIPv4(b []byte) net.IP {
	return append(net.IP(nil), b...)
}
