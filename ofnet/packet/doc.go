// Package packet parses and builds the few frame formats the ofnet agent handles
// itself: Ethernet with at most one 802.1Q tag, Ethernet/IPv4 ARP, IPv4, UDP and ICMP.
//
// Parsers are bounds-checked and never panic; they return errors wrapping ErrShort,
// ErrBadLength or ErrUnsupported. Parsed addresses are copies, but Payload and
// Options slices alias the input buffer, so a caller that keeps them past the
// buffer's lifetime must copy them.
//
// Marshal methods never fail: length fields are derived from the payload, checksums
// are computed where the format requires one (IPv4 header, ICMP), and addresses of
// the wrong size are written as zeros. Frames are not padded to the 60-byte
// Ethernet minimum.
//
// The builders ARPReplyFrame, ARPRequestFrame, GARPFrame and ICMPEchoFrame produce
// complete Ethernet frames ready for an OpenFlow packet-out (docs/dataplane.md §2.5, §3.5,
// §3.8).
package packet
