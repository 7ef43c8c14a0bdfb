package packet

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/containernetworking/plugins/pkg/testutils"
	"github.com/vishvananda/netlink"
)

// Interop with the Linux network stack: frames built here are written into one end of a
// veth pair (an AF_PACKET socket) in a private namespace; the kernel owns the other end
// and answers, and its answers are decoded with this package.

// kernelPeer is a veth pair in a private namespace: the kernel side has an address,
// the test side is a raw socket.
type kernelPeer struct {
	netns     ns.NetNS
	kernel    netlink.Link // kernel end
	kernelIP  net.IP
	testMAC   net.HardwareAddr
	testIP    net.IP // the test end's address in the kernel side's /24
	ifindex   int    // of the test end
	fd        int    // packet socket on the test end
	subnetOct byte   // third octet of the /24
}

// requireComponent fails when CI=true and skips otherwise, like the project's Require helpers.
func RequireComponent(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is required in CI: %v", what, err)
	}
	t.Skipf("%s not available: %v", what, err)
}

func newKernelPeer(t *testing.T) *kernelPeer {
	t.Helper()
	if os.Geteuid() != 0 {
		RequireComponent(t, "root (network namespaces)", errors.New("not running as root"))
	}
	netns, err := testutils.NewNS()
	RequireComponent(t, "a private network namespace", err)
	t.Cleanup(func() {
		_ = netns.Close()
		_ = testutils.UnmountNS(netns)
	})

	var suffix [3]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		t.Fatal(err)
	}
	prefix := "pkt" + hex.EncodeToString(suffix[:2]) // "pktXXXX" + one letter: 8 chars
	p := &kernelPeer{
		netns:     netns,
		subnetOct: suffix[2],
		testMAC:   net.HardwareAddr{0x02, 0x02, 0xc6, 0x13, suffix[2], 0x02},
		kernelIP:  net.IPv4(198, 19, suffix[2], 1).To4(),
		testIP:    net.IPv4(198, 19, suffix[2], 2).To4(),
	}
	err = netns.Do(func(ns.NetNS) error {
		veth := &netlink.Veth{
			LinkAttrs: netlink.LinkAttrs{Name: prefix + "k"},
			PeerName:  prefix + "t", PeerHardwareAddr: p.testMAC,
		}
		if err := netlink.LinkAdd(veth); err != nil {
			return fmt.Errorf("add veth %q: %w", veth.Name, err)
		}
		k, err := netlink.LinkByName(prefix + "k")
		if err != nil {
			return fmt.Errorf("find %q: %w", prefix+"k", err)
		}
		tl, err := netlink.LinkByName(prefix + "t")
		if err != nil {
			return fmt.Errorf("find %q: %w", prefix+"t", err)
		}
		addr := &netlink.Addr{IPNet: &net.IPNet{IP: p.kernelIP, Mask: net.CIDRMask(24, 32)}}
		if err := netlink.AddrAdd(k, addr); err != nil {
			return fmt.Errorf("add %s to %q: %w", addr, k.Attrs().Name, err)
		}
		for _, l := range []netlink.Link{k, tl} {
			if err := netlink.LinkSetUp(l); err != nil {
				return fmt.Errorf("set %q up: %w", l.Attrs().Name, err)
			}
		}
		if k, err = netlink.LinkByName(prefix + "k"); err != nil { // refresh the MAC
			return fmt.Errorf("find %q: %w", prefix+"k", err)
		}
		p.kernel, p.ifindex = k, tl.Attrs().Index
		p.fd, err = openPacketSocket(p.ifindex)
		return err
	})
	if err != nil {
		t.Fatalf("set up veth pair: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Close(p.fd) })
	return p
}

// openPacketSocket opens a raw packet socket on ifindex. Run inside the namespace.
func openPacketSocket(ifindex int) (fd int, err error) {
	const ethPAll = 0x0003
	fd, err = syscall.Socket(syscall.AF_PACKET, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, int(htons(ethPAll)))
	if err != nil {
		return -1, fmt.Errorf("packet socket: %w", err)
	}
	defer func() {
		if err != nil {
			_ = syscall.Close(fd)
			fd = -1
		}
	}()
	if err := syscall.Bind(fd, &syscall.SockaddrLinklayer{Protocol: htons(ethPAll), Ifindex: ifindex}); err != nil {
		return fd, fmt.Errorf("bind packet socket: %w", err)
	}
	// The kernel hands VLAN tags to packet sockets out of band; ask for them.
	if err := syscall.SetsockoptInt(fd, syscall.SOL_PACKET, packetAuxdata, 1); err != nil {
		return fd, fmt.Errorf("PACKET_AUXDATA: %w", err)
	}
	tv := syscall.NsecToTimeval((200 * time.Millisecond).Nanoseconds())
	if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv); err != nil {
		return fd, fmt.Errorf("SO_RCVTIMEO: %w", err)
	}
	return fd, nil
}

