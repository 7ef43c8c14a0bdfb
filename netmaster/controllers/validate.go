package controllers

import (
	"net/netip"

	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/netmaster/ipam"
	"github.com/contiv/netplugin/netmaster/resources"
)

// Validation of request fields that the kinds' field tables cannot
// express (a relation between two fields, or an address against a
// subnet). Every refusal is a 400 naming the field (docs/rest-errors.md)
// and comes before any side effect.

// checkGateways checks a new network's gateway against its parsed subnet
// sn, and its IPv6 gateway against its IPv6 subnet v6 (invalid when none).
func checkGateways(nw *contivmodel.Network, sn ipam.Subnet, v6 netip.Prefix) error {
	if nw.Gateway != "" {
		gw, err := netip.ParseAddr(nw.Gateway)
		switch {
		case err != nil || !gw.Is4():
			return contivmodel.Invalidf("gateway %q is not an IPv4 address", nw.Gateway)
		case !sn.Contains(gw):
			return contivmodel.Invalidf("gateway %s is outside subnet %s", gw, sn)
		case sn.Len < 31 && gw == sn.Base:
			return contivmodel.Invalidf("gateway %s is the network address of subnet %s", gw, sn)
		case sn.Len < 31 && gw == broadcast(sn):
			return contivmodel.Invalidf("gateway %s is the broadcast address of subnet %s", gw, sn)
		case sn.First != sn.Base || sn.Last != broadcast(sn):
			if gw.Less(sn.First) || sn.Last.Less(gw) {
				return contivmodel.Invalidf("gateway %s is outside the range %s of subnet %s", gw, sn.Range(), nw.Subnet)
			}
		}
	}
	if nw.Ipv6Gateway != "" {
		if !v6.IsValid() {
			return contivmodel.Invalidf("ipv6Gateway %s given without ipv6Subnet", nw.Ipv6Gateway)
		}
		gw, err := netip.ParseAddr(nw.Ipv6Gateway)
		switch {
		case err != nil || !gw.Is6() || gw.Is4In6() || gw.Zone() != "":
			return contivmodel.Invalidf("ipv6Gateway %q is not an IPv6 address", nw.Ipv6Gateway)
		case !v6.Contains(gw):
			return contivmodel.Invalidf("ipv6Gateway %s is outside ipv6Subnet %s", gw, v6)
		case v6.Bits() < 127 && gw == v6.Addr():
			return contivmodel.Invalidf("ipv6Gateway %s is the subnet-router address of ipv6Subnet %s", gw, v6)
		}
	}
	return nil
}

// broadcast is the last address of sn's CIDR.
func broadcast(sn ipam.Subnet) netip.Addr {
	b := sn.Base.As4()
	host := uint32(1)<<(32-sn.Len) - 1
	v := (uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])) | host
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// checkTagRanges checks the vlans and vxlans fields of a global object
// before anything compares them with the tags in use, so that a malformed
// range is reported as such (and not as a range that would drop tags).
func checkTagRanges(g *contivmodel.Global) error {
	if _, err := resources.ParseTagRanges(g.Vlans, resources.VLAN); err != nil {
		return contivmodel.Invalidf("vlans: %s", contivmodel.Message(err))
	}
	if _, err := resources.ParseTagRanges(g.Vxlans, resources.VXLAN); err != nil {
		return contivmodel.Invalidf("vxlans: %s", contivmodel.Message(err))
	}
	return nil
}
