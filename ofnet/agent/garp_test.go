package agent

import (
	"net"
	"os/exec"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/contiv/netplugin/ofnet/packet"
	"golang.org/x/sys/unix"
)

// sniffer is a raw packet socket on an interface inside a namespace.
type sniffer struct{ fd int }

func newSniffer(t *testing.T, netns, ifname string) *sniffer {
	n, err := ns.GetNS("/run/netns/" + netns)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	s := &sniffer{fd: -1}
	err = n.Do(func(ns.NetNS) error {
		ifi, err := net.InterfaceByName(ifname)
		if err != nil {
			return err
		}
		proto := uint16(unix.ETH_P_ALL)<<8 | uint16(unix.ETH_P_ALL)>>8
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, int(proto))
		if err != nil {
			return err
		}
		s.fd = fd
		tv := unix.NsecToTimeval(int64(200 * time.Millisecond))
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
			return err
		}
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: proto, Ifindex: ifi.Index})
	})
	if err != nil {
		t.Fatalf("sniffer on %s/%s: %v", netns, ifname, err)
	}
	t.Cleanup(func() { unix.Close(s.fd) })
	return s
}

// countGARPs reads for up to d and counts GARPs announcing ip from mac.
func (s *sniffer) countGARPs(ip net.IP, mac net.HardwareAddr, d time.Duration) int {
	n := 0
	buf := make([]byte, 2048)
	for end := time.Now().Add(d); time.Now().Before(end); {
		k, _, err := unix.Recvfrom(s.fd, buf, 0)
		if err != nil || k <= 0 {
			continue
		}
		eth, err := packet.ParseEthernet(buf[:k])
		if err != nil || eth.EtherType != packet.EtherTypeARP {
			continue
		}
		a, err := packet.ParseARP(eth.Payload)
		if err == nil && a.IsGratuitous() && a.SenderIP.Equal(ip) && a.SenderMAC.String() == mac.String() {
			n++
		}
	}
	return n
}

// TestGARPOnUplink (VLAN bridging): a new local endpoint is announced once on the
// uplink; InjectGARPs sends GARPRounds more.
func TestGARPOnUplink(t *testing.T) {
	h := startHost(t, DatapathVlan, "198.18.0.1")
	ctx := testCtx(t)
	if err := h.agent.AddNetwork(ctx, 10, 0, "", "t1"); err != nil {
		t.Fatal(err)
	}
	// The uplink is a veth whose far end sits in a namespace of its own.
	fabric := "agtf-" + randHex(4)
	run(t, "ip", "netns", "add", fabric)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", fabric).Run() })
	s := randHex(4)
	up, far := "up"+s, "fa"+s
	run(t, "ip", "link", "add", up, "type", "veth", "peer", "name", far)
	t.Cleanup(func() { _ = exec.Command("ip", "-n", h.ovs.NetNS, "link", "del", up).Run() })
	run(t, "ip", "link", "set", up, "netns", h.ovs.NetNS)
	run(t, "ip", "link", "set", far, "netns", fabric)
	run(t, "ip", "-n", h.ovs.NetNS, "link", "set", up, "up")
	run(t, "ip", "-n", fabric, "link", "set", far, "up")
	if out, err := h.ovs.Vsctl("add-port", h.bridge, up); err != nil {
		t.Fatalf("add uplink: %v: %s", err, out)
	}
	if err := h.agent.AddUplink(ctx, h.ofport(t, up), up); err != nil {
		t.Fatal(err)
	}
	sn := newSniffer(t, fabric, far)
	c := h.addContainer(t, "198.18.10.1", 24, 10, 0)
	if err := h.agent.AddLocalEndpoint(ctx, c.endpointInfo(10, 1)); err != nil {
		t.Fatal(err)
	}
	if n := sn.countGARPs(c.ip, c.mac, 2*time.Second); n != 1 {
		t.Fatalf("endpoint add: %d GARPs on the uplink, want 1", n)
	}
	h.agent.InjectGARPs(ctx, 1)
	if n := sn.countGARPs(c.ip, c.mac, 3*time.Second); n != 3 {
		t.Fatalf("InjectGARPs: %d GARPs, want %d rounds", n, 3)
	}
}
