package packet

import (
	"encoding/binary"
	"fmt"
	"net"
)

// IP protocol numbers.
const (
	ProtoICMP = 1
	ProtoTCP  = 6
	ProtoUDP  = 17
)

// IPv4 flag bits (the 3-bit Flags field).
const (
	IPv4DontFragment  = 0x2
	IPv4MoreFragments = 0x1
)

const (
	ipv4MinHeaderLen = 20
	ipv4MaxHeaderLen = 60
	ipv4MaxLen       = 0xffff
)

// IPv4 is an IPv4 packet (RFC 791).
type IPv4 struct {
	Version uint8
	// IHL is the header length in 32-bit words (5 without options).
	IHL uint8
	// TOS holds DSCP (upper 6 bits) and ECN (lower 2 bits).
	TOS      uint8
	TotalLen uint16
	ID       uint16
	// Flags is the 3-bit flags field (IPv4DontFragment, IPv4MoreFragments).
	Flags uint8
	// FragOff is the 13-bit fragment offset in 8-byte units.
	FragOff  uint16
	TTL      uint8
	Protocol uint8
	Checksum uint16
	Src, Dst net.IP
	// Options are the header bytes after the fixed 20; nil when IHL is 5.
	Options []byte
	// Payload is the data up to TotalLen; trailing bytes of the input are dropped.
	Payload []byte
}

// ParseIPv4 decodes an IPv4 packet. The header checksum is not verified (see
// IPv4ChecksumOK). Options and Payload alias b; IPs are 4-byte copies.
func ParseIPv4(b []byte) (*IPv4, error) {
	if len(b) < ipv4MinHeaderLen {
		return nil, fmt.Errorf("parse ipv4: %w: %d bytes, header needs %d", ErrShort, len(b), ipv4MinHeaderLen)
	}
	p := &IPv4{
		Version:  b[0] >> 4,
		IHL:      b[0] & 0x0f,
		TOS:      b[1],
		TotalLen: binary.BigEndian.Uint16(b[2:4]),
		ID:       binary.BigEndian.Uint16(b[4:6]),
		Flags:    b[6] >> 5,
		FragOff:  binary.BigEndian.Uint16(b[6:8]) & 0x1fff,
		TTL:      b[8],
		Protocol: b[9],
		Checksum: binary.BigEndian.Uint16(b[10:12]),
		Src:      cloneIPv4(b[12:16]),
		Dst:      cloneIPv4(b[16:20]),
	}
	if p.Version != 4 {
		return nil, fmt.Errorf("parse ipv4: %w: version %d", ErrUnsupported, p.Version)
	}
	hlen := int(p.IHL) * 4
	if hlen < ipv4MinHeaderLen {
		return nil, fmt.Errorf("parse ipv4: %w: IHL %d below 5", ErrBadLength, p.IHL)
	}
	if int(p.TotalLen) < hlen {
		return nil, fmt.Errorf("parse ipv4: %w: total length %d below header length %d",
			ErrBadLength, p.TotalLen, hlen)
	}
	if int(p.TotalLen) > len(b) {
		return nil, fmt.Errorf("parse ipv4: %w: total length %d, have %d bytes", ErrShort, p.TotalLen, len(b))
	}
	if hlen > ipv4MinHeaderLen {
		p.Options = b[ipv4MinHeaderLen:hlen]
	}
	p.Payload = b[hlen:p.TotalLen]
	return p, nil
}

// DSCP returns the differentiated services code point (upper 6 bits of TOS).
func (p *IPv4) DSCP() uint8 { return p.TOS >> 2 }

// ECN returns the explicit congestion notification bits (lower 2 bits of TOS).
func (p *IPv4) ECN() uint8 { return p.TOS & 0x3 }

// IsFragment reports whether the packet is a fragment (more fragments follow, or a
// non-zero offset); only the first fragment carries the transport header.
func (p *IPv4) IsFragment() bool {
	return p.Flags&IPv4MoreFragments != 0 || p.FragOff != 0
}

// Marshal encodes the packet. Version is always 4; IHL and TotalLen are derived from
// Options (zero-padded to a multiple of 4, at most 40 bytes) and Payload (truncated so
// the packet fits 65535 bytes); the header checksum is computed. p is not modified.
func (p *IPv4) Marshal() []byte {
	opts := p.Options
	if len(opts) > ipv4MaxHeaderLen-ipv4MinHeaderLen {
		opts = opts[:ipv4MaxHeaderLen-ipv4MinHeaderLen]
	}
	hlen := ipv4MinHeaderLen + (len(opts)+3)/4*4
	payload := p.Payload
	if len(payload) > ipv4MaxLen-hlen {
		payload = payload[:ipv4MaxLen-hlen]
	}
	b := make([]byte, hlen+len(payload))
	b[0] = 4<<4 | uint8(hlen/4)
	b[1] = p.TOS
	binary.BigEndian.PutUint16(b[2:4], uint16(len(b)))
	binary.BigEndian.PutUint16(b[4:6], p.ID)
	binary.BigEndian.PutUint16(b[6:8], uint16(p.Flags&0x7)<<13|p.FragOff&0x1fff)
	b[8] = p.TTL
	b[9] = p.Protocol
	putIPv4(b[12:16], p.Src)
	putIPv4(b[16:20], p.Dst)
	copy(b[ipv4MinHeaderLen:], opts)
	binary.BigEndian.PutUint16(b[10:12], Checksum(b[:hlen]))
	copy(b[hlen:], payload)
	return b
}

// IPv4ChecksumOK reports whether the header checksum of the encoded packet b is
// correct. It returns false when b is shorter than the header its IHL announces.
func IPv4ChecksumOK(b []byte) bool {
	if len(b) < ipv4MinHeaderLen {
		return false
	}
	hlen := int(b[0]&0x0f) * 4
	if hlen < ipv4MinHeaderLen || hlen > len(b) {
		return false
	}
	return Checksum(b[:hlen]) == 0
}
