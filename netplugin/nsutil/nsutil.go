// Package nsutil moves an endpoint's link into a container's network
// namespace and configures it there (docs/daemons.md §8.2 steps 6–9), and
// removes it again.
//
// All work inside a namespace goes through ns.NetNS.Do, which runs it on a
// goroutine locked to its own OS thread; no caller thread ever changes
// namespace. The link's "host" side is the namespace of the calling thread.
package nsutil

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// ErrInvalidConfig: a LinkConfig or argument failed validation.
var ErrInvalidConfig = errors.New("nsutil: invalid link config")

// maxIfNameLen is IFNAMSIZ minus the terminating NUL.
const maxIfNameLen = 15

// LinkConfig describes one link to hand to a container.
type LinkConfig struct {
	HostIfName string // the link in the caller's namespace, e.g. vport5
	NetNSPath  string // /var/run/netns/<name> or /proc/<pid>/ns/net
	IfName     string // name inside the namespace, e.g. eth0
	IPv4       *net.IPNet
	IPv6       *net.IPNet
	GatewayV4  net.IP // default route via this address when set
	GatewayV6  net.IP
	MTU        int              // 0 keeps the link's MTU
	MAC        net.HardwareAddr // nil keeps the link's address
}

// Validate checks the config without touching the system.
func (c LinkConfig) Validate() error {
	if err := CheckIfName(c.HostIfName); err != nil {
		return fmt.Errorf("%w: HostIfName: %w", ErrInvalidConfig, err)
	}
	if err := CheckIfName(c.IfName); err != nil {
		return fmt.Errorf("%w: IfName: %w", ErrInvalidConfig, err)
	}
	if c.NetNSPath == "" {
		return fmt.Errorf("%w: NetNSPath is empty", ErrInvalidConfig)
	}
	if c.IPv4 != nil && (c.IPv4.IP.To4() == nil || !isV4Mask(c.IPv4.Mask)) {
		return fmt.Errorf("%w: IPv4 %v is not an IPv4 address with an IPv4 mask", ErrInvalidConfig, c.IPv4)
	}
	if c.IPv6 != nil && (c.IPv6.IP.To4() != nil || len(c.IPv6.IP) != net.IPv6len || len(c.IPv6.Mask) != net.IPv6len) {
		return fmt.Errorf("%w: IPv6 %v is not an IPv6 address with an IPv6 mask", ErrInvalidConfig, c.IPv6)
	}
	if c.GatewayV4 != nil && c.GatewayV4.To4() == nil {
		return fmt.Errorf("%w: GatewayV4 %v is not an IPv4 address", ErrInvalidConfig, c.GatewayV4)
	}
	if c.GatewayV6 != nil && (c.GatewayV6.To4() != nil || len(c.GatewayV6) != net.IPv6len) {
		return fmt.Errorf("%w: GatewayV6 %v is not an IPv6 address", ErrInvalidConfig, c.GatewayV6)
	}
	if c.MTU < 0 {
		return fmt.Errorf("%w: MTU %d is negative", ErrInvalidConfig, c.MTU)
	}
	if c.MAC != nil && len(c.MAC) != 6 {
		return fmt.Errorf("%w: MAC %v is not an Ethernet address", ErrInvalidConfig, c.MAC)
	}
	return nil
}

func isV4Mask(m net.IPMask) bool {
	if len(m) == net.IPv4len {
		return true
	}
	_, bits := m.Size()
	return bits == 8*net.IPv4len
}

// CheckIfName reports whether name is a valid Linux interface name: 1–15
// bytes, not "." or "..", without '/', ':' or white space.
func CheckIfName(name string) error {
	switch {
	case name == "":
		return errors.New("interface name is empty")
	case len(name) > maxIfNameLen:
		return fmt.Errorf("interface name %q is longer than %d bytes", name, maxIfNameLen)
	case name == "." || name == "..":
		return fmt.Errorf("interface name %q is reserved", name)
	case strings.ContainsAny(name, "/: \t\n\r\v\f\x00"):
		return fmt.Errorf("interface name %q contains '/', ':', NUL or white space", name)
	}
	return nil
}

