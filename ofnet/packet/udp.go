package packet

import (
	"encoding/binary"
	"fmt"
)

const udpHeaderLen = 8

// UDP is a UDP datagram (RFC 768).
type UDP struct {
	SrcPort, DstPort uint16
	// Length covers header and payload.
	Length uint16
	// Checksum is carried as is; 0 means "no checksum" over IPv4.
	Checksum uint16
	// Payload is the data up to Length; trailing bytes of the input are dropped.
	Payload []byte
}

// ParseUDP decodes a UDP datagram. The checksum is not verified. Payload aliases b.
func ParseUDP(b []byte) (*UDP, error) {
	if len(b) < udpHeaderLen {
		return nil, fmt.Errorf("parse udp: %w: %d bytes, header needs %d", ErrShort, len(b), udpHeaderLen)
	}
	u := &UDP{
		SrcPort:  binary.BigEndian.Uint16(b[0:2]),
		DstPort:  binary.BigEndian.Uint16(b[2:4]),
		Length:   binary.BigEndian.Uint16(b[4:6]),
		Checksum: binary.BigEndian.Uint16(b[6:8]),
	}
	if u.Length < udpHeaderLen {
		return nil, fmt.Errorf("parse udp: %w: length %d below header length %d", ErrBadLength, u.Length, udpHeaderLen)
	}
	if int(u.Length) > len(b) {
		return nil, fmt.Errorf("parse udp: %w: length %d, have %d bytes", ErrShort, u.Length, len(b))
	}
	u.Payload = b[udpHeaderLen:u.Length]
	return u, nil
}

// Marshal encodes the datagram with Length derived from Payload (truncated to fit
// 65535 bytes) and Checksum written as given. u is not modified.
func (u *UDP) Marshal() []byte {
	payload := u.Payload
	if len(payload) > 0xffff-udpHeaderLen {
		payload = payload[:0xffff-udpHeaderLen]
	}
	b := make([]byte, udpHeaderLen+len(payload))
	binary.BigEndian.PutUint16(b[0:2], u.SrcPort)
	binary.BigEndian.PutUint16(b[2:4], u.DstPort)
	binary.BigEndian.PutUint16(b[4:6], uint16(len(b)))
	binary.BigEndian.PutUint16(b[6:8], u.Checksum)
	copy(b[udpHeaderLen:], payload)
	return b
}
