package resources

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/bits-and-blooms/bitset"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/state"
)

// poolID is the state id of every tag resource object.
const poolID = "global"

// Manager allocates VLAN and VXLAN tags. It keeps nothing in memory; every
// change is a compare-and-swap on the oper object, so two netmasters never
// hand out one tag twice.
//
// Redefining a range (DefineVLANs/DefineVXLANs) writes the config object and
// then the oper object; the netmaster runs it under its global mutex, never
// concurrently with an allocation.
type Manager struct {
	vlanCfg   state.Collection[state.VlanResource]
	vlanOper  state.Collection[state.VlanResourceOper]
	vxlanCfg  state.Collection[state.VxlanResource]
	vxlanOper state.Collection[state.VxlanResourceOper]
}

// New returns a Manager over kv.
func New(kv objdb.KV) *Manager {
	return &Manager{
		vlanCfg:   state.NewCollection[state.VlanResource](kv, state.PrefixVlanCfg),
		vlanOper:  state.NewCollection[state.VlanResourceOper](kv, state.PrefixVlanOper),
		vxlanCfg:  state.NewCollection[state.VxlanResource](kv, state.PrefixVxlanCfg),
		vxlanOper: state.NewCollection[state.VxlanResourceOper](kv, state.PrefixVxlanOper),
	}
}

// read wraps a missing pool as ErrNotDefined (the text keeps "key not
// found").
func notDefined(err error) error {
	if errors.Is(err, objdb.ErrNotFound) {
		return fmt.Errorf("%w: %w", ErrNotDefined, err)
	}
	return err
}

// update is a compare-and-swap loop on one oper object.
func update[T state.Object](ctx context.Context, c state.Collection[T], fn func(cur *T) error) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		cur, ver, err := c.ReadVersion(ctx, poolID)
		if err != nil {
			return notDefined(err)
		}
		if err := fn(&cur); err != nil {
			return err
		}
		_, err = c.Write(ctx, cur, objdb.WithPrevVersion(ver))
		if errors.Is(err, objdb.ErrConflict) {
			continue
		}
		return err
	}
}

// inUse lists the tags configured and not free, as tag = bit + offset.
func inUse(cfg, free *bitset.BitSet, offset uint) []uint {
	var out []uint
	for i, ok := cfg.NextSet(0); ok; i, ok = cfg.NextSet(i + 1) {
		if !free.Test(i) {
			out = append(out, i+offset)
		}
	}
	return out
}

// checkCovered refuses a new range list that leaves an in-use tag out.
func checkCovered(kind TagKind, rs []TagRange, used []uint) error {
	for _, t := range used {
		if !inRanges(rs, t) {
			return userErr(ErrRangeInUse, "cannot update the %s range due to existing %ss %s", kind, kind, FormatTags(used))
		}
	}
	return nil
}

// Held are the tags existing objects own (networks, groups), read from
// their records by the caller. A (re)definition keeps them taken whatever
// the pool's oper object says, also when there is none: a pool deleted and
// defined again while networks exist must not forget their tags, or it
// hands one out to a second owner (docs/allocation-integrity.md).
type Held struct {
	VLANs      []uint // VLAN pool tags
	VXLANs     []uint // VNIs
	LocalVLANs []uint // host-local VLANs paired with VNIs
}

func heldOf(hs []Held) Held {
	var out Held
	for _, h := range hs {
		out.VLANs = append(out.VLANs, h.VLANs...)
		out.VXLANs = append(out.VXLANs, h.VXLANs...)
		out.LocalVLANs = append(out.LocalVLANs, h.LocalVLANs...)
	}
	return out
}

