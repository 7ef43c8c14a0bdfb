package v4store

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Prefix lengths an IPv4 network subnet may have (docs/rest-api.md §2.4
// step 5).
const (
	MinV4PrefixLen = 8
	MaxV4PrefixLen = 32
)

// Subnet is a parsed IPv4 network definition: "a.b.c.d/len" or
// "a.b.c.d-e.f.g.h/len" (allocation limited to the range).
type Subnet struct {
	Base  netip.Addr // network address (masked)
	Len   int        // prefix length
	First netip.Addr // first address of the range (Base without a range)
	Last  netip.Addr // last address of the range (broadcast without a range)
}

// ParseSubnet parses and checks a network's IPv4 subnet. A range must lie
// inside the CIDR and start ≤ end ("Network subnet format not valid"); the
// prefix length must be 8…32 ("subnet length <n> not supported"). A CIDR
// with host bits set is masked (10.1.1.1/24 → 10.1.1.0/24).
func ParseSubnet(s string) (Subnet, error) {
	addrPart, lenPart, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Subnet{}, userErr(ErrInvalid, "invalid subnet %q: expected a.b.c.d/len", s)
	}
	plen, err := strconv.Atoi(lenPart)
	if err != nil || plen < 0 || plen > 32 {
		return Subnet{}, userErr(ErrInvalid, "invalid subnet %q: bad prefix length", s)
	}
	startStr, endStr, isRange := strings.Cut(addrPart, "-")
	start, err := ParseV4(startStr)
	if err != nil {
		return Subnet{}, userErr(ErrInvalid, "invalid subnet %q: %v", s, err)
	}
	base := U32(start) & mask(plen)
	sn := Subnet{Base: AddrOf(base), Len: plen, First: AddrOf(base), Last: AddrOf(base | ^mask(plen))}
	if isRange {
		end, err := ParseV4(endStr)
		if err != nil {
			return Subnet{}, userErr(ErrInvalid, "invalid subnet %q: %v", s, err)
		}
		if U32(start) < base || U32(end) > U32(sn.Last) || U32(start) > U32(end) {
			return Subnet{}, userErr(ErrInvalid, "Network subnet format not valid")
		}
		sn.First, sn.Last = start, end
	}
	if plen < MinV4PrefixLen || plen > MaxV4PrefixLen {
		return Subnet{}, userErr(ErrInvalid, "subnet length %d not supported", plen)
	}
	return sn, nil
}

// String is "base/len".
func (s Subnet) String() string { return fmt.Sprintf("%s/%d", s.Base, s.Len) }

// Range is "first-last" (the network's ipAddrRange).
func (s Subnet) Range() string { return s.First.String() + "-" + s.Last.String() }

// Size is the number of addresses in the CIDR.
func (s Subnet) Size() uint64 { return uint64(1) << (32 - s.Len) }

// Contains reports whether a is inside the CIDR.
func (s Subnet) Contains(a netip.Addr) bool {
	return a.Is4() && U32(a)&mask(s.Len) == U32(s.Base)
}

// CheckHost parses a bare IPv4 address and checks that it is inside the
// subnet, with the original's messages: "unable to convert hostIP <a> to
// uint32" and "hostIP <a> is exceeding beyond subnet <base>/<len>, hostID
// <n>" (docs/rest-api.md §2.4 step 6, §3.2).
func (s Subnet) CheckHost(ip string) (netip.Addr, error) {
	a, err := ParseV4(ip)
	if err != nil {
		return netip.Addr{}, userErr(ErrInvalid, "unable to convert hostIP %s to uint32", ip)
	}
	if !s.Contains(a) {
		return netip.Addr{}, userErr(ErrOutOfSubnet, "hostIP %s is exceeding beyond subnet %s, hostID %d", ip, s, U32(a)-U32(s.Base))
	}
	return a, nil
}

// ParsePool parses an endpoint group's IP pool "a.b.c.d-e.f.g.h" against
// its network's subnet, with the messages of docs/rest-api.md §2.5: start >
// end, a single address, or a range not inside one /len block → "invalid
// ip-pool <pool>"; a range outside the subnet → "bad ip-pool <pool>, EPG
// ip-pool must be a subset of network <base>/<len>".
func ParsePool(network Subnet, pool string) (first, last netip.Addr, err error) {
	startStr, endStr, ok := strings.Cut(strings.TrimSpace(pool), "-")
	if !ok {
		return first, last, userErr(ErrInvalid, "invalid ip-pool %s", pool)
	}
	start, err1 := netip.ParseAddr(strings.TrimSpace(startStr))
	end, err2 := netip.ParseAddr(strings.TrimSpace(endStr))
	if err1 != nil || err2 != nil {
		return first, last, userErr(ErrInvalid, "invalid ip-pool %s", pool)
	}
	if !start.Is4() || !end.Is4() {
		return first, last, userErr(ErrInvalid, "ipv6 address pool is not supported for Endpoint Groups")
	}
	m := mask(network.Len)
	if U32(start) > U32(end) || U32(start)&m != U32(end)&m {
		return first, last, userErr(ErrInvalid, "invalid ip-pool %s", pool)
	}
	if !network.Contains(start) || !network.Contains(end) {
		return first, last, userErr(ErrOutOfSubnet, "bad ip-pool %s, EPG ip-pool must be a subset of network %s", pool, network)
	}
	return start, end, nil
}

func ParseV4(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(strings.TrimSpace(s))
	if err != nil {
		return netip.Addr{}, err
	}
	if !a.Is4() {
		return netip.Addr{}, fmt.Errorf("%s is not an IPv4 address", s)
	}
	return a, nil
}

func U32(a netip.Addr) uint32 {
	b := a.As4()
	return binary.BigEndian.Uint32(b[:])
}

func AddrOf(v uint32) netip.Addr {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b)
}

func mask(plen int) uint32 {
	if plen <= 0 {
		return 0
	}
	return ^uint32(0) << (32 - plen)
}

// rangeList builds the spec's range strings ("60.1.1.1-60.1.1.3,
// 60.1.1.254") from ascending runs of addresses.
type rangeList struct {
	b          strings.Builder
	open       bool
	first, cur uint32
}

func (r *rangeList) add(v uint32) {
	if r.open && v == r.cur+1 {
		r.cur = v
		return
	}
	r.flush()
	r.open, r.first, r.cur = true, v, v
}

// addRun adds the addresses a..b (inclusive, a ≤ b, ascending after what
// was added before).
func (r *rangeList) addRun(a, b uint32) {
	r.add(a)
	r.cur = b
}

func (r *rangeList) flush() {
	if !r.open {
		return
	}
	if r.b.Len() > 0 {
		r.b.WriteString(", ")
	}
	r.b.WriteString(AddrOf(r.first).String())
	if r.cur != r.first {
		r.b.WriteString("-")
		r.b.WriteString(AddrOf(r.cur).String())
	}
	r.open = false
}

func (r *rangeList) String() string {
	r.flush()
	return r.b.String()
}
