package bgp

import (
	"encoding/binary"
	"fmt"
)

// BGP message framing (RFC 4271 §4.1): a 16-byte marker of all ones, a
// two-byte length that counts the whole message, header included, and a
// one-byte type. docs/dataplane.md §3.4 says why netplugin checks it itself.
const (
	headerLen = 19
	maxMsgLen = 4096

	msgOpen         = 1
	msgUpdate       = 2
	msgNotification = 3
	msgKeepalive    = 4
	msgRouteRefresh = 5
)

// Message Header Error subcodes (RFC 4271 §6.1).
const (
	errMsgHeader       = 1 // error code: Message Header Error
	subNotSynchronized = 1
	subBadLength       = 2
	subBadType         = 3
)

// headerError is a framing violation and the NOTIFICATION that answers it.
type headerError struct {
	subcode byte
	data    []byte // the NOTIFICATION's data field (RFC 4271 §6.1)
	reason  string
}

func (e *headerError) Error() string { return e.reason }

// notification is the NOTIFICATION message that reports e to the neighbor.
func (e *headerError) notification() []byte {
	n := headerLen + 2 + len(e.data)
	b := make([]byte, 16, n)
	for i := range b {
		b[i] = 0xff
	}
	b = binary.BigEndian.AppendUint16(b, uint16(n))
	b = append(b, msgNotification, errMsgHeader, e.subcode)
	return append(b, e.data...)
}

// minLen and fixed give the length rules of each type (RFC 4271 §4.2-4.5,
// RFC 2918 §3 for ROUTE-REFRESH): the smallest valid message, and whether
// that is its only valid size.
var lengthRules = [...]struct {
	min   int
	fixed bool
}{
	msgOpen:         {29, false},
	msgUpdate:       {23, false},
	msgNotification: {21, false},
	msgKeepalive:    {19, true},
	msgRouteRefresh: {23, true},
}

// checkHeader checks the 19-byte header h of a message a neighbor sent and
// returns the message's total length. It never panics, whatever h holds.
func checkHeader(h []byte) (int, error) {
	if len(h) < headerLen {
		return 0, fmt.Errorf("bgp: header of %d bytes, want %d", len(h), headerLen)
	}
	for _, b := range h[:16] {
		if b != 0xff {
			return 0, &headerError{subcode: subNotSynchronized, reason: "marker is not all ones (connection not synchronized)"}
		}
	}
	length := int(binary.BigEndian.Uint16(h[16:18]))
	typ := h[18]
	badLength := func(want string) error {
		return &headerError{subcode: subBadLength, data: append([]byte(nil), h[16:18]...),
			reason: fmt.Sprintf("length %d of a type %d message, want %s", length, typ, want)}
	}
	if length < headerLen || length > maxMsgLen {
		return 0, badLength(fmt.Sprintf("%d..%d", headerLen, maxMsgLen))
	}
	if typ < msgOpen || typ > msgRouteRefresh {
		return 0, &headerError{subcode: subBadType, data: []byte{typ}, reason: fmt.Sprintf("unknown message type %d", typ)}
	}
	switch r := lengthRules[typ]; {
	case r.fixed && length != r.min:
		return 0, badLength(fmt.Sprintf("exactly %d", r.min))
	case length < r.min:
		return 0, badLength(fmt.Sprintf("%d..%d", r.min, maxMsgLen))
	}
	return length, nil
}
