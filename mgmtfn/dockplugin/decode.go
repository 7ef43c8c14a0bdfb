package dockplugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"unicode"

	"github.com/contiv/netplugin/utils/jsonreq"
)

// MaxBodyBytes bounds a request body.
const MaxBodyBytes = 1 << 20

// maxIDLen bounds network, endpoint and pool ids.
const maxIDLen = 512

// ErrBadRequest: a request body is not valid JSON of the call's shape, or
// a member is missing or malformed. Every decoding error wraps it.
var ErrBadRequest = errors.New("dockplugin: bad request")

// validator is a request that checks its own members.
type validator interface {
	validate() error
}

// decode reads one JSON object into v (members the protocol adds later
// are ignored; trailing data is refused) and validates it.
func decode(r io.Reader, v validator) error {
	var raw json.RawMessage
	if err := jsonreq.DecodeOne(r, &raw, false); err != nil {
		return fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return fmt.Errorf("%w: the body is not a JSON object", ErrBadRequest)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%w: decode JSON: %w", ErrBadRequest, err)
	}
	return v.validate()
}

// missing is the error of an absent member.
func missing(member string) error {
	return fmt.Errorf("%w: member %q is missing or empty", ErrBadRequest, member)
}

// checkID requires a non-empty id without control characters or white
// space, at most maxIDLen bytes.
func checkID(member, v string) error {
	switch {
	case v == "":
		return missing(member)
	case len(v) > maxIDLen:
		return fmt.Errorf("%w: member %q is longer than %d bytes", ErrBadRequest, member, maxIDLen)
	case strings.ContainsFunc(v, func(c rune) bool { return unicode.IsSpace(c) || unicode.IsControl(c) }):
		return fmt.Errorf("%w: member %q contains white space or control characters", ErrBadRequest, member)
	}
	return nil
}

// parsePrefix accepts "" (the zero prefix) or "ip/len" of the given family
// (4 or 6; 0 either).
func parsePrefix(member, v string, family int) (netip.Prefix, error) {
	if v == "" {
		return netip.Prefix{}, nil
	}
	p, err := netip.ParsePrefix(v)
	if err != nil || (family == 4 && !p.Addr().Is4()) || (family == 6 && !p.Addr().Is6()) {
		return netip.Prefix{}, fmt.Errorf("%w: member %q: %q is not an IPv%s address with prefix length", ErrBadRequest, member, v, familyName(family))
	}
	return p, nil
}

// parseAddr reads a bare IP address.
func parseAddr(member, v string) (netip.Addr, error) {
	a, err := netip.ParseAddr(v)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("%w: member %q: %q is not an IP address", ErrBadRequest, member, v)
	}
	return a, nil
}

func familyName(f int) string {
	switch f {
	case 4:
		return "4"
	case 6:
		return "6"
	}
	return "4 or IPv6"
}

func (r *CreateNetworkRequest) validate() error { return checkID("NetworkID", r.NetworkID) }
func (r *NetworkRequest) validate() error       { return checkID("NetworkID", r.NetworkID) }
func (r *AllocateNetworkRequest) validate() error {
	return checkID("NetworkID", r.NetworkID)
}

func (r *CreateEndpointRequest) validate() error {
	if err := checkID("NetworkID", r.NetworkID); err != nil {
		return err
	}
	if err := checkID("EndpointID", r.EndpointID); err != nil {
		return err
	}
	if r.Interface == nil {
		return missing("Interface")
	}
	p4, err := parsePrefix("Interface.Address", r.Interface.Address, 4)
	if err != nil {
		return err
	}
	p6, err := parsePrefix("Interface.AddressIPv6", r.Interface.AddressIPv6, 6)
	if err != nil {
		return err
	}
	r.addr4, r.addr6 = p4.Addr(), p6.Addr()
	if r.Interface.MacAddress != "" {
		if _, err := parseMAC(r.Interface.MacAddress); err != nil {
			return fmt.Errorf("%w: member \"Interface.MacAddress\": %w", ErrBadRequest, err)
		}
	}
	return nil
}

func (r *EndpointRequest) validate() error {
	if err := checkID("NetworkID", r.NetworkID); err != nil {
		return err
	}
	return checkID("EndpointID", r.EndpointID)
}

func (r *JoinRequest) validate() error {
	if err := checkID("NetworkID", r.NetworkID); err != nil {
		return err
	}
	return checkID("EndpointID", r.EndpointID)
}

func (r *DiscoveryNotification) validate() error { return nil }

func (r *RequestPoolRequest) validate() error {
	p, err := parsePrefix("Pool", r.Pool, 0)
	if err != nil {
		return err
	}
	if p.IsValid() && p.Addr().Is6() != r.V6 {
		return fmt.Errorf("%w: member \"Pool\" %q does not match \"V6\": %t", ErrBadRequest, r.Pool, r.V6)
	}
	r.pool = p
	_, err = parsePrefix("SubPool", r.SubPool, 0)
	return err
}

func (r *PoolRequest) validate() error { return checkID("PoolID", r.PoolID) }

func (r *RequestAddressRequest) validate() error {
	id, err := parsePoolID(r.PoolID)
	if err != nil {
		return err
	}
	r.pool = id
	if r.Address != "" {
		if r.addr, err = parseAddr("Address", r.Address); err != nil {
			return err
		}
	}
	return nil
}

func (r *ReleaseAddressRequest) validate() error {
	id, err := parsePoolID(r.PoolID)
	if err != nil {
		return err
	}
	r.pool = id
	if r.Address == "" {
		return missing("Address")
	}
	r.addr, err = parseAddr("Address", r.Address)
	return err
}

// poolID is a parsed IPAM pool id: "<networkID>|<cidr>" with networkID
// "<net>.<tenant>" or "<net>:<group>.<tenant>", or a bare "<cidr>" for
// pools of no contiv network (docs/docker.md).
type poolID struct {
	networkID string // "" for a bare pool
	pool      netip.Prefix
}

// parsePoolID reads a pool id; a pool without a prefix length is refused.
func parsePoolID(s string) (poolID, error) {
	if err := checkID("PoolID", s); err != nil {
		return poolID{}, err
	}
	var id poolID
	cidr := s
	if i := strings.LastIndex(s, "|"); i >= 0 {
		id.networkID, cidr = s[:i], s[i+1:]
		if _, _, err := splitNetworkID(id.networkID); err != nil {
			return poolID{}, err
		}
	}
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return poolID{}, fmt.Errorf("%w: member \"PoolID\" %q: pool %q is not an address with prefix length", ErrBadRequest, s, cidr)
	}
	id.pool = p
	return id, nil
}

// splitNetworkID reads "<net>.<tenant>" or "<net>:<group>.<tenant>".
func splitNetworkID(s string) (tenant, netID string, err error) {
	base, tenant, ok := cutLast(s, ".")
	if !ok || base == "" || tenant == "" {
		return "", "", fmt.Errorf("%w: network id %q is not <network>.<tenant> or <network>:<group>.<tenant>", ErrBadRequest, s)
	}
	network, _, _ := strings.Cut(base, ":")
	if network == "" {
		return "", "", fmt.Errorf("%w: network id %q names no network", ErrBadRequest, s)
	}
	return tenant, network + "." + tenant, nil
}

func cutLast(s, sep string) (before, after string, found bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}
