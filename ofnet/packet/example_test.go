package packet_test

import (
	"fmt"
	"net"

	"github.com/contiv/netplugin/ofnet/packet"
)

// An ARP request arrives in a packet-in; the agent answers with a proxy reply.
func ExampleARPReplyFrame() {
	requester, _ := net.ParseMAC("02:02:c6:12:00:02")
	in := packet.ARPRequestFrame(requester, net.ParseIP("198.18.0.2"), net.ParseIP("198.18.0.3"), 100)

	eth, err := packet.ParseEthernet(in)
	if err != nil || eth.EtherType != packet.EtherTypeARP {
		return
	}
	req, err := packet.ParseARP(eth.Payload)
	if err != nil || req.Op != packet.ARPRequest || req.IsGratuitous() {
		return
	}
	target, _ := net.ParseMAC("02:02:c6:12:00:03")
	out := packet.ARPReplyFrame(eth, req, target)

	replyEth, _ := packet.ParseEthernet(out)
	reply, _ := packet.ParseARP(replyEth.Payload)
	fmt.Printf("vlan %d, %s -> %s\n", replyEth.VLAN, replyEth.Src, replyEth.Dst)
	fmt.Printf("op %d: %s is at %s (to %s)\n", reply.Op, reply.SenderIP, reply.SenderMAC, reply.TargetIP)
	// Output:
	// vlan 100, 02:02:c6:12:00:03 -> 02:02:c6:12:00:02
	// op 2: 198.18.0.3 is at 02:02:c6:12:00:03 (to 198.18.0.2)
}
