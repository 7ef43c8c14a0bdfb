package ipam

import (
	"net/netip"

	"github.com/contiv/netplugin/netmaster/ipam/v4store"
)

// Subnet is a parsed IPv4 network definition (v4store.Subnet).
type Subnet = v4store.Subnet

// Usage counts a pool's allocatable addresses (v4store.Usage).
type Usage = v4store.Usage

// ParseSubnet parses and checks a network's IPv4 subnet
// (v4store.ParseSubnet).
func ParseSubnet(s string) (Subnet, error) { return v4store.ParseSubnet(s) }

// ParsePool parses and checks an endpoint group's IPv4 pool inside network
// (v4store.ParsePool).
func ParsePool(network Subnet, pool string) (first, last netip.Addr, err error) {
	return v4store.ParsePool(network, pool)
}
