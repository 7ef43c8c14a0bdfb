package ovsdriver

import (
	"fmt"
	"unsafe"

	"github.com/containernetworking/plugins/pkg/ns"
	"golang.org/x/sys/unix"
)

// ethtoolValue is the kernel's struct ethtool_value.
type ethtoolValue struct {
	cmd  uint32
	data uint32
}

// ethtoolIfreq is the kernel's struct ifreq with ifr_data set. Data is an
// unsafe.Pointer, not a uintptr, so the value it points to stays alive and
// is tracked if the stack moves.
type ethtoolIfreq struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

// ethtoolSet issues one SIOCETHTOOL set command (such as
// ETHTOOL_STXCSUM) with value on link name, through a socket of the
// current thread's network namespace.
func ethtoolSet(name string, cmd, value uint32) error {
	if len(name) >= unix.IFNAMSIZ {
		return fmt.Errorf("%w: interface name %q longer than %d characters", ErrInvalid, name, unix.IFNAMSIZ-1)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("ethtool socket: %w", err)
	}
	defer unix.Close(fd)
	v := ethtoolValue{cmd: cmd, data: value}
	var ifr ethtoolIfreq
	copy(ifr.name[:], name)
	ifr.data = unsafe.Pointer(&v)
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr))); errno != 0 {
		return fmt.Errorf("ethtool command %#x on %q: %w", cmd, name, errno)
	}
	return nil
}

// disableTxChecksum switches off TX checksum offload on link name in the
// namespace at nsPath ("": the process's own), so the kernel completes TCP and UDP checksums before
// a packet leaves the link. The userspace (netdev) datapath reads a
// container's packets from the OVS end of the veth pair with a raw socket
// and never completes a checksum left to offload: without this the
// receiver drops every TCP and UDP packet while ICMP passes (see
// docs/traffic.md, "Checksum offload on the userspace datapath"). The
// setting belongs to the device, so it survives the move into the
// container's namespace. Switching it off also switches off TSO/GSO, so
// no segment larger than the MTU leaves.
func disableTxChecksum(nsPath, name string) error {
	set := func() error { return ethtoolSet(name, unix.ETHTOOL_STXCSUM, 0) }
	var err error
	if nsPath == "" {
		err = set()
	} else {
		err = ns.WithNetNSPath(nsPath, func(ns.NetNS) error { return set() })
	}
	if err != nil {
		return fmt.Errorf("disable TX checksum offload on %q: %w", name, err)
	}
	return nil
}

// needsSoftChecksum reports whether container links must compute their
// own checksums: on the userspace datapath.
func (d *Driver) needsSoftChecksum() bool { return d.cfg.DatapathType == "netdev" }
