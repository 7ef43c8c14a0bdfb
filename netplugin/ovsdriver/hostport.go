package ovsdriver

import (
	"context"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"

	"github.com/contiv/netplugin/ofnet/ovsdb"
)

const (
	// HostPortName is the host access port on the VXLAN bridge.
	HostPortName = "contivh0"
	// hostPortTag is its access VLAN (docs/dataplane.md §0).
	hostPortTag = 2
	// hostPortNum is its number in the host-private subnet.
	hostPortNum = 0xfffe
)

// PrivateAddr is the host-private address of port number n in the /16
// pvtSubnet and its MAC, 02:02 followed by the address (docs/dataplane.md
// §1.5), e.g. 172.19.255.254/16 and 02:02:ac:13:ff:fe for n = 0xfffe.
func PrivateAddr(pvtSubnet string, n int) (*net.IPNet, net.HardwareAddr, error) {
	pfx, err := netip.ParsePrefix(pvtSubnet)
	if err != nil || !pfx.Addr().Is4() || pfx.Bits() != 16 {
		return nil, nil, fmt.Errorf("%w: private subnet %q is not an IPv4 /16", ErrInvalid, pvtSubnet)
	}
	if n < 0 || n > 0xffff {
		return nil, nil, fmt.Errorf("%w: private address number %d", ErrInvalid, n)
	}
	b := pfx.Masked().Addr().As4()
	b[2], b[3] = byte(n>>8), byte(n)
	ipn := &net.IPNet{IP: net.IP(b[:]).To4(), Mask: net.CIDRMask(16, 32)}
	mac := net.HardwareAddr{0x02, 0x02, b[0], b[1], b[2], b[3]}
	return ipn, mac, nil
}

// EnsureHostPort makes sure the VXLAN bridge has the internal port contivh0
// (access tag 2, endpoint-id hostcontivh0) and that the Linux interface has
// the host-private address and MAC of number 0xfffe in pvtSubnet and is up.
// It adds no NAT rule: host NAT is netplugin/hostnat's, only where host access
// is asked for (docs/dataplane.md §3.7). Idempotent; a contivh0 port of
// another type is refused (ErrMismatch).
func (d *Driver) EnsureHostPort(ctx context.Context, pvtSubnet string) (EndpointPort, error) {
	addr, mac, err := PrivateAddr(pvtSubnet, hostPortNum)
	if err != nil {
		return EndpointPort{}, fmt.Errorf("ensure host port: %w", err)
	}
	ids := map[string]string{endpointIDKey: hostEndpointID}
	err = d.ovs.CreatePort(ctx, VxlanBridge, ovsdb.PortSpec{Name: HostPortName, Type: "internal", Tag: hostPortTag,
		ExternalIDs: ids, InterfaceExternalIDs: ids})
	if err != nil {
		return EndpointPort{}, fmt.Errorf("ensure host port: %w", err)
	}
	res := EndpointPort{EndpointID: hostEndpointID, PortName: HostPortName, IntfName: HostPortName}
	if res.OFPort, err = d.ofport(ctx, HostPortName); err != nil {
		return EndpointPort{}, fmt.Errorf("ensure host port: %w", err)
	}
	link, err := d.waitLink(ctx, HostPortName)
	if err != nil {
		return EndpointPort{}, fmt.Errorf("ensure host port: %w", err)
	}
	if !equalMAC(link.Attrs().HardwareAddr, mac) {
		if err := d.nl.LinkSetHardwareAddr(link, mac); err != nil {
			return EndpointPort{}, fmt.Errorf("ensure host port: set MAC %s: %w", mac, err)
		}
	}
	if err := d.nl.AddrReplace(link, &netlink.Addr{IPNet: addr}); err != nil {
		return EndpointPort{}, fmt.Errorf("ensure host port: set address %s: %w", addr, err)
	}
	if err := d.nl.LinkSetUp(link); err != nil {
		return EndpointPort{}, fmt.Errorf("ensure host port: set up: %w", err)
	}
	return res, nil
}

func equalMAC(a, b net.HardwareAddr) bool { return a.String() == b.String() }
