package ovsdriver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"

	"github.com/vishvananda/netlink"

	"github.com/contiv/netplugin/ofnet/ovsdb"
)

// bondPortName is the port of a bonded uplink (docs/dataplane.md §1.4).
const bondPortName = "uplinkPort"

// UplinkMember is one uplink interface as attached to the bridge.
type UplinkMember struct {
	Name   string
	OFPort uint32
	MAC    net.HardwareAddr
}

// isUplinkPort reports whether a port row is an uplink made by the driver.
func isUplinkPort(p ovsdb.Row) bool {
	return p.String("name") == bondPortName || p.StringMap("external_ids")[endpointIDKey] == uplinkEndpointID
}

// deletePortOps deletes a port of br with all its interfaces.
func deletePortOps(br, p ovsdb.Row) []ovsdb.Operation {
	ops := []ovsdb.Operation{
		ovsdb.Mutate("Bridge", []ovsdb.Condition{ovsdb.Eq("_uuid", br.UUID())}, ovsdb.MutateDelete("ports", ovsdb.Set{p.UUID()})),
		ovsdb.Delete("Port", ovsdb.Eq("_uuid", p.UUID())),
	}
	for _, id := range p.UUIDs("interfaces") {
		ops = append(ops, ovsdb.Delete("Interface", ovsdb.Eq("_uuid", id)))
	}
	return ops
}

// interfaceNames returns the sorted names of a port's interfaces.
func interfaceNames(v ovsdb.View, p ovsdb.Row) []string {
	var names []string
	for _, id := range p.UUIDs("interfaces") {
		if r, ok := v.Row("Interface", id); ok {
			names = append(names, r.String("name"))
		}
	}
	slices.Sort(names)
	return names
}

// bondMatches reports whether p is the bond the driver would create.
func bondMatches(v ovsdb.View, p ovsdb.Row, members []string) bool {
	if !slices.Equal(interfaceNames(v, p), members) {
		return false
	}
	if p.String("bond_mode") != "balance-tcp" || p.String("lacp") != "active" ||
		p.StringMap("other_config")["lacp-fallback-ab"] != "true" || p.String("vlan_mode") != "trunk" {
		return false
	}
	if _, tagged := p.Int("tag"); tagged {
		return false
	}
	for _, id := range p.UUIDs("interfaces") {
		if r, ok := v.Row("Interface", id); !ok || r.String("type") != "" {
			return false
		}
	}
	return true
}

// removeUplinkOps deletes the driver's uplink ports on bridge except keep,
// and, when members is non-nil, any port of bridge named like a member.
// A member name used by a port of another bridge is an error.
func removeUplinkOps(v ovsdb.View, bridge, keep string, members []string) ([]ovsdb.Operation, error) {
	br, ok := v.FindString("Bridge", "name", bridge)
	if !ok {
		return nil, fmt.Errorf("bridge %q: %w", bridge, ErrNotFound)
	}
	for _, m := range members {
		if owner, exists := portBridge(v, m); exists && owner != bridge && owner != "" {
			return nil, fmt.Errorf("%w: uplink interface %q is already a port of bridge %q", ErrMismatch, m, owner)
		}
	}
	var ops []ovsdb.Operation
	for _, p := range rowsOf(v, "Port", br.UUIDs("ports")) {
		if p.String("name") == keep {
			continue
		}
		if isUplinkPort(p) || slices.Contains(members, p.String("name")) {
			ops = append(ops, deletePortOps(br, p)...)
		}
	}
	return ops, nil
}

// bondOps computes what takes bridge to a bond port over members (sorted).
func bondOps(v ovsdb.View, bridge string, members []string) ([]ovsdb.Operation, error) {
	ops, err := removeUplinkOps(v, bridge, bondPortName, members)
	if err != nil {
		return nil, err
	}
	br, _ := v.FindString("Bridge", "name", bridge)
	if p, ok := v.FindString("Port", "name", bondPortName); ok {
		owner, _ := portBridge(v, bondPortName)
		switch {
		case owner == bridge && bondMatches(v, p, members):
			return ops, nil // only other uplinks to remove, if any
		case owner != bridge && owner != "":
			return nil, fmt.Errorf("%w: port %q already exists on bridge %q", ErrMismatch, bondPortName, owner)
		case owner == bridge:
			ops = append(ops, deletePortOps(br, p)...)
		default: // an unattached leftover row
			ops = append(ops, ovsdb.Delete("Port", ovsdb.Eq("_uuid", p.UUID())))
		}
	}
	refs := ovsdb.Set{}
	for i, m := range members {
		// Interfaces of unattached ports or leftovers with a member name.
		if r, ok := v.FindString("Interface", "name", m); ok && !deletedIn(ops, r.UUID()) {
			ops = append(ops, ovsdb.Delete("Interface", ovsdb.Eq("_uuid", r.UUID())))
		}
		uname := fmt.Sprintf("member%d", i)
		ops = append(ops, ovsdb.Insert("Interface", ovsdb.Row{"name": m, "type": ""}, uname))
		refs = append(refs, ovsdb.NamedUUID(uname))
	}
	port := ovsdb.Row{
		"name": bondPortName, "interfaces": refs, "vlan_mode": "trunk",
		"bond_mode": "balance-tcp", "lacp": "active",
		"other_config": map[string]string{"lacp-fallback-ab": "true"},
	}
	return append(ops,
		ovsdb.Insert("Port", port, "bond"),
		ovsdb.Mutate("Bridge", []ovsdb.Condition{ovsdb.Eq("_uuid", br.UUID())}, ovsdb.MutateInsert("ports", ovsdb.Set{ovsdb.NamedUUID("bond")})),
	), nil
}

