package resources

import (
	"context"
	"errors"
	"fmt"

	"github.com/bits-and-blooms/bitset"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/state"
)

// VXLAN pool layout (docs/daemons.md §3.5, §4.6): start = min-1 is stored
// in the config object's FreeVXLANsStart from the first definition on (the
// original did not, docs/daemons.md §10 #4); bit i of VXLANs/FreeVXLANs is VNI
// i+start. LocalVLANs/FreeLocalVLANs (1-4094) are the OVS-internal VLANs
// paired with the VNIs.

// DefineVXLANs creates or redefines the VXLAN pool from a single range. VNIs
// in use stay allocated (translated through the old start offset) and so do
// their local VLANs; a range that leaves one out is refused ("cannot update
// the vxlan range due to existing vxlans <list>"). It returns the new start
// (min-1), which the netmaster also records in gstate.Oper
// (freeVXLANsStart). Held VNIs and local VLANs count as in use too.
func (m *Manager) DefineVXLANs(ctx context.Context, ranges string, held ...Held) (start uint, err error) {
	rs, err := splitRanges(ranges, VXLAN)
	if err != nil {
		return 0, fmt.Errorf("define vxlan pool %q: %w", ranges, err)
	}
	for {
		var used []uint
		var oldFreeLocal *bitset.BitSet
		oper, ver, err := m.vxlanOper.ReadVersion(ctx, poolID)
		switch {
		case err == nil:
			cfg, err := m.vxlanCfg.Read(ctx, poolID)
			if err != nil && !errors.Is(err, objdb.ErrNotFound) {
				return 0, fmt.Errorf("define vxlan pool %q: %w", ranges, err)
			}
			used = inUse(&cfg.VXLANs, &oper.FreeVXLANs, cfg.FreeVXLANsStart)
			oldFreeLocal = oper.FreeLocalVLANs.Clone()
		case !errors.Is(err, objdb.ErrNotFound):
			return 0, fmt.Errorf("define vxlan pool %q: %w", ranges, err)
		}
		h := heldOf(held)
		used = union(used, h.VXLANs)
		if err := checkCovered(VXLAN, rs, used); err != nil {
			return 0, fmt.Errorf("define vxlan pool %q: %w", ranges, err)
		}
		if err := checkRanges(ranges, rs, VXLAN); err != nil {
			return 0, fmt.Errorf("define vxlan pool %q: %w", ranges, err)
		}
		r := rs[0]
		start = 0
		if r.Min > 0 {
			start = r.Min - 1
		}
		cfg := state.VxlanResource{Common: state.Common{ID: poolID},
			VXLANs: *bitset.New(vxlanBits), LocalVLANs: *bitset.New(vlanBits), FreeVXLANsStart: start}
		if r.Min > 0 {
			for v := r.Min; v <= r.Max; v++ {
				cfg.VXLANs.Set(v - start)
			}
		}
		for t := uint(firstLocalVLAN); t <= lastLocalVLAN; t++ {
			cfg.LocalVLANs.Set(t)
		}
		next := state.VxlanResourceOper{Common: state.Common{ID: poolID},
			FreeVXLANs: *cfg.VXLANs.Clone(), FreeLocalVLANs: *cfg.LocalVLANs.Clone()}
		for _, v := range used {
			next.FreeVXLANs.Clear(v - start)
		}
		if oldFreeLocal != nil {
			// Keep the local VLANs of existing VXLAN networks taken.
			for t := uint(firstLocalVLAN); t <= lastLocalVLAN; t++ {
				if !oldFreeLocal.Test(t) {
					next.FreeLocalVLANs.Clear(t)
				}
			}
		}
		for _, t := range h.LocalVLANs {
			next.FreeLocalVLANs.Clear(t)
		}
		if _, err := m.vxlanCfg.Write(ctx, cfg); err != nil {
			return 0, fmt.Errorf("define vxlan pool %q: %w", ranges, err)
		}
		opt := objdb.WithCreateOnly()
		if ver != 0 {
			opt = objdb.WithPrevVersion(ver)
		}
		_, err = m.vxlanOper.Write(ctx, next, opt)
		if errors.Is(err, objdb.ErrConflict) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("define vxlan pool %q: %w", ranges, err)
		}
		return start, nil
	}
}