// union is a and b sorted, without repeats.
func union(a, b []uint) []uint {
	out := append(append([]uint(nil), a...), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// DefineVLANs creates or redefines the VLAN pool from a range list. VLANs in
// use (in the pool, or held) stay allocated; a new list that leaves one of
// them out is refused ("cannot update the vlan range due to existing vlans
// <list>") before the range rules are checked, as the original does.
func (m *Manager) DefineVLANs(ctx context.Context, ranges string, held ...Held) error {
	rs, err := splitRanges(ranges, VLAN)
	if err != nil {
		return fmt.Errorf("define vlan pool %q: %w", ranges, err)
	}
	for {
		var used []uint
		oper, ver, err := m.vlanOper.ReadVersion(ctx, poolID)
		switch {
		case err == nil:
			cfg, err := m.vlanCfg.Read(ctx, poolID)
			if err != nil && !errors.Is(err, objdb.ErrNotFound) {
				return fmt.Errorf("define vlan pool %q: %w", ranges, err)
			}
			used = inUse(&cfg.VLANs, &oper.FreeVLANs, 0)
		case !errors.Is(err, objdb.ErrNotFound):
			return fmt.Errorf("define vlan pool %q: %w", ranges, err)
		}
		used = union(used, heldOf(held).VLANs)
		if err := checkCovered(VLAN, rs, used); err != nil {
			return fmt.Errorf("define vlan pool %q: %w", ranges, err)
		}
		if err := checkRanges(ranges, rs, VLAN); err != nil {
			return fmt.Errorf("define vlan pool %q: %w", ranges, err)
		}
		cfg := state.VlanResource{Common: state.Common{ID: poolID}, VLANs: *bitset.New(vlanBits)}
		for _, r := range rs {
			for t := r.Min; t <= r.Max && t < vlanBits; t++ {
				cfg.VLANs.Set(t)
			}
		}
		cfg.VLANs.Clear(0).Clear(MaxVLAN)
		next := state.VlanResourceOper{Common: state.Common{ID: poolID}, FreeVLANs: *cfg.VLANs.Clone()}
		for _, t := range used {
			next.FreeVLANs.Clear(t)
		}
		if _, err := m.vlanCfg.Write(ctx, cfg); err != nil {
			return fmt.Errorf("define vlan pool %q: %w", ranges, err)
		}
		opt := objdb.WithCreateOnly()
		if ver != 0 {
			opt = objdb.WithPrevVersion(ver)
		}
		_, err = m.vlanOper.Write(ctx, next, opt)
		if errors.Is(err, objdb.ErrConflict) {
			continue // a tag was taken or freed meanwhile: recompute
		}
		if err != nil {
			return fmt.Errorf("define vlan pool %q: %w", ranges, err)
		}
		return nil
	}
}

// AllocateVLAN takes the requested VLAN (must be free: "requested vlan not
// available - vlan:<n>"), or with requested 0 the lowest free one ("no vlans
// available").
func (m *Manager) AllocateVLAN(ctx context.Context, requested uint) (uint, error) {
	var got uint
	err := update(ctx, m.vlanOper, func(o *state.VlanResourceOper) error {
		if requested != 0 {
			if requested >= vlanBits || !o.FreeVLANs.Test(requested) {
				return userErr(ErrVLANUnavailable, "requested vlan not available - vlan:%d", requested)
			}
			got = requested
		} else {
			t, ok := o.FreeVLANs.NextSet(1)
			if !ok || t >= MaxVLAN {
				return userErr(ErrVLANExhausted, "no vlans available")
			}
			got = t
		}
		o.FreeVLANs.Clear(got)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("allocate vlan %d: %w", requested, err)
	}
	return got, nil
}

// FreeVLAN returns a VLAN to the pool (no-op when free or not configured).
func (m *Manager) FreeVLAN(ctx context.Context, vlan uint) error {
	cfg, err := m.vlanCfg.Read(ctx, poolID)
	if err != nil {
		return fmt.Errorf("free vlan %d: %w", vlan, notDefined(err))
	}
	if !cfg.VLANs.Test(vlan) {
		return nil
	}
	err = update(ctx, m.vlanOper, func(o *state.VlanResourceOper) error {
		if o.FreeVLANs.Test(vlan) {
			return errNoChange
		}
		o.FreeVLANs.Set(vlan)
		return nil
	})
	if err != nil && !errors.Is(err, errNoChange) {
		return fmt.Errorf("free vlan %d: %w", vlan, err)
	}
	return nil
}

var errNoChange = errors.New("resources: no change")

// VLANsInUse lists the allocated VLANs ("1-3, 7") and counts them.
func (m *Manager) VLANsInUse(ctx context.Context) (list string, count int, err error) {
	tags, err := m.vlansInUse(ctx)
	if err != nil {
		return "", 0, fmt.Errorf("list vlans in use: %w", err)
	}
	return FormatTags(tags), len(tags), nil
}

func (m *Manager) vlansInUse(ctx context.Context) ([]uint, error) {
	cfg, err := m.vlanCfg.Read(ctx, poolID)
	if err != nil {
		return nil, notDefined(err)
	}
	oper, err := m.vlanOper.Read(ctx, poolID)
	if err != nil {
		return nil, notDefined(err)
	}
	return inUse(&cfg.VLANs, &oper.FreeVLANs, 0), nil
}

// DeleteVLANs removes the VLAN pool (config and oper).
func (m *Manager) DeleteVLANs(ctx context.Context) error {
	if err := m.vlanOper.Clear(ctx, poolID); err != nil {
		return fmt.Errorf("delete vlan pool: %w", err)
	}
	if err := m.vlanCfg.Clear(ctx, poolID); err != nil {
		return fmt.Errorf("delete vlan pool: %w", err)
	}
	return nil
}