// packetAuxdata is PACKET_AUXDATA from linux/if_packet.h (not in package syscall).
const packetAuxdata = 8

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func (p *kernelPeer) send(t *testing.T, frame []byte) {
	t.Helper()
	if err := syscall.Sendto(p.fd, frame, 0, &syscall.SockaddrLinklayer{Ifindex: p.ifindex}); err != nil {
		t.Fatalf("send %x: %v", frame, err)
	}
}

// receive returns the first frame arriving at the test end for which match returns
// true, with any 802.1Q tag the kernel passed out of band put back in place. It gives
// up after a bounded number of reads.
func (p *kernelPeer) receive(t *testing.T, what string, match func(*Ethernet) bool) *Ethernet {
	t.Helper()
	return receiveFrame(t, p.fd, what, match)
}

// receiveFrame is kernelPeer.receive on any packet socket.
func receiveFrame(t *testing.T, fd int, what string, match func(*Ethernet) bool) *Ethernet {
	t.Helper()
	buf := make([]byte, 2048)
	oob := make([]byte, 256)
	deadline := time.Now().Add(10 * time.Second)
	var seen []string
	for i := 0; i < 1000 && time.Now().Before(deadline); i++ {
		n, oobn, _, _, err := syscall.Recvmsg(fd, buf, oob, 0)
		if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			t.Fatalf("receive: %v", err)
		}
		frame := withOutOfBandTag(t, buf[:n], oob[:oobn])
		e, err := ParseEthernet(frame)
		if err != nil {
			t.Fatalf("kernel frame %x does not parse: %v", frame, err)
		}
		if match(e) {
			return e
		}
		seen = append(seen, fmt.Sprintf("%x", frame))
	}
	t.Fatalf("no %s from the kernel; other frames seen: %q", what, seen)
	return nil
}

// withOutOfBandTag re-inserts the VLAN tag reported in PACKET_AUXDATA, as libpcap does.
func withOutOfBandTag(t *testing.T, frame, oob []byte) []byte {
	t.Helper()
	const (
		statusVLANValid     = 1 << 4 // TP_STATUS_VLAN_VALID
		statusVLANTPIDValid = 1 << 6 // TP_STATUS_VLAN_TPID_VALID
	)
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		t.Fatalf("control messages: %v", err)
	}
	for _, m := range msgs {
		// struct tpacket_auxdata: status, len, snaplen u32; mac, net, vlan_tci, vlan_tpid u16.
		if m.Header.Level != syscall.SOL_PACKET || m.Header.Type != packetAuxdata || len(m.Data) < 20 {
			continue
		}
		status := binary.NativeEndian.Uint32(m.Data[0:4])
		if status&statusVLANValid == 0 || len(frame) < 12 {
			return frame
		}
		tpid := uint16(EtherTypeVLAN)
		if status&statusVLANTPIDValid != 0 {
			tpid = binary.NativeEndian.Uint16(m.Data[18:20])
		}
		tagged := append([]byte(nil), frame[:12]...)
		tagged = binary.BigEndian.AppendUint16(tagged, tpid)
		tagged = binary.BigEndian.AppendUint16(tagged, binary.NativeEndian.Uint16(m.Data[16:18]))
		return append(tagged, frame[12:]...)
	}
	return frame
}

func isARP(op uint16, senderIP net.IP) func(*Ethernet) bool {
	return func(e *Ethernet) bool {
		if e.EtherType != EtherTypeARP {
			return false
		}
		a, err := ParseARP(e.Payload)
		return err == nil && a.Op == op && a.SenderIP.Equal(senderIP)
	}
}

// TestKernelAnswersARPRequestFrame: the kernel accepts ARPRequestFrame and its reply
// parses to the expected addresses.
func TestKernelAnswersARPRequestFrame(t *testing.T) {
	p := newKernelPeer(t)
	p.send(t, ARPRequestFrame(p.testMAC, p.testIP, p.kernelIP, 0))

	e := p.receive(t, "ARP reply", isARP(ARPReply, p.kernelIP))
	a, _ := ParseARP(e.Payload)
	kmac := p.kernel.Attrs().HardwareAddr
	if e.HasTag() || !bytes.Equal(e.Dst, p.testMAC) || !bytes.Equal(e.Src, kmac) {
		t.Fatalf("reply ethernet: %+v", e)
	}
	if !bytes.Equal(a.SenderMAC, kmac) || !bytes.Equal(a.TargetMAC, p.testMAC) || !a.TargetIP.Equal(p.testIP) {
		t.Fatalf("reply arp: %+v, kernel MAC %s", a, kmac)
	}
}

