package ovsdriver

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"golang.org/x/sys/unix"
)

// PathMTU is what ProbePathMTU found out about the underlay path to a peer VTEP.
type PathMTU struct {
	Peer string
	// Need is the size of the largest underlay packet VXLAN endpoints of this host
	// send: their MTU plus the 50 bytes of encapsulation.
	Need int
	// Reachable: the peer answered a small probe. Without that nothing is known.
	Reachable bool
	// OK: a probe of Need bytes that may not be fragmented was answered.
	OK bool
	// Problem says what is wrong when Reachable and not OK; it is meant for the log.
	Problem string
}

// ICMP message types and the "fragmentation needed" code.
const (
	icmpEchoReply   = 0
	icmpUnreachable = 3
	icmpEcho        = 8
	icmpFragNeeded  = 4
	ipv4HeaderLen   = 20
	icmpHeaderLen   = 8
	smallProbeLen   = 64
)

// ProbePathMTU checks that full-size VXLAN packets reach the peer VTEP remoteIP: it
// sends ICMP echo requests from the driver's namespace with the don't-fragment bit,
// a small one first and then one as large as the largest encapsulated packet this
// host's endpoints make (EndpointMTU + 50), and waits up to timeout for each (three
// tries each). A peer
// that answers the small probe but not the large one, a "fragmentation needed" answer
// or a local link that refuses the size is a path-MTU problem: encapsulated packets of
// that size would be dropped without a trace and TCP connections would stall.
func (d *Driver) ProbePathMTU(ctx context.Context, remoteIP string, timeout time.Duration) (PathMTU, error) {
	ip, err := parseVTEPIP(remoteIP)
	if err != nil {
		return PathMTU{}, err
	}
	mtu, err := EndpointMTU(d.nl, true)
	if err != nil {
		return PathMTU{}, err
	}
	res := PathMTU{Peer: ip, Need: mtu + vxlanOverhead}
	fd, err := d.icmpSocket()
	if err != nil {
		return res, err
	}
	defer unix.Close(fd)
	p := &prober{fd: fd, peer: netip.MustParseAddr(ip).As4()}
	var idb [2]byte
	rand.Read(idb[:])
	p.id = binary.BigEndian.Uint16(idb[:])

	// Each probe gets three tries (timeout each): a single loss, or a first
	// packet waiting for ARP, must not decide.
	for seq := uint16(1); !res.Reachable; seq++ {
		_, _, err := p.ping(ctx, seq, smallProbeLen, timeout)
		switch {
		case err == nil:
			res.Reachable = true
		case !errors.Is(err, errNoAnswer):
			return res, err
		case seq == 3:
			return res, nil
		}
	}
	for seq := uint16(10); seq < 13; seq++ {
		frag, nextMTU, err := p.ping(ctx, seq, res.Need, timeout)
		switch {
		case err == nil && !frag:
			res.OK = true
			return res, nil
		case err == nil && frag:
			res.Problem = fmt.Sprintf("a router on the path to VTEP %s needs fragmentation for %d-byte packets (next-hop MTU %d)", ip, res.Need, nextMTU)
			return res, nil
		case errors.Is(err, unix.EMSGSIZE):
			res.Problem = fmt.Sprintf("the route to VTEP %s leaves through a link whose MTU is below %d bytes", ip, res.Need)
			return res, nil
		case !errors.Is(err, errNoAnswer):
			return res, err
		}
	}
	res.Problem = fmt.Sprintf("VTEP %s answers %d-byte probes but not %d-byte ones: a link on the path drops packets of that size", ip, smallProbeLen, res.Need)
	return res, nil
}

// icmpSocket opens a raw ICMP socket in the driver's namespace that sets the
// don't-fragment bit and ignores the cached path MTU.
func (d *Driver) icmpSocket() (int, error) {
	fd := -1
	open := func() error {
		var err error
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_ICMP)
		return err
	}
	var err error
	if d.cfg.NetNSPath == "" {
		err = open()
	} else {
		err = ns.WithNetNSPath(d.cfg.NetNSPath, func(ns.NetNS) error { return open() })
	}
	if err != nil {
		return -1, fmt.Errorf("path MTU probe: ICMP socket: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_PROBE); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("path MTU probe: set don't-fragment: %w", err)
	}
	return fd, nil
}