// MoveAndConfigure moves cfg.HostIfName into the namespace, renames it to
// cfg.IfName, sets its MTU and MAC, adds the addresses, sets it up and adds
// the default route(s). On failure the link is moved back under its old
// name with its old MTU, MAC and up/down state (the kernel drops addresses
// and routes on the move), or deleted if it cannot be moved back, so
// nothing half-configured is left in the namespace.
func MoveAndConfigure(cfg LinkConfig) (err error) {
	target, err := openTarget(cfg)
	if err != nil {
		return err
	}
	defer target.Close()
	home, err := ns.GetCurrentNS()
	if err != nil {
		return fmt.Errorf("open the caller's netns: %w", err)
	}
	defer home.Close()

	link, err := netlink.LinkByName(cfg.HostIfName)
	if err != nil {
		return fmt.Errorf("find link %q: %w", cfg.HostIfName, err)
	}
	orig := linkState{
		mtu: link.Attrs().MTU,
		mac: append(net.HardwareAddr(nil), link.Attrs().HardwareAddr...),
		up:  link.Attrs().Flags&net.FlagUp != 0,
	}
	if err := netlink.LinkSetDown(link); err != nil {
		return fmt.Errorf("set link %q down: %w", cfg.HostIfName, err)
	}
	if err := netlink.LinkSetNsFd(link, int(target.Fd())); err != nil {
		err = fmt.Errorf("move link %q into netns %q: %w", cfg.HostIfName, cfg.NetNSPath, err)
		if orig.up {
			if uerr := netlink.LinkSetUp(link); uerr != nil {
				err = errors.Join(err, fmt.Errorf("set link %q up again: %w", cfg.HostIfName, uerr))
			}
		}
		return err
	}

	index := 0 // the link's index inside the namespace, once found
	err = target.Do(func(ns.NetNS) error {
		l, err := netlink.LinkByName(cfg.HostIfName)
		if err != nil {
			return fmt.Errorf("find link %q in netns: %w", cfg.HostIfName, err)
		}
		index = l.Attrs().Index
		return configure(l, cfg)
	})
	if err == nil {
		return nil
	}
	err = fmt.Errorf("configure %q in netns %q: %w", cfg.HostIfName, cfg.NetNSPath, err)
	if rerr := undoMove(target, home, index, cfg, orig); rerr != nil {
		return errors.Join(err, fmt.Errorf("roll back link %q: %w", cfg.HostIfName, rerr))
	}
	return err
}

// ConfigureInNS configures cfg.IfName, a link already in the namespace
// under that name with its MTU (created there, not moved in): it sets the
// MAC when given and the link has another, adds the addresses, sets the
// link up and adds the default route(s). cfg.HostIfName and MTU are
// ignored. On failure the caller removes the link (deleting the veth's
// other end does).
func ConfigureInNS(cfg LinkConfig) error {
	cfg.HostIfName, cfg.MTU = cfg.IfName, 0
	target, err := openTarget(cfg)
	if err != nil {
		return err
	}
	defer target.Close()
	err = target.Do(func(ns.NetNS) error {
		l, err := netlink.LinkByName(cfg.IfName)
		if err != nil {
			return fmt.Errorf("find link %q in netns: %w", cfg.IfName, err)
		}
		if bytes.Equal(l.Attrs().HardwareAddr, cfg.MAC) {
			cfg.MAC = nil // created with it
		}
		return configure(l, cfg)
	})
	if err != nil {
		return fmt.Errorf("configure %q in netns %q: %w", cfg.IfName, cfg.NetNSPath, err)
	}
	return nil
}

// openTarget validates cfg and opens its namespace.
func openTarget(cfg LinkConfig) (ns.NetNS, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	target, err := ns.GetNS(cfg.NetNSPath)
	if err != nil {
		return nil, fmt.Errorf("open netns %q: %w", cfg.NetNSPath, err)
	}
	return target, nil
}

// configure runs inside the target namespace.
func configure(l netlink.Link, cfg LinkConfig) error {
	if cfg.IfName != cfg.HostIfName {
		if err := netlink.LinkSetName(l, cfg.IfName); err != nil {
			return fmt.Errorf("rename link %q to %q: %w", cfg.HostIfName, cfg.IfName, err)
		}
	}
	if cfg.MTU > 0 {
		if err := netlink.LinkSetMTU(l, cfg.MTU); err != nil {
			return fmt.Errorf("set MTU %d on %q: %w", cfg.MTU, cfg.IfName, err)
		}
	}
	if cfg.MAC != nil {
		if err := netlink.LinkSetHardwareAddr(l, cfg.MAC); err != nil {
			return fmt.Errorf("set MAC %s on %q: %w", cfg.MAC, cfg.IfName, err)
		}
	}
	if cfg.IPv4 != nil {
		if err := netlink.AddrAdd(l, &netlink.Addr{IPNet: cfg.IPv4}); err != nil {
			return fmt.Errorf("add address %s to %q: %w", cfg.IPv4, cfg.IfName, err)
		}
	}
	if cfg.IPv6 != nil {
		// No duplicate address detection: netmaster hands out unique
		// addresses, and a tentative address would delay the route.
		if err := netlink.AddrAdd(l, &netlink.Addr{IPNet: cfg.IPv6, Flags: unix.IFA_F_NODAD}); err != nil {
			return fmt.Errorf("add address %s to %q: %w", cfg.IPv6, cfg.IfName, err)
		}
	}
	if err := netlink.LinkSetUp(l); err != nil {
		return fmt.Errorf("set link %q up: %w", cfg.IfName, err)
	}
	for _, gw := range []net.IP{cfg.GatewayV4, cfg.GatewayV6} {
		if gw == nil {
			continue
		}
		family := netlink.FAMILY_V4
		if gw.To4() == nil {
			family = netlink.FAMILY_V6
		}
		r := &netlink.Route{LinkIndex: l.Attrs().Index, Gw: gw, Family: family, Scope: netlink.SCOPE_UNIVERSE}
		if err := netlink.RouteAdd(r); err != nil {
			return fmt.Errorf("add default route via %s on %q: %w", gw, cfg.IfName, err)
		}
	}
	return nil
}

