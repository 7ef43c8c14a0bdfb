package ovsdb

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
)

// ErrNotFound is wrapped by errors about a bridge, port or interface that
// does not exist.
var ErrNotFound = errors.New("ovsdb: not found")

// ErrMismatch is wrapped by errors of ensure helpers that found an object
// with the requested name that cannot be made to match the request (a port
// of another type or on another bridge).
var ErrMismatch = errors.New("ovsdb: exists with different attributes")

// ErrInvalid is wrapped by errors about a bad request; nothing is changed.
var ErrInvalid = errors.New("ovsdb: invalid argument")

// BridgeSpec describes a bridge for CreateBridge. Nil slices and maps mean
// "leave as it is" on an existing bridge.
type BridgeSpec struct {
	Name string
	// DatapathType is "system" or "netdev"; "" leaves the OVS default.
	DatapathType string
	// KeepDatapathType: an existing bridge of another datapath type
	// ("" counts as system) is not converted; the call fails with
	// ErrMismatch instead. The check is made on the view the change is
	// computed from, so a bridge created meanwhile is caught too.
	KeepDatapathType bool
	// FailMode is "secure" or "standalone"; "" leaves it unset.
	FailMode string
	// Protocols are OpenFlow versions, e.g. {"OpenFlow13"}.
	Protocols []string
	// Controllers are controller targets, e.g. "tcp:127.0.0.1:6633". When
	// non-nil the bridge ends up with exactly these.
	Controllers []string
	// ExternalIDs are set on the bridge (other keys are kept).
	ExternalIDs map[string]string
}

func (s BridgeSpec) validate() error {
	if s.Name == "" {
		return fmt.Errorf("%w: bridge name is empty", ErrInvalid)
	}
	switch s.FailMode {
	case "", "secure", "standalone":
	default:
		return fmt.Errorf("%w: bridge %q: fail mode %q (want secure or standalone)", ErrInvalid, s.Name, s.FailMode)
	}
	for _, p := range s.Protocols {
		switch p {
		case "OpenFlow10", "OpenFlow11", "OpenFlow12", "OpenFlow13", "OpenFlow14", "OpenFlow15":
		default:
			return fmt.Errorf("%w: bridge %q: protocol %q", ErrInvalid, s.Name, p)
		}
	}
	for _, c := range s.Controllers {
		if c == "" {
			return fmt.Errorf("%w: bridge %q: empty controller target", ErrInvalid, s.Name)
		}
	}
	return nil
}

// rootRow returns the Open_vSwitch table's single row.
func rootRow(v View) (Row, error) {
	rows := v.Rows("Open_vSwitch")
	if len(rows) != 1 {
		return nil, fmt.Errorf("%w: %d Open_vSwitch rows (database not initialised?)", ErrNotFound, len(rows))
	}
	return rows[0], nil
}

// CreateBridge makes sure a bridge named spec.Name exists with the given
// attributes and is listed in Open_vSwitch.bridges. A matching bridge is
// left alone (nil); a bridge with other attributes is updated. Like
// upstream netplugin, no LOCAL port is created. When it returns nil the
// cache shows the bridge. Safe to call repeatedly and concurrently.
func (c *Client) CreateBridge(ctx context.Context, spec BridgeSpec) error {
	if err := spec.validate(); err != nil {
		return err
	}
	err := c.ensure(ctx, func(v View) ([]Operation, error) { return bridgeOpsFromView(v, spec) })
	if err != nil {
		return fmt.Errorf("create bridge %q: %w", spec.Name, err)
	}
	return nil
}

// orSystem is a datapath type with OVS's default ("") spelled out.
func orSystem(t string) string {
	if t == "" {
		return "system"
	}
	return t
}

