package ovsdriver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
)

const (
	// linkWait bounds the wait for an interface ovs-vswitchd creates
	// (internal ports) to show up in the kernel.
	linkWait = 10 * time.Second
	linkPoll = 50 * time.Millisecond
	// startMTU is EndpointMTU's ceiling.
	startMTU = 9000
	// vxlanOverhead is what VXLAN encapsulation costs on the underlay.
	vxlanOverhead = 50
)

// waitLink returns the link called name, waiting a bounded time for it to
// appear.
func (d *Driver) waitLink(ctx context.Context, name string) (netlink.Link, error) {
	ctx, cancel := context.WithTimeout(ctx, linkWait)
	defer cancel()
	for {
		link, err := d.nl.LinkByName(name)
		var nf netlink.LinkNotFoundError
		if err == nil {
			return link, nil
		}
		if !errors.As(err, &nf) {
			return nil, fmt.Errorf("look up link %q: %w", name, err)
		}
		t := time.NewTimer(linkPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("link %q did not appear: %w", name, ctx.Err())
		case <-t.C:
		}
	}
}

// mtuIgnoredPrefixes are links EndpointMTU does not consider. Besides the
// spec's docker/veth/vport/lo it skips the driver's own vvport ends, whose
// MTU says nothing about the underlay.
var mtuIgnoredPrefixes = []string{"docker", "veth", "vport", "vvport", "lo"}

// mtuIgnoredNames are the contiv bridges' own interfaces and the host
// port contivh0, internal ports all: on the userspace datapath
// ovs-vswitchd gives an internal port without mtu_request the lowest MTU
// of its bridge's other ports, endpoint ports included, so counting them
// would give every new VXLAN endpoint 50 bytes less than the one before
// (docs/traffic.md, "Jumbo underlay"). The kernel cuts names to 15
// characters. ovs-netdev and ovs-system, the datapaths' own devices (down,
// at the kernel's 1500), carry no traffic either.
var mtuIgnoredNames = []string{kernelIfName(VxlanBridge), kernelIfName(VlanBridge), HostPortName, "ovs-netdev", "ovs-system"}

// kernelIfName is the name the kernel gives an interface OVS creates for
// name: at most IFNAMSIZ-1 (15) characters.
func kernelIfName(name string) string { return name[:min(len(name), 15)] }

// EndpointMTU is the MTU for a new endpoint (docs/dataplane.md §1.5): the
// lowest MTU among the links of h's namespace (nil: the process's own)
// that are not docker*, veth*, vport*, vvport*, lo*, a contiv bridge's
// own interface, contivh0, an infra port (ifalias contiv-infra) or a
// datapath device (ovs-netdev, ovs-system), at most 9000, minus
// 50 for VXLAN networks.
func EndpointMTU(h *netlink.Handle, vxlan bool) (int, error) {
	var links []netlink.Link
	var err error
	// A dump that races link changes (other endpoints being created) ends
	// with ErrDumpInterrupted; it is retried.
	for range 10 {
		if h == nil {
			links, err = netlink.LinkList()
		} else {
			links, err = h.LinkList()
		}
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			break
		}
	}
	if err != nil {
		return 0, fmt.Errorf("endpoint MTU: list links: %w", err)
	}
	mtu := startMTU
	for _, l := range links {
		a := l.Attrs()
		if ignoredForMTU(a.Name) || a.Alias == infraAlias || a.MTU <= 0 {
			continue
		}
		mtu = min(mtu, a.MTU)
	}
	if vxlan {
		mtu -= vxlanOverhead
	}
	return mtu, nil
}

func ignoredForMTU(name string) bool {
	if slices.Contains(mtuIgnoredNames, name) {
		return true
	}
	for _, p := range mtuIgnoredPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