func deletedIn(ops []ovsdb.Operation, id ovsdb.UUID) bool {
	for _, op := range ops {
		if op.Op == "delete" && op.Table == "Interface" && len(op.Where) == 1 && op.Where[0].Value == id {
			return true
		}
	}
	return false
}

// EnsureUplinks attaches the uplink interfaces to bridge (docs/dataplane.md
// §1.4): one interface becomes a trunk port of its own name with
// endpoint-id=uplinkPort; several become the bond port uplinkPort
// (balance-tcp, LACP active, lacp-fallback-ab). Other uplink ports of the
// bridge are removed, so a changed list re-configures the uplink.
// Idempotent. The members are returned in the order given.
func (d *Driver) EnsureUplinks(ctx context.Context, bridge string, ifNames []string) ([]UplinkMember, error) {
	members := slices.Clone(ifNames)
	slices.Sort(members)
	members = slices.Compact(members)
	for _, m := range members {
		if m == "" || len(m) > 15 {
			return nil, fmt.Errorf("%w: uplink interface name %q", ErrInvalid, m)
		}
	}
	switch len(members) {
	case 0:
		return nil, nil
	case 1:
		err := d.ovs.Ensure(ctx, func(v ovsdb.View) ([]ovsdb.Operation, error) {
			return removeUplinkOps(v, bridge, members[0], nil)
		})
		if err != nil {
			return nil, fmt.Errorf("ensure uplink %s on bridge %q: %w", members[0], bridge, err)
		}
		ids := map[string]string{endpointIDKey: uplinkEndpointID}
		err = d.ovs.CreatePort(ctx, bridge, ovsdb.PortSpec{Name: members[0], ExternalIDs: ids, InterfaceExternalIDs: ids})
		if err != nil {
			return nil, fmt.Errorf("ensure uplink %s on bridge %q: %w", members[0], bridge, err)
		}
	default:
		err := d.ovs.Ensure(ctx, func(v ovsdb.View) ([]ovsdb.Operation, error) { return bondOps(v, bridge, members) })
		if err != nil {
			return nil, fmt.Errorf("ensure uplink bond %v on bridge %q: %w", members, bridge, err)
		}
	}
	var out []UplinkMember
	seen := map[string]bool{}
	for _, name := range ifNames {
		if seen[name] {
			continue
		}
		seen[name] = true
		m, err := d.uplinkMember(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("ensure uplinks on bridge %q: %w", bridge, err)
		}
		out = append(out, m)
	}
	return out, nil
}

func (d *Driver) uplinkMember(ctx context.Context, name string) (UplinkMember, error) {
	n, err := d.ofport(ctx, name)
	if err != nil {
		return UplinkMember{}, err
	}
	m := UplinkMember{Name: name, OFPort: n}
	link, err := d.nl.LinkByName(name)
	var nf netlink.LinkNotFoundError
	switch {
	case err == nil:
		m.MAC = link.Attrs().HardwareAddr
		return m, nil
	case !errors.As(err, &nf):
		return m, fmt.Errorf("look up uplink %q: %w", name, err)
	}
	// Not in our namespace: take the MAC OVS uses.
	d.ovs.Cache().View(func(v ovsdb.View) {
		if r, ok := v.FindString("Interface", "name", name); ok {
			m.MAC, _ = net.ParseMAC(r.String("mac_in_use"))
		}
	})
	return m, nil
}

// RemoveUplinks deletes the uplink ports (single or bond) from bridge.
// Idempotent; a missing bridge has no uplinks.
func (d *Driver) RemoveUplinks(ctx context.Context, bridge string) error {
	if !d.bridgeExists(bridge) {
		return nil
	}
	err := d.ovs.Ensure(ctx, func(v ovsdb.View) ([]ovsdb.Operation, error) {
		if _, ok := v.FindString("Bridge", "name", bridge); !ok {
			return nil, nil
		}
		return removeUplinkOps(v, bridge, "", nil)
	})
	if err != nil {
		return fmt.Errorf("remove uplinks from bridge %q: %w", bridge, err)
	}
	return nil
}
