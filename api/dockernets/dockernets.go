package dockernets

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/contiv/netplugin/state"
)

// DefaultTenant gets no "/<tenant>" suffix in docker network names.
const DefaultTenant = "default"

// Name is the docker network of a contiv network (group "") or endpoint
// group: the group's name if any, else the network's, with "/<tenant>"
// appended unless the tenant is DefaultTenant.
func Name(tenant, network, group string) string {
	n := network
	if group != "" {
		n = group
	}
	if tenant != DefaultTenant {
		n += "/" + tenant
	}
	return n
}

// ParseName splits a legacy docker network name "[<group>.]<network>[/<tenant>]"
// (docs/daemons.md §8.1.5; tenant defaults to DefaultTenant).
func ParseName(name string) (tenant, network, group string) {
	base, tenant, ok := strings.Cut(name, "/")
	if !ok || tenant == "" {
		tenant = DefaultTenant
	}
	if g, n, ok := strings.Cut(base, "."); ok {
		return tenant, n, g
	}
	return tenant, base, ""
}

// StateID is the id of the docknet mapping, "<tenant>.<network>.<group>".
func StateID(tenant, network, group string) string {
	return tenant + "." + network + "." + group
}

// Spec is what a docker network for a contiv network or group carries.
type Spec struct {
	Tenant  string
	Network string
	Group   string // "" for the network itself
	Encap   string // vlan or vxlan
	// PktTag is the VLAN (vlan) or VNI (vxlan) sent as option "pkt-tag".
	PktTag      int
	Subnet      string // "<base>/<len>"
	Gateway     string
	IPv6Subnet  string // "<base>/<len>" or ""
	IPv6Gateway string
}

// SpecOf is the spec of the docker network of contiv network nw (group ""),
// or of one of its groups: the VNI as the tag of a VXLAN network.
func SpecOf(nw state.Network, group string) Spec {
	s := Spec{Tenant: nw.Tenant, Network: nw.NetworkName, Group: group, Encap: nw.PktTagType,
		PktTag: nw.PktTag, Subnet: fmt.Sprintf("%s/%d", nw.SubnetIP, nw.SubnetLen), Gateway: nw.Gateway}
	if nw.PktTagType == "vxlan" {
		s.PktTag = nw.ExtPktTag
	}
	if nw.IPv6Subnet != "" {
		s.IPv6Subnet = fmt.Sprintf("%s/%d", nw.IPv6Subnet, nw.IPv6SubnetLen)
		s.IPv6Gateway = nw.IPv6Gateway
	}
	return s
}

// Request is the create request for s with plugin as network and IPAM
// driver (§4.14; no labels).
func (s Spec) Request(plugin string) CreateRequest {
	ipamOpts := map[string]string{"tenant": s.Tenant, "network": s.Network}
	if s.Group != "" {
		ipamOpts["group"] = s.Group
	}
	req := CreateRequest{
		Name:           Name(s.Tenant, s.Network, s.Group),
		CheckDuplicate: true,
		Driver:         plugin,
		Attachable:     true,
		Options: map[string]string{
			"tenant":  s.Tenant,
			"encap":   s.Encap,
			"pkt-tag": strconv.Itoa(s.PktTag),
		},
		IPAM: IPAM{
			Driver:  plugin,
			Config:  []IPAMConfig{{Subnet: s.Subnet, Gateway: s.Gateway}},
			Options: ipamOpts,
		},
	}
	if s.IPv6Subnet != "" {
		req.EnableIPv6 = true
		req.IPAM.Config = append(req.IPAM.Config, IPAMConfig{Subnet: s.IPv6Subnet, Gateway: s.IPv6Gateway})
	}
	return req
}

// Create makes sure the docker network of s exists with driver plugin and
// returns its ID; created is false when an existing network of our driver
// was reused. A network of that name with another driver is ErrOtherDriver.
func Create(ctx context.Context, c *Client, plugin string, s Spec) (id string, created bool, err error) {
	req := s.Request(plugin)
	nw, err := c.FindNetwork(ctx, req.Name)
	switch {
	case err == nil && nw.Driver == plugin:
		return nw.ID, false, nil
	case err == nil:
		return "", false, fmt.Errorf("docker network %q has driver %q: %w", req.Name, nw.Driver, ErrOtherDriver)
	case !errors.Is(err, ErrNotFound):
		return "", false, err
	}
	id, err = c.CreateNetwork(ctx, req)
	if err != nil {
		return "", false, err
	}
	return id, true, nil
}

// Remove deletes the docker network of (tenant, network, group) by name.
// A network already gone is not an error; existed reports whether it was
// there.
func Remove(ctx context.Context, c *Client, tenant, network, group string) (existed bool, err error) {
	name := Name(tenant, network, group)
	nw, err := c.FindNetwork(ctx, name)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := c.RemoveNetwork(ctx, nw.ID); err != nil {
		if errors.Is(err, ErrNotFound) {
			return false, nil // removed concurrently
		}
		return true, err
	}
	return true, nil
}