// TestKernelDecodesVLANTag: the kernel's own 802.1Q decoder (which moves the tag of
// every received frame out of band, into PACKET_AUXDATA) reads the same VLAN, PCP and
// DEI that Marshal wrote. (This kernel has neither 8021q nor bridge VLAN filtering, so
// a tagged frame cannot be answered; reading the tag is what can be checked.)
func TestKernelDecodesVLANTag(t *testing.T) {
	p := newKernelPeer(t)
	var kfd int
	err := p.netns.Do(func(ns.NetNS) error {
		var err error
		kfd, err = openPacketSocket(p.kernel.Attrs().Index)
		return err
	})
	if err != nil {
		t.Fatalf("socket on the kernel end: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Close(kfd) })

	frames := []*Ethernet{
		{Dst: broadcastMAC(), Src: p.testMAC, Tagged: true, VLAN: 4093, EtherType: EtherTypeARP,
			Payload: (&ARP{Op: ARPRequest, SenderMAC: p.testMAC, SenderIP: p.testIP, TargetIP: p.testIP}).Marshal()},
		{Dst: broadcastMAC(), Src: p.testMAC, Tagged: true, VLAN: 10, PCP: 5, DEI: true, EtherType: EtherTypeARP,
			Payload: (&ARP{Op: ARPRequest, SenderMAC: p.testMAC, SenderIP: p.testIP, TargetIP: p.kernelIP}).Marshal()},
		{Dst: broadcastMAC(), Src: p.testMAC, Tagged: true, PCP: 7, EtherType: EtherTypeARP,
			Payload: (&ARP{Op: ARPReply, SenderMAC: p.testMAC, SenderIP: p.testIP, TargetIP: p.kernelIP}).Marshal()},
	}
	for _, want := range frames {
		sent := want.Marshal()
		p.send(t, sent)
		got := receiveFrame(t, kfd, fmt.Sprintf("the frame %x", sent), func(e *Ethernet) bool {
			return e.EtherType == EtherTypeARP && bytes.Equal(e.Payload, want.Payload)
		})
		if !reflect.DeepEqual(got, want) {
			t.Errorf("kernel view of %x:\n got %+v\nwant %+v", sent, got, want)
		}
	}
}

// TestKernelPingThroughARPReplyFrame: the kernel accepts an ICMPEchoFrame (so both
// checksums are right), asks for our MAC with an ARP request we parse, accepts the
// ARPReplyFrame answer, and sends an echo reply that parses with valid checksums.
func TestKernelPingThroughARPReplyFrame(t *testing.T) {
	p := newKernelPeer(t)
	kmac := p.kernel.Attrs().HardwareAddr
	// A fresh source address, so the kernel has no neighbour entry and must ask.
	ourIP := net.IPv4(198, 19, p.subnetOct, 3).To4()
	data := []byte("ofnet/packet interop")
	p.send(t, ICMPEchoFrame(Echo{SrcMAC: p.testMAC, DstMAC: kmac, SrcIP: ourIP, DstIP: p.kernelIP,
		ID: 0x4242, Seq: 7, Data: data}))

	reqEth := p.receive(t, "ARP request for our address", func(e *Ethernet) bool {
		if !isARP(ARPRequest, p.kernelIP)(e) {
			return false
		}
		a, _ := ParseARP(e.Payload)
		return a.TargetIP.Equal(ourIP)
	})
	req, err := ParseARP(reqEth.Payload)
	if err != nil {
		t.Fatal(err)
	}
	if req.IsGratuitous() || !bytes.Equal(req.SenderMAC, kmac) {
		t.Fatalf("kernel ARP request: %+v", req)
	}
	p.send(t, ARPReplyFrame(reqEth, req, p.testMAC))

	e := p.receive(t, "ICMP echo reply", func(e *Ethernet) bool {
		if e.EtherType != EtherTypeIPv4 {
			return false
		}
		ip, err := ParseIPv4(e.Payload)
		return err == nil && ip.Protocol == ProtoICMP && ip.Src.Equal(p.kernelIP)
	})
	if !bytes.Equal(e.Dst, p.testMAC) {
		t.Fatalf("echo reply sent to %s, want %s", e.Dst, p.testMAC)
	}
	ip, _ := ParseIPv4(e.Payload)
	if !IPv4ChecksumOK(e.Payload) || !ip.Dst.Equal(ourIP) {
		t.Fatalf("echo reply ipv4: %+v", ip)
	}
	m, err := ParseICMP(ip.Payload)
	if err != nil || !ICMPChecksumOK(ip.Payload) {
		t.Fatalf("echo reply icmp: %+v, %v", m, err)
	}
	if m.Type != ICMPTypeEchoReply || m.EchoID() != 0x4242 || m.EchoSeq() != 7 || !bytes.Equal(m.Payload, data) {
		t.Fatalf("echo reply: %+v", m)
	}
}
