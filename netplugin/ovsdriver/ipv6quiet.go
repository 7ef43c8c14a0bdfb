package ovsdriver

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// addrGenModeNone is IN6_ADDR_GEN_MODE_NONE of linux/if_link.h: no
// automatic IPv6 addresses on the link.
const addrGenModeNone = 1

// quietIPv6 stops the kernel from giving the OVS side of an endpoint's
// veth an IPv6 link-local address (docs/dataplane-scale.md). That end is
// plumbing: nothing in this namespace talks over it, yet with an address
// the kernel runs duplicate address detection, router solicitations and
// MLD on it, and adds a link-local route and address whose events make
// ovs-vswitchd re-read the routing table, work that grows with the number
// of ports. It is called before the container side is up, while the link
// has no carrier and so no address yet. A kernel without IPv6 has nothing
// to quiet.
func (d *Driver) quietIPv6(name string) error {
	link, err := d.nl.LinkByName(name)
	if err != nil {
		return fmt.Errorf("look up link %q: %w", name, err)
	}
	err = d.nl.LinkSetIP6AddrGenMode(link, addrGenModeNone)
	if err != nil && !ipv6Unsupported(err) {
		return fmt.Errorf("turn off IPv6 addresses of %q: %w", name, err)
	}
	return nil
}

// ipv6Unsupported reports the errors of a kernel or namespace without
// IPv6.
func ipv6Unsupported(err error) bool {
	for _, e := range []error{unix.EAFNOSUPPORT, unix.EOPNOTSUPP, unix.EPROTONOSUPPORT} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