// AllocateVXLAN takes the requested VNI (must be > start: "requested vxlan
// is out of range", and free: "requested vxlan not available"), or with
// requested 0 the lowest free one ("no vxlans available"), together with
// the lowest free local VLAN ("no local vlans available").
func (m *Manager) AllocateVXLAN(ctx context.Context, requested uint) (vni, localVLAN uint, err error) {
	cfg, err := m.vxlanCfg.Read(ctx, poolID)
	if err != nil {
		return 0, 0, fmt.Errorf("allocate vxlan %d: %w", requested, notDefined(err))
	}
	start := cfg.FreeVXLANsStart
	err = update(ctx, m.vxlanOper, func(o *state.VxlanResourceOper) error {
		var idx uint
		if requested != 0 {
			if requested <= start {
				return userErr(ErrVXLANOutOfRange, "requested vxlan is out of range")
			}
			idx = requested - start
			if idx >= vxlanBits || !o.FreeVXLANs.Test(idx) {
				return userErr(ErrVXLANUnavailable, "requested vxlan not available")
			}
		} else {
			var ok bool
			if idx, ok = o.FreeVXLANs.NextSet(0); !ok {
				return userErr(ErrVXLANExhausted, "no vxlans available")
			}
		}
		lv, ok := o.FreeLocalVLANs.NextSet(firstLocalVLAN)
		if !ok || lv > lastLocalVLAN {
			return userErr(ErrLocalVLANExhausted, "no local vlans available")
		}
		o.FreeVXLANs.Clear(idx)
		o.FreeLocalVLANs.Clear(lv)
		vni, localVLAN = idx+start, lv
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("allocate vxlan %d: %w", requested, err)
	}
	return vni, localVLAN, nil
}

// FreeVXLAN returns a VNI and its local VLAN to the pool (each a no-op when
// already free or not configured).
func (m *Manager) FreeVXLAN(ctx context.Context, vni, localVLAN uint) error {
	cfg, err := m.vxlanCfg.Read(ctx, poolID)
	if err != nil {
		return fmt.Errorf("free vxlan %d: %w", vni, notDefined(err))
	}
	start := cfg.FreeVXLANsStart
	freeVNI := vni > start && cfg.VXLANs.Test(vni-start)
	freeLocal := cfg.LocalVLANs.Test(localVLAN)
	err = update(ctx, m.vxlanOper, func(o *state.VxlanResourceOper) error {
		changed := false
		if freeVNI && !o.FreeVXLANs.Test(vni-start) {
			o.FreeVXLANs.Set(vni - start)
			changed = true
		}
		if freeLocal && !o.FreeLocalVLANs.Test(localVLAN) {
			o.FreeLocalVLANs.Set(localVLAN)
			changed = true
		}
		if !changed {
			return errNoChange
		}
		return nil
	})
	if err != nil && !errors.Is(err, errNoChange) {
		return fmt.Errorf("free vxlan %d: %w", vni, err)
	}
	return nil
}

// VXLANsInUse lists the allocated VNIs ("1000-1001, 2000") and counts
// them.
func (m *Manager) VXLANsInUse(ctx context.Context) (list string, count int, err error) {
	tags, err := m.vxlansInUse(ctx)
	if err != nil {
		return "", 0, fmt.Errorf("list vxlans in use: %w", err)
	}
	return FormatTags(tags), len(tags), nil
}

func (m *Manager) vxlansInUse(ctx context.Context) ([]uint, error) {
	cfg, err := m.vxlanCfg.Read(ctx, poolID)
	if err != nil {
		return nil, notDefined(err)
	}
	oper, err := m.vxlanOper.Read(ctx, poolID)
	if err != nil {
		return nil, notDefined(err)
	}
	return inUse(&cfg.VXLANs, &oper.FreeVXLANs, cfg.FreeVXLANsStart), nil
}

// VXLANStart is the stored start offset (min-1 of the VXLAN range).
func (m *Manager) VXLANStart(ctx context.Context) (uint, error) {
	cfg, err := m.vxlanCfg.Read(ctx, poolID)
	if err != nil {
		return 0, fmt.Errorf("read vxlan pool: %w", notDefined(err))
	}
	return cfg.FreeVXLANsStart, nil
}

// DeleteVXLANs removes the VXLAN pool (config and oper).
func (m *Manager) DeleteVXLANs(ctx context.Context) error {
	if err := m.vxlanOper.Clear(ctx, poolID); err != nil {
		return fmt.Errorf("delete vxlan pool: %w", err)
	}
	if err := m.vxlanCfg.Clear(ctx, poolID); err != nil {
		return fmt.Errorf("delete vxlan pool: %w", err)
	}
	return nil
}