// bridgeOpsFromView computes the operations that take the cached state to
// spec; none when it already matches.
func bridgeOpsFromView(v View, spec BridgeSpec) ([]Operation, error) {
	root, err := rootRow(v)
	if err != nil {
		return nil, err
	}
	rootWhere := []Condition{Eq("_uuid", root.UUID())}
	br, exists := v.FindString("Bridge", "name", spec.Name)
	if !exists {
		row := Row{"name": spec.Name}
		if spec.DatapathType != "" {
			row["datapath_type"] = spec.DatapathType
		}
		if spec.FailMode != "" {
			row["fail_mode"] = spec.FailMode
		}
		if spec.Protocols != nil {
			row["protocols"] = spec.Protocols
		}
		if len(spec.ExternalIDs) > 0 {
			row["external_ids"] = spec.ExternalIDs
		}
		ops, ctrls := controllerInserts(spec.Controllers)
		if len(ctrls) > 0 {
			row["controller"] = ctrls
		}
		return append(ops,
			Insert("Bridge", row, "newbridge"),
			Mutate("Open_vSwitch", rootWhere, MutateInsert("bridges", Set{NamedUUID("newbridge")})),
		), nil
	}

	if spec.KeepDatapathType && orSystem(br.String("datapath_type")) != orSystem(spec.DatapathType) {
		return nil, fmt.Errorf("%w: bridge %q already exists but has datapath_type %q, not %q",
			ErrMismatch, spec.Name, br.String("datapath_type"), orSystem(spec.DatapathType))
	}
	var ops []Operation
	row := Row{}
	if spec.DatapathType != "" && br.String("datapath_type") != spec.DatapathType {
		row["datapath_type"] = spec.DatapathType
	}
	if spec.FailMode != "" && br.String("fail_mode") != spec.FailMode {
		row["fail_mode"] = spec.FailMode
	}
	if spec.Protocols != nil && !sameStrings(br.Strings("protocols"), spec.Protocols) {
		row["protocols"] = spec.Protocols
	}
	if ids, changed := mergeIDs(br.StringMap("external_ids"), spec.ExternalIDs); changed {
		row["external_ids"] = ids
	}
	if spec.Controllers != nil {
		var have []string
		for _, id := range br.UUIDs("controller") {
			if cr, ok := v.Row("Controller", id); ok {
				have = append(have, cr.String("target"))
			}
		}
		if !sameStrings(have, spec.Controllers) {
			ins, ctrls := controllerInserts(spec.Controllers)
			ops = append(ops, ins...)
			row["controller"] = ctrls
		}
	}
	if len(row) > 0 {
		ops = append(ops, Update("Bridge", row, Eq("_uuid", br.UUID())))
	}
	if !slices.Contains(root.UUIDs("bridges"), br.UUID()) {
		ops = append(ops, Mutate("Open_vSwitch", rootWhere, MutateInsert("bridges", Set{br.UUID()})))
	}
	return ops, nil
}

// controllerInserts inserts one Controller row per target and returns the
// set referencing them.
func controllerInserts(targets []string) ([]Operation, Set) {
	var ops []Operation
	refs := Set{}
	for i, t := range dedup(targets) {
		name := fmt.Sprintf("ctrl%d", i)
		ops = append(ops, Insert("Controller", Row{"target": t}, name))
		refs = append(refs, NamedUUID(name))
	}
	return ops, refs
}

func dedup(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return slices.Compact(out)
}

func sameStrings(a, b []string) bool { return slices.Equal(dedup(a), dedup(b)) }

// mergeIDs lays want over have; changed is false when have already holds
// every key of want with the same value.
func mergeIDs(have, want map[string]string) (map[string]string, bool) {
	changed := false
	for k, v := range want {
		if cur, ok := have[k]; !ok || cur != v {
			changed = true
		}
	}
	if !changed {
		return have, false
	}
	out := maps.Clone(have)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, want)
	return out, true
}

