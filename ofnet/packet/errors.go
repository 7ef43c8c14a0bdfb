package packet

import "errors"

// ErrShort is wrapped by parse errors caused by a buffer shorter than the format or
// one of its length fields requires.
var ErrShort = errors.New("packet: truncated")

// ErrBadLength is wrapped by parse errors caused by an impossible length field
// (an IPv4 IHL below 5, a UDP length below its header, ...).
var ErrBadLength = errors.New("packet: bad length field")

// ErrUnsupported is wrapped by parse errors for well-formed input of a variant this
// package does not handle (non-Ethernet/IPv4 ARP, IP version other than 4).
var ErrUnsupported = errors.New("packet: unsupported format")
