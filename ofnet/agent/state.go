package agent

import (
	"fmt"
	"net"
	"time"

	"github.com/contiv/netplugin/ofnet/ofctrl"
	"github.com/contiv/netplugin/ofnet/ofrpc"
)

// network is one network known to the agent (AddNetwork).
type network struct {
	Vlan    uint16
	Vni     uint32
	Gateway net.IP
	Vrf     string
}

// vrfRef is a VRF name's host-local id and how many networks use it.
type vrfRef struct {
	ID   uint8
	Refs int
}

// localEndpoint is a container port on this bridge as given to AddLocalEndpoint.
type localEndpoint struct {
	EndpointInfo
	pushed *ofrpc.OfnetEndpoint // as last pushed to the masters (nil: not yet)
}

// EndpointInfo describes a local endpoint.
type EndpointInfo struct {
	EndpointID        string // optional; default "<IPv4>:<vrf>"
	PortNo            uint32
	MacAddr           net.HardwareAddr
	Vlan              uint16 // network vlan
	IpAddr, Ipv6Addr  net.IP
	EndpointGroup     int
	EndpointGroupVlan uint16
	Dscp              int
	// RateKbps > 0 limits what the endpoint sends to RateKbps kbit/s, with a burst of
	// BurstKb kbit (0: the switch's default), through an OpenFlow meter on its port:
	// the userspace datapath ignores the OVSDB ingress policing (docs/traffic.md).
	RateKbps, BurstKb uint32
}

func (e EndpointInfo) validate() error {
	switch {
	case e.PortNo == 0:
		return fmt.Errorf("agent: endpoint: port number 0")
	case len(e.MacAddr) != 6:
		return fmt.Errorf("agent: endpoint on port %d: MAC %v is not a 6-byte MAC", e.PortNo, e.MacAddr)
	case e.IpAddr == nil || e.IpAddr.To4() == nil:
		return fmt.Errorf("agent: endpoint on port %d: IPv4 address %v required", e.PortNo, e.IpAddr)
	case e.Vlan == 0 || e.Vlan > 4094:
		return fmt.Errorf("agent: endpoint on port %d: network vlan %d out of 1..4094", e.PortNo, e.Vlan)
	case e.EndpointGroup < 0 || e.EndpointGroup > 0x7fff:
		return fmt.Errorf("agent: endpoint on port %d: EPG id %d out of 0..32767", e.PortNo, e.EndpointGroup)
	case e.Dscp < 0 || e.Dscp > 63:
		return fmt.Errorf("agent: endpoint on port %d: DSCP %d out of 0..63", e.PortNo, e.Dscp)
	case e.Ipv6Addr != nil && e.Ipv6Addr.To4() != nil:
		return fmt.Errorf("agent: endpoint on port %d: Ipv6Addr %v is IPv4", e.PortNo, e.Ipv6Addr)
	}
	return nil
}

func sameEndpointInfo(a, b EndpointInfo) bool {
	return a.EndpointID == b.EndpointID && a.PortNo == b.PortNo && a.MacAddr.String() == b.MacAddr.String() &&
		a.Vlan == b.Vlan && a.IpAddr.Equal(b.IpAddr) && a.Ipv6Addr.Equal(b.Ipv6Addr) &&
		a.EndpointGroup == b.EndpointGroup && a.EndpointGroupVlan == b.EndpointGroupVlan && a.Dscp == b.Dscp &&
		a.RateKbps == b.RateKbps && a.BurstKb == b.BurstKb
}

// endpoint is the resolved view of a local or remote endpoint that the features build
// flows from: only endpoints whose network (and, for remote ones in VXLAN modes, VTEP)
// is known resolve.
type endpoint struct {
	ID      string
	Local   bool
	Port    uint32 // local: its port; remote: the VTEP port (vxlan modes)
	MAC     net.HardwareAddr
	IP      net.IP
	IPv6    net.IP
	Vlan    uint16 // local network vlan
	Vni     uint32
	VrfID   uint8
	Vrf     string
	EPG     int
	EPGVlan uint16
	Dscp    int
	// Meter limits a local endpoint's traffic (zero RateKbps: none).
	Meter ofctrl.Meter
}

// endpointID returns the endpoint id of a local endpoint in a network's VRF.
func endpointID(ep EndpointInfo, vrf string) string {
	if ep.EndpointID != "" {
		return ep.EndpointID
	}
	return ep.IpAddr.String() + ":" + vrf
}

// toRPC converts a resolved local endpoint into the form masters store.
func (a *Agent) toRPC(ep endpoint, now time.Time) ofrpc.OfnetEndpoint {
	out := ofrpc.OfnetEndpoint{
		EndpointID:        ep.ID,
		EndpointType:      ofrpc.EndpointTypeInternal,
		EndpointGroup:     ep.EPG,
		IpAddr:            ep.IP,
		IpMask:            net.IPv4(255, 255, 255, 255),
		Vrf:               ep.Vrf,
		MacAddrStr:        ep.MAC.String(),
		Vlan:              ep.Vlan,
		Vni:               ep.Vni,
		EndpointGroupVlan: ep.EPGVlan,
		OriginatorIp:      a.cfg.LocalIP,
		OriginatorPort:    a.cfg.RPCPort,
		Timestamp:         now,
	}
	if a.vlanDatapath() {
		out.OriginatorMac = a.cfg.UplinkMAC
	}
	if ep.IPv6 != nil {
		out.Ipv6Addr = ep.IPv6
		out.Ipv6Mask = net.IP(net.CIDRMask(128, 128))
	}
	return out
}