// linkState is what MoveAndConfigure restores when it gives a link back.
type linkState struct {
	mtu int
	mac net.HardwareAddr
	up  bool
}

// undoMove brings the link back to home under its original name, MTU, MAC
// and up/down state; when that fails it deletes the link inside the
// namespace.
func undoMove(target, home ns.NetNS, index int, cfg LinkConfig, orig linkState) error {
	err := target.Do(func(ns.NetNS) error {
		var l netlink.Link
		var err error
		if index > 0 {
			l, err = netlink.LinkByIndex(index)
		} else {
			l, err = netlink.LinkByName(cfg.HostIfName)
		}
		if err != nil {
			return fmt.Errorf("find link in netns: %w", err)
		}
		back := netlink.LinkSetDown(l)
		if back == nil && l.Attrs().Name != cfg.HostIfName {
			back = netlink.LinkSetName(l, cfg.HostIfName)
		}
		if back == nil {
			back = netlink.LinkSetNsFd(l, int(home.Fd()))
		}
		if back == nil {
			return nil
		}
		if err := netlink.LinkDel(l); err != nil {
			return errors.Join(fmt.Errorf("move back: %w", back), fmt.Errorf("delete: %w", err))
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Restore the rest if the link made it home; it may have been deleted
	// instead, which leaves nothing to restore.
	l, lerr := netlink.LinkByName(cfg.HostIfName)
	if lerr != nil {
		return nil
	}
	var errs []error
	if l.Attrs().MTU != orig.mtu {
		if err := netlink.LinkSetMTU(l, orig.mtu); err != nil {
			errs = append(errs, fmt.Errorf("restore MTU %d: %w", orig.mtu, err))
		}
	}
	if len(orig.mac) > 0 && l.Attrs().HardwareAddr.String() != orig.mac.String() {
		if err := netlink.LinkSetHardwareAddr(l, orig.mac); err != nil {
			errs = append(errs, fmt.Errorf("restore MAC %s: %w", orig.mac, err))
		}
	}
	if orig.up {
		if err := netlink.LinkSetUp(l); err != nil {
			errs = append(errs, fmt.Errorf("set up again: %w", err))
		}
	}
	return errors.Join(errs...)
}

// RemoveFromNS deletes ifName inside the namespace at netnsPath. It is
// idempotent: a namespace that no longer exists (or an empty path) or a
// link already gone is success.
func RemoveFromNS(netnsPath, ifName string) error {
	if err := CheckIfName(ifName); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if netnsPath == "" {
		return nil
	}
	err := ns.WithNetNSPath(netnsPath, func(ns.NetNS) error {
		l, err := netlink.LinkByName(ifName)
		var notFound netlink.LinkNotFoundError
		if errors.As(err, &notFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("find link %q: %w", ifName, err)
		}
		if err := netlink.LinkDel(l); err != nil && !errors.Is(err, unix.ENODEV) {
			return fmt.Errorf("delete link %q: %w", ifName, err)
		}
		return nil
	})
	var gone ns.NSPathNotExistErr
	if errors.As(err, &gone) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove %q from netns %q: %w", ifName, netnsPath, err)
	}
	return nil
}

// CheckInNS verifies that ifName exists in the namespace at netnsPath, is
// up, and (when given) carries the address ip/len and the MAC.
func CheckInNS(netnsPath, ifName string, addr *net.IPNet, mac net.HardwareAddr) error {
	if err := CheckIfName(ifName); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if netnsPath == "" {
		return fmt.Errorf("%w: NetNSPath is empty", ErrInvalidConfig)
	}
	err := ns.WithNetNSPath(netnsPath, func(ns.NetNS) error {
		l, err := netlink.LinkByName(ifName)
		if err != nil {
			return fmt.Errorf("find link %q: %w", ifName, err)
		}
		if l.Attrs().Flags&net.FlagUp == 0 {
			return fmt.Errorf("link %q is down", ifName)
		}
		if mac != nil && l.Attrs().HardwareAddr.String() != mac.String() {
			return fmt.Errorf("link %q has MAC %s, want %s", ifName, l.Attrs().HardwareAddr, mac)
		}
		if addr == nil {
			return nil
		}
		family := netlink.FAMILY_V4
		if addr.IP.To4() == nil {
			family = netlink.FAMILY_V6
		}
		addrs, err := netlink.AddrList(l, family)
		if err != nil {
			return fmt.Errorf("addresses of %q: %w", ifName, err)
		}
		for _, a := range addrs {
			if a.IPNet != nil && a.IPNet.String() == addr.String() {
				return nil
			}
		}
		return fmt.Errorf("link %q does not carry %s", ifName, addr)
	})
	if err != nil {
		return fmt.Errorf("check %q in netns %q: %w", ifName, netnsPath, err)
	}
	return nil
}