var errNoAnswer = errors.New("ovsdriver: no answer")

type prober struct {
	fd   int
	peer [4]byte
	id   uint16
}

// ping sends one echo request of size bytes (IP header included) and waits for its
// reply or a "fragmentation needed" about it.
func (p *prober) ping(ctx context.Context, seq uint16, size int, timeout time.Duration) (frag bool, nextMTU int, err error) {
	msg := make([]byte, size-ipv4HeaderLen)
	msg[0] = icmpEcho
	binary.BigEndian.PutUint16(msg[4:], p.id)
	binary.BigEndian.PutUint16(msg[6:], seq)
	binary.BigEndian.PutUint16(msg[2:], inetChecksum(msg))
	if err := unix.Sendto(p.fd, msg, 0, &unix.SockaddrInet4{Addr: p.peer}); err != nil {
		return false, 0, fmt.Errorf("path MTU probe: send %d bytes: %w", size, err)
	}
	deadline := time.Now().Add(timeout)
	buf := make([]byte, 65536)
	for {
		left := time.Until(deadline)
		if left <= 0 || ctx.Err() != nil {
			return false, 0, errNoAnswer
		}
		tv := unix.NsecToTimeval(min(left, 100*time.Millisecond).Nanoseconds())
		if err := unix.SetsockoptTimeval(p.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
			return false, 0, fmt.Errorf("path MTU probe: %w", err)
		}
		n, from, err := unix.Recvfrom(p.fd, buf, 0)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return false, 0, fmt.Errorf("path MTU probe: receive: %w", err)
		}
		sa, ok := from.(*unix.SockaddrInet4)
		if !ok {
			continue
		}
		switch kind, mtu := p.classify(buf[:n], sa.Addr, seq); kind {
		case answerEcho:
			return false, 0, nil
		case answerFragNeeded:
			return true, mtu, nil
		}
	}
}

// Kinds of packets classify finds.
const (
	answerOther = iota
	answerEcho
	answerFragNeeded
)

// classify tells whether a received ICMP packet (IP header included) from address
// from is the reply to our echo request seq, or a "fragmentation needed" error about
// it (with the next-hop MTU it names). It accepts any bytes.
func (p *prober) classify(pkt []byte, from [4]byte, seq uint16) (kind, nextMTU int) {
	icmp, ok := stripIPv4(pkt)
	if !ok || len(icmp) < icmpHeaderLen {
		return answerOther, 0
	}
	switch {
	case icmp[0] == icmpEchoReply && from == p.peer &&
		binary.BigEndian.Uint16(icmp[4:]) == p.id && binary.BigEndian.Uint16(icmp[6:]) == seq:
		return answerEcho, 0
	case icmp[0] == icmpUnreachable && icmp[1] == icmpFragNeeded && p.quotesUs(icmp[icmpHeaderLen:], seq):
		return answerFragNeeded, int(binary.BigEndian.Uint16(icmp[6:]))
	}
	return answerOther, 0
}

// quotesUs reports whether an ICMP error quotes our echo request seq.
func (p *prober) quotesUs(quoted []byte, seq uint16) bool {
	inner, ok := stripIPv4(quoted)
	return ok && len(inner) >= icmpHeaderLen && inner[0] == icmpEcho &&
		binary.BigEndian.Uint16(inner[4:]) == p.id && binary.BigEndian.Uint16(inner[6:]) == seq &&
		[4]byte(quoted[16:20]) == p.peer
}

// stripIPv4 returns the payload of an IPv4 packet.
func stripIPv4(b []byte) ([]byte, bool) {
	if len(b) < ipv4HeaderLen || b[0]>>4 != 4 {
		return nil, false
	}
	hl := int(b[0]&0x0f) * 4
	if hl < ipv4HeaderLen || len(b) < hl {
		return nil, false
	}
	return b[hl:], true
}

// inetChecksum is the Internet checksum (RFC 1071) of b.
func inetChecksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}
