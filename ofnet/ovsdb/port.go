package ovsdb

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// PortSpec describes a single-interface port for CreatePort. The Port and
// its Interface share the name.
type PortSpec struct {
	Name string
	// Type is the Interface type: "" (a system device, e.g. a veth end),
	// "internal", "vxlan", ...
	Type string
	// Options is the Interface's options map (e.g. remote_ip, key,
	// dst_port); an existing port ends up with exactly these options.
	Options map[string]string
	// Tag is the access VLAN (1..4094); 0 makes the port a trunk.
	Tag int
	// ExternalIDs are set on the Port, InterfaceExternalIDs on the
	// Interface (other existing keys are kept).
	ExternalIDs          map[string]string
	InterfaceExternalIDs map[string]string
	// IngressPolicingRate (kbps) and IngressPolicingBurst (kb) limit what
	// the port's device sends into the bridge; 0 means no limit.
	IngressPolicingRate  int64
	IngressPolicingBurst int64
	// MTURequest is the Interface's mtu_request (0: none asked, an
	// existing request is left as it is). ovs-vswitchd keeps an internal
	// port at this MTU; without it, it lowers the port to its bridge's
	// smallest MTU whenever the bridge's ports change.
	MTURequest int64
	// OFPortRequest is the Interface's ofport_request for a port created
	// here (0: none); an existing port's request is left as it is.
	// ovs-vswitchd gives the port that OpenFlow number unless another
	// port has it, and then picks one itself.
	OFPortRequest int64
}

// MaxOFPortRequest is the largest OpenFlow port number ovs-vswitchd
// grants on request (OFPP_MAX - 1; its bridges have at most OFPP_MAX
// ports).
const MaxOFPortRequest = 0xfeff

func (s PortSpec) validate(bridge string) error {
	if bridge == "" {
		return fmt.Errorf("%w: port %q: bridge name is empty", ErrInvalid, s.Name)
	}
	if s.Name == "" {
		return fmt.Errorf("%w: bridge %q: port name is empty", ErrInvalid, bridge)
	}
	if s.Tag < 0 || s.Tag > 4094 {
		return fmt.Errorf("%w: port %q: tag %d out of range 0..4094", ErrInvalid, s.Name, s.Tag)
	}
	if s.IngressPolicingRate < 0 || s.IngressPolicingBurst < 0 {
		return fmt.Errorf("%w: port %q: negative policing values", ErrInvalid, s.Name)
	}
	if s.MTURequest < 0 || s.MTURequest > 65535 {
		return fmt.Errorf("%w: port %q: MTU request %d out of range 0..65535", ErrInvalid, s.Name, s.MTURequest)
	}
	if s.OFPortRequest < 0 || s.OFPortRequest > MaxOFPortRequest {
		return fmt.Errorf("%w: port %q: ofport request %d out of range 0..%d", ErrInvalid, s.Name, s.OFPortRequest, MaxOFPortRequest)
	}
	return nil
}

// CreatePort makes sure bridge has a port spec.Name with one interface of
// the same name and the given attributes. A matching port is left alone;
// a port whose options, tag, external ids, policing or MTU request differ
// is updated.
// A port of another type, with several interfaces, or on another bridge
// is an error wrapping ErrMismatch ("already exists but is not ..."). The
// bridge must exist. Safe to call repeatedly and concurrently.
func (c *Client) CreatePort(ctx context.Context, bridge string, spec PortSpec) error {
	if err := spec.validate(bridge); err != nil {
		return err
	}
	err := c.ensure(ctx, func(v View) ([]Operation, error) { return portOpsFromView(v, bridge, spec) })
	if err != nil {
		return fmt.Errorf("create port %q on bridge %q: %w", spec.Name, bridge, err)
	}
	return nil
}

// portOwner returns the bridge whose ports include id.
func portOwner(v View, id UUID) (Row, bool) {
	for _, br := range v.Rows("Bridge") {
		if slices.Contains(br.UUIDs("ports"), id) {
			return br, true
		}
	}
	return nil, false
}