// DeleteBridge deletes a bridge with its ports. A missing bridge is not an
// error. When it returns nil the cache no longer shows the bridge.
func (c *Client) DeleteBridge(ctx context.Context, name string) error {
	err := c.ensure(ctx, func(v View) ([]Operation, error) {
		br, ok := v.FindString("Bridge", "name", name)
		if !ok {
			return nil, nil
		}
		root, err := rootRow(v)
		if err != nil {
			return nil, err
		}
		return []Operation{
			Mutate("Open_vSwitch", []Condition{Eq("_uuid", root.UUID())}, MutateDelete("bridges", Set{br.UUID()})),
			Delete("Bridge", Eq("_uuid", br.UUID())),
		}, nil
	})
	if err != nil {
		return fmt.Errorf("delete bridge %q: %w", name, err)
	}
	return nil
}

// ListBridges returns the names of all bridges, sorted, from the cache.
func (c *Client) ListBridges(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var names []string
	c.cache.View(func(v View) {
		for _, r := range v.Rows("Bridge") {
			names = append(names, r.String("name"))
		}
	})
	sort.Strings(names)
	return names, nil
}

// BridgeInfo is a bridge as the cache knows it.
type BridgeInfo struct {
	UUID         UUID
	Name         string
	DatapathType string
	FailMode     string
	Protocols    []string
	Controllers  []string
	ExternalIDs  map[string]string
	Ports        []string
}

// GetBridge returns a bridge from the cache.
func (c *Client) GetBridge(ctx context.Context, name string) (BridgeInfo, error) {
	if err := ctx.Err(); err != nil {
		return BridgeInfo{}, err
	}
	var info BridgeInfo
	found := false
	c.cache.View(func(v View) {
		br, ok := v.FindString("Bridge", "name", name)
		if !ok {
			return
		}
		found = true
		info = BridgeInfo{
			UUID: br.UUID(), Name: name,
			DatapathType: br.String("datapath_type"), FailMode: br.String("fail_mode"),
			Protocols: br.Strings("protocols"), ExternalIDs: br.StringMap("external_ids"),
		}
		for _, id := range br.UUIDs("controller") {
			if cr, ok := v.Row("Controller", id); ok {
				info.Controllers = append(info.Controllers, cr.String("target"))
			}
		}
		sort.Strings(info.Controllers)
		info.Ports = portNames(v, br)
	})
	if !found {
		return BridgeInfo{}, fmt.Errorf("bridge %q: %w", name, ErrNotFound)
	}
	return info, nil
}

func portNames(v View, br Row) []string {
	var names []string
	for _, id := range br.UUIDs("ports") {
		if p, ok := v.Row("Port", id); ok {
			names = append(names, p.String("name"))
		}
	}
	sort.Strings(names)
	return names
}

// WaitApplied waits (bounded by ctx) until ovs-vswitchd has applied every
// change committed so far, the way ovs-vsctl does without --no-wait: it
// increments Open_vSwitch.next_cfg and waits for cur_cfg to reach it.
// Without a running ovs-vswitchd it waits until ctx ends.
func (c *Client) WaitApplied(ctx context.Context) error {
	var root UUID
	var err error
	c.cache.View(func(v View) {
		var r Row
		if r, err = rootRow(v); err == nil {
			root = r.UUID()
		}
	})
	if err != nil {
		return fmt.Errorf("wait for ovs-vswitchd: %w", err)
	}
	where := []Condition{Eq("_uuid", root)}
	res, err := c.Transact(ctx,
		Mutate("Open_vSwitch", where, Mutation{Column: "next_cfg", Mutator: "+=", Value: int64(1)}),
		Select("Open_vSwitch", []string{"next_cfg"}, where...))
	if err != nil {
		return fmt.Errorf("wait for ovs-vswitchd: %w", err)
	}
	if len(res[1].Rows) != 1 {
		return fmt.Errorf("wait for ovs-vswitchd: %w: Open_vSwitch row %s", ErrNotFound, root)
	}
	next, _ := res[1].Rows[0].Int("next_cfg")
	err = c.cache.WaitFor(ctx, func(v View) bool {
		r, ok := v.Row("Open_vSwitch", root)
		cur, _ := r.Int("cur_cfg")
		return ok && cur >= next
	})
	if err != nil {
		return fmt.Errorf("wait for ovs-vswitchd to apply next_cfg %d: %w", next, err)
	}
	return nil
}
