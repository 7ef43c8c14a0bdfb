package ovsdriver

import (
	"fmt"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// linkNS is a namespace the container side of an endpoint's veth is
// created in: a netlink handle in it, its path (for ethtool, "" for the
// process's own) and, for one opened here, its file descriptor (-1 for
// the driver's own namespace).
type linkNS struct {
	nl   *netlink.Handle
	path string
	fd   int
	ns   netns.NsHandle
}

// openLinkNS opens the namespace at path; close releases it.
func openLinkNS(path string) (linkNS, error) {
	h, err := netns.GetFromPath(path)
	if err != nil {
		return linkNS{}, fmt.Errorf("open netns %q: %w", path, err)
	}
	nl, err := netlink.NewHandleAt(h)
	if err != nil {
		h.Close()
		return linkNS{}, fmt.Errorf("netlink handle in netns %q: %w", path, err)
	}
	return linkNS{nl: nl, path: path, fd: int(h), ns: h}, nil
}

func (l linkNS) close() {
	l.nl.Close()
	l.ns.Close()
}
