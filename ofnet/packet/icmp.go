package packet

import (
	"encoding/binary"
	"fmt"
)

// ICMP types used by ICMPEchoFrame.
const (
	ICMPTypeEchoReply   = 0
	ICMPTypeEchoRequest = 8
)

const icmpHeaderLen = 8

// ICMP is an ICMPv4 message (RFC 792).
type ICMP struct {
	Type, Code uint8
	Checksum   uint16
	// Rest is the second header word: identifier<<16 | sequence for echo messages.
	Rest uint32
	// Payload is everything after the 8-byte header.
	Payload []byte
}

// ParseICMP decodes an ICMP message (the IPv4 payload). The checksum is not verified
// (see ICMPChecksumOK). Payload aliases b.
func ParseICMP(b []byte) (*ICMP, error) {
	if len(b) < icmpHeaderLen {
		return nil, fmt.Errorf("parse icmp: %w: %d bytes, header needs %d", ErrShort, len(b), icmpHeaderLen)
	}
	return &ICMP{
		Type:     b[0],
		Code:     b[1],
		Checksum: binary.BigEndian.Uint16(b[2:4]),
		Rest:     binary.BigEndian.Uint32(b[4:8]),
		Payload:  b[icmpHeaderLen:],
	}, nil
}

// EchoID returns the identifier of an echo request or reply.
func (m *ICMP) EchoID() uint16 { return uint16(m.Rest >> 16) }

// EchoSeq returns the sequence number of an echo request or reply.
func (m *ICMP) EchoSeq() uint16 { return uint16(m.Rest) }

// Marshal encodes the message and computes its checksum. m is not modified.
func (m *ICMP) Marshal() []byte {
	b := make([]byte, icmpHeaderLen+len(m.Payload))
	b[0], b[1] = m.Type, m.Code
	binary.BigEndian.PutUint32(b[4:8], m.Rest)
	copy(b[icmpHeaderLen:], m.Payload)
	binary.BigEndian.PutUint16(b[2:4], Checksum(b))
	return b
}

// ICMPChecksumOK reports whether the encoded ICMP message b has a correct checksum.
func ICMPChecksumOK(b []byte) bool {
	return len(b) >= icmpHeaderLen && Checksum(b) == 0
}