func portOpsFromView(v View, bridge string, spec PortSpec) ([]Operation, error) {
	br, ok := v.FindString("Bridge", "name", bridge)
	if !ok {
		return nil, fmt.Errorf("bridge: %w", ErrNotFound)
	}
	brWhere := []Condition{Eq("_uuid", br.UUID())}
	port, exists := v.FindString("Port", "name", spec.Name)
	if !exists {
		iface := Row{"name": spec.Name, "type": spec.Type}
		if len(spec.Options) > 0 {
			iface["options"] = spec.Options
		}
		if len(spec.InterfaceExternalIDs) > 0 {
			iface["external_ids"] = spec.InterfaceExternalIDs
		}
		if spec.IngressPolicingRate > 0 {
			iface["ingress_policing_rate"] = spec.IngressPolicingRate
		}
		if spec.IngressPolicingBurst > 0 {
			iface["ingress_policing_burst"] = spec.IngressPolicingBurst
		}
		if spec.MTURequest > 0 {
			iface["mtu_request"] = spec.MTURequest
		}
		if spec.OFPortRequest > 0 {
			iface["ofport_request"] = spec.OFPortRequest
		}
		p := Row{"name": spec.Name, "interfaces": Set{NamedUUID("newiface")}}
		if spec.Tag != 0 {
			p["vlan_mode"], p["tag"] = "access", int64(spec.Tag)
		} else {
			p["vlan_mode"] = "trunk"
		}
		if len(spec.ExternalIDs) > 0 {
			p["external_ids"] = spec.ExternalIDs
		}
		return []Operation{
			Insert("Interface", iface, "newiface"),
			Insert("Port", p, "newport"),
			Mutate("Bridge", brWhere, MutateInsert("ports", Set{NamedUUID("newport")})),
		}, nil
	}

	var ops []Operation
	owner, owned := portOwner(v, port.UUID())
	switch {
	case owned && owner.UUID() != br.UUID():
		return nil, fmt.Errorf("%w: port already exists but is on bridge %q, not %q", ErrMismatch, owner.String("name"), bridge)
	case !owned:
		ops = append(ops, Mutate("Bridge", brWhere, MutateInsert("ports", Set{port.UUID()})))
	}
	ifaces := port.UUIDs("interfaces")
	if len(ifaces) != 1 {
		return nil, fmt.Errorf("%w: port already exists but is not a single-interface port (%d interfaces)", ErrMismatch, len(ifaces))
	}
	iface, ok := v.Row("Interface", ifaces[0])
	if !ok {
		return nil, fmt.Errorf("port's interface %s not in cache: %w", ifaces[0], ErrNotFound)
	}
	if name := iface.String("name"); name != spec.Name {
		return nil, fmt.Errorf("%w: port already exists but its interface is %q, not %q", ErrMismatch, name, spec.Name)
	}
	if t := iface.String("type"); t != spec.Type {
		return nil, fmt.Errorf("%w: port already exists but is not of type %q (it is %q)", ErrMismatch, spec.Type, t)
	}

	ifRow := Row{}
	if opts := iface.StringMap("options"); !maps.Equal(opts, nonNil(spec.Options)) {
		ifRow["options"] = nonNil(spec.Options)
	}
	if ids, changed := mergeIDs(iface.StringMap("external_ids"), spec.InterfaceExternalIDs); changed {
		ifRow["external_ids"] = ids
	}
	if rate, _ := iface.Int("ingress_policing_rate"); rate != spec.IngressPolicingRate {
		ifRow["ingress_policing_rate"] = spec.IngressPolicingRate
	}
	if burst, _ := iface.Int("ingress_policing_burst"); burst != spec.IngressPolicingBurst {
		ifRow["ingress_policing_burst"] = spec.IngressPolicingBurst
	}
	if mtu, _ := iface.Int("mtu_request"); spec.MTURequest > 0 && mtu != spec.MTURequest {
		ifRow["mtu_request"] = spec.MTURequest
	}
	if len(ifRow) > 0 {
		ops = append(ops, Update("Interface", ifRow, Eq("_uuid", iface.UUID())))
	}

	pRow := Row{}
	tag, hasTag := port.Int("tag")
	mode := port.String("vlan_mode")
	if spec.Tag != 0 && (!hasTag || tag != int64(spec.Tag) || mode != "access") {
		pRow["vlan_mode"], pRow["tag"] = "access", int64(spec.Tag)
	}
	if spec.Tag == 0 && (hasTag || mode != "trunk") {
		pRow["vlan_mode"], pRow["tag"] = "trunk", Set{}
	}
	if ids, changed := mergeIDs(port.StringMap("external_ids"), spec.ExternalIDs); changed {
		pRow["external_ids"] = ids
	}
	if len(pRow) > 0 {
		ops = append(ops, Update("Port", pRow, Eq("_uuid", port.UUID())))
	}
	return ops, nil
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// VTEPSpec describes a VXLAN tunnel port.
type VTEPSpec struct {
	Name     string
	RemoteIP string
	// Key is the VNI option: "flow" (default; set per flow) or a number.
	Key string
	// DstPort is the UDP port (default 4789).
	DstPort int
	// TOS is the outer TOS option (default "inherit").
	TOS         string
	ExternalIDs map[string]string
}

// VTEPPortName is netplugin's name for the tunnel port to a peer:
// "vxif" + the IPv4 address without dots (e.g. "vxif192168210").
func VTEPPortName(remoteIP string) string {
	return "vxif" + strings.ReplaceAll(remoteIP, ".", "")
}

// CreateVTEPPort makes sure bridge has a vxlan port to spec.RemoteIP (see
// CreatePort for the idempotency rules). An empty Name is VTEPPortName.
func (c *Client) CreateVTEPPort(ctx context.Context, bridge string, spec VTEPSpec) error {
	addr, err := netip.ParseAddr(spec.RemoteIP)
	if err != nil {
		return fmt.Errorf("%w: vtep port on bridge %q: remote ip %q: %v", ErrInvalid, bridge, spec.RemoteIP, err)
	}
	if spec.Name == "" {
		spec.Name = VTEPPortName(addr.String())
	}
	if spec.Key == "" {
		spec.Key = "flow"
	}
	if spec.DstPort == 0 {
		spec.DstPort = 4789
	}
	if spec.DstPort < 0 || spec.DstPort > 65535 {
		return fmt.Errorf("%w: vtep port %q: dst port %d", ErrInvalid, spec.Name, spec.DstPort)
	}
	if spec.TOS == "" {
		spec.TOS = "inherit"
	}
	return c.CreatePort(ctx, bridge, PortSpec{
		Name: spec.Name,
		Type: "vxlan",
		Options: map[string]string{
			"remote_ip": addr.String(),
			"key":       spec.Key,
			"tos":       spec.TOS,
			"dst_port":  strconv.Itoa(spec.DstPort),
		},
		ExternalIDs: spec.ExternalIDs,
	})
}

// FindVTEPPort returns the name of the vxlan interface whose remote_ip is
// remoteIP, from the cache.
func (c *Client) FindVTEPPort(ctx context.Context, remoteIP string) (string, bool) {
	var name string
	c.cache.View(func(v View) {
		for _, r := range v.Rows("Interface") {
			if r.String("type") == "vxlan" && r.StringMap("options")["remote_ip"] == remoteIP {
				name = r.String("name")
				return
			}
		}
	})
	return name, name != ""
}

// DeletePort removes port name from bridge together with its interfaces.
// A missing port (or bridge) is not an error; a port of that name on
// another bridge is (ErrMismatch) and is left alone.
func (c *Client) DeletePort(ctx context.Context, bridge, name string) error {
	err := c.ensure(ctx, func(v View) ([]Operation, error) {
		port, ok := v.FindString("Port", "name", name)
		if !ok {
			return nil, nil
		}
		id := port.UUID()
		var ops []Operation
		owner, owned := portOwner(v, id)
		if owned && owner.String("name") != bridge {
			return nil, fmt.Errorf("%w: port is on bridge %q", ErrMismatch, owner.String("name"))
		}
		if owned {
			ops = append(ops, Mutate("Bridge", []Condition{Eq("_uuid", owner.UUID())}, MutateDelete("ports", Set{id})))
		}
		ops = append(ops, Delete("Port", Eq("_uuid", id)))
		for _, ifID := range port.UUIDs("interfaces") {
			ops = append(ops, Delete("Interface", Eq("_uuid", ifID)))
		}
		return ops, nil
	})
	if err != nil {
		return fmt.Errorf("delete port %q from bridge %q: %w", name, bridge, err)
	}
	return nil
}

// GetPortList returns the names of bridge's ports, sorted, from the cache.
func (c *Client) GetPortList(ctx context.Context, bridge string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var names []string
	found := false
	c.cache.View(func(v View) {
		br, ok := v.FindString("Bridge", "name", bridge)
		if ok {
			found = true
			names = portNames(v, br)
		}
	})
	if !found {
		return nil, fmt.Errorf("port list of bridge %q: %w", bridge, ErrNotFound)
	}
	return names, nil
}

// GetOFPort asks again after ofportPollMin, doubling up to ofportPollMax:
// ovs-vswitchd usually assigns the number within a few milliseconds.
const (
	ofportPollMin = 2 * time.Millisecond
	ofportPollMax = 100 * time.Millisecond
)

// GetOFPort returns the OpenFlow port number of interface ifName, waiting
// (bounded by ctx) while ovs-vswitchd has not assigned one yet. It reads
// the server directly, not the cache. A missing interface is an error
// wrapping ErrNotFound.
func (c *Client) GetOFPort(ctx context.Context, ifName string) (int, error) {
	var lastErr string
	poll := ofportPollMin
	for {
		res, err := c.Transact(ctx, Select("Interface", []string{"ofport", "error"}, Eq("name", ifName)))
		if err != nil {
			return 0, fmt.Errorf("ofport of interface %q: %w", ifName, err)
		}
		if len(res[0].Rows) == 0 {
			return 0, fmt.Errorf("ofport of interface %q: %w", ifName, ErrNotFound)
		}
		row := res[0].Rows[0]
		if n, ok := row.Int("ofport"); ok && n > 0 {
			return int(n), nil
		}
		lastErr = row.String("error")
		t := time.NewTimer(poll)
		poll = min(2*poll, ofportPollMax)
		select {
		case <-ctx.Done():
			t.Stop()
			if lastErr != "" {
				return 0, fmt.Errorf("ofport of interface %q not assigned (interface error: %s): %w", ifName, lastErr, ctx.Err())
			}
			return 0, fmt.Errorf("ofport of interface %q not assigned: %w", ifName, ctx.Err())
		case <-t.C:
		}
	}
}
