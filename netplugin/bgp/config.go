// Package bgp is netplugin's BGP speaker for VLAN routing (docs/dataplane.md §3.4,
// docs/daemons.md §4.13), built on GoBGP: it peers with the top-of-rack router
// configured by `netctl bgp create`, announces the host's local endpoints as /32s
// with the router address as next hop, and reports the routes it learns.
package bgp

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/contiv/netplugin/state"
)

// Config is one host's BGP configuration, parsed from state/bgp/<host>.
type Config struct {
	RouterIP   netip.Prefix // the host's router address and its subnet (router-ip)
	AS         uint32
	Neighbor   netip.Addr
	NeighborAS uint32
}

// ParseConfig checks a stored BGP object and returns its configuration; the
// error names the field that is wrong.
func ParseConfig(b state.Bgp) (Config, error) {
	var c Config
	var err error
	if c.RouterIP, err = netip.ParsePrefix(strings.TrimSpace(b.RouterIP)); err != nil || !c.RouterIP.Addr().Is4() || c.RouterIP.Bits() == 32 {
		return Config{}, fmt.Errorf("bgp %s: router-ip %q: want an IPv4 address with its subnet length, e.g. 198.18.50.11/24", b.Hostname, b.RouterIP)
	}
	if c.Neighbor, err = netip.ParseAddr(strings.TrimSpace(b.Neighbor)); err != nil || !c.Neighbor.Is4() {
		return Config{}, fmt.Errorf("bgp %s: neighbor %q: want an IPv4 address", b.Hostname, b.Neighbor)
	}
	if !c.RouterIP.Contains(c.Neighbor) || c.Neighbor == c.RouterIP.Addr() {
		return Config{}, fmt.Errorf("bgp %s: neighbor %s is not another address of router-ip's subnet %s", b.Hostname, c.Neighbor, c.RouterIP.Masked())
	}
	if c.AS, err = parseAS(b.As); err != nil {
		return Config{}, fmt.Errorf("bgp %s: as: %w", b.Hostname, err)
	}
	if c.NeighborAS, err = parseAS(b.NeighborAs); err != nil {
		return Config{}, fmt.Errorf("bgp %s: neighbor-as: %w", b.Hostname, err)
	}
	return c, nil
}

// parseAS accepts a 4-byte AS number, 1..4294967294 (0 and 4294967295 are
// reserved, RFC 7300).
func parseAS(s string) (uint32, error) {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 32)
	if err != nil || n == 0 || n == 4294967295 {
		return 0, fmt.Errorf("%q is not an AS number (1-4294967294)", s)
	}
	return uint32(n), nil
}
