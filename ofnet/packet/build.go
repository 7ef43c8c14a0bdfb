package packet

import "net"

// broadcastMAC returns a fresh ff:ff:ff:ff:ff:ff.
func broadcastMAC() net.HardwareAddr {
	return net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
}

// ARPReplyFrame builds the proxy reply to the ARP request req received in reqEth
// (docs/dataplane.md §3.5 step 8): Ethernet dst = the request's source MAC, src = mac,
// the request's 802.1Q tag (VLAN, PCP, DEI) copied; ARP op 2 with sender =
// (mac, req.TargetIP) and target = (req.SenderMAC, req.SenderIP). A nil reqEth
// gives an untagged frame addressed to req.SenderMAC.
func ARPReplyFrame(reqEth *Ethernet, req *ARP, mac net.HardwareAddr) []byte {
	reply := &ARP{
		Op:        ARPReply,
		SenderMAC: mac,
		SenderIP:  req.TargetIP,
		TargetMAC: req.SenderMAC,
		TargetIP:  req.SenderIP,
	}
	eth := &Ethernet{Dst: req.SenderMAC, Src: mac, EtherType: EtherTypeARP, Payload: reply.Marshal()}
	if reqEth != nil {
		eth.Dst = reqEth.Src
		eth.VLAN, eth.PCP, eth.DEI, eth.Tagged = reqEth.VLAN, reqEth.PCP, reqEth.DEI, reqEth.Tagged
	}
	return eth.Marshal()
}

// ARPRequestFrame builds a broadcast ARP request from (srcMAC, srcIP) for targetIP,
// target MAC zero, tagged with vlan when it is non-zero.
func ARPRequestFrame(srcMAC net.HardwareAddr, srcIP, targetIP net.IP, vlan uint16) []byte {
	req := &ARP{
		Op:        ARPRequest,
		SenderMAC: srcMAC,
		SenderIP:  srcIP,
		TargetMAC: make(net.HardwareAddr, macLen),
		TargetIP:  targetIP,
	}
	eth := &Ethernet{Dst: broadcastMAC(), Src: srcMAC, VLAN: vlan, EtherType: EtherTypeARP, Payload: req.Marshal()}
	return eth.Marshal()
}

// GARPFrame builds the gratuitous ARP announcing ip at mac (docs/dataplane.md §3.8): a
// broadcast ARP request with sender = target = ip, sender MAC mac, target MAC zero,
// tagged with vlan when it is non-zero.
func GARPFrame(mac net.HardwareAddr, ip net.IP, vlan uint16) []byte {
	return ARPRequestFrame(mac, ip, ip, vlan)
}

// Echo describes an ICMP echo frame for ICMPEchoFrame.
type Echo struct {
	SrcMAC, DstMAC net.HardwareAddr
	SrcIP, DstIP   net.IP
	// VLAN tags the frame when non-zero.
	VLAN    uint16
	ID, Seq uint16
	// Data is the echo payload; at most 65507 bytes, so the packet fits IPv4.
	Data []byte
	// Reply builds an echo reply instead of a request.
	Reply bool
}

// ICMPEchoFrame builds an Ethernet/IPv4/ICMP echo request (or reply) with TTL 64 and
// correct IPv4 and ICMP checksums.
func ICMPEchoFrame(e Echo) []byte {
	msg := &ICMP{Type: ICMPTypeEchoRequest, Rest: uint32(e.ID)<<16 | uint32(e.Seq), Payload: e.Data}
	if e.Reply {
		msg.Type = ICMPTypeEchoReply
	}
	ip := &IPv4{TTL: 64, Protocol: ProtoICMP, Src: e.SrcIP, Dst: e.DstIP, Payload: msg.Marshal()}
	eth := &Ethernet{Dst: e.DstMAC, Src: e.SrcMAC, VLAN: e.VLAN, EtherType: EtherTypeIPv4, Payload: ip.Marshal()}
	return eth.Marshal()
}
