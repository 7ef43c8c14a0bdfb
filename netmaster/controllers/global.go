package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/netmaster/apierr"
	"github.com/contiv/netplugin/netmaster/resources"
	"github.com/contiv/netplugin/state"
)

// Built-in defaults of the global object written at first start (spec
// docs/daemons.md §4.5).
const (
	GlobalName       = "global" // the one global object's name and key
	DefaultArpMode   = "proxy"
	DefaultPvtSubnet = "172.19.0.0/16"
	DefaultVLANs     = "1-4094"
	DefaultVXLANs    = "1-10000"
	DefaultTenant    = "default"
)

// globalCtl is the global controller (docs/rest-api.md §2.1, docs/daemons.md
// §4.5). Its state writes (GlobConfig, gstate Cfg/Oper, the tag pools) are
// undone if the operation fails at any later step.
type globalCtl struct{ m *Objects }

// globalKeys are the store keys a global create, update or delete writes.
func (m *Objects) globalKeys() []string {
	return []string{
		m.st.GlobConfig.Key(GlobalName), m.st.GlobalCfg.Key(GlobalName), m.st.GlobalOper.Key(GlobalName),
		state.PrefixVlanCfg + GlobalName, state.PrefixVlanOper + GlobalName,
		state.PrefixVxlanCfg + GlobalName, state.PrefixVxlanOper + GlobalName,
	}
}

func (c globalCtl) guard(ctx context.Context, tx *contivmodel.Tx) error {
	undo, err := c.m.eps.Snapshot(ctx, c.m.globalKeys()...)
	if err != nil {
		return err
	}
	tx.OnAbort(undo)
	return nil
}

func checkInfra(infra string) error {
	switch infra {
	case "", "default", "aci", "aci-opflex":
		return nil
	}
	return contivmodel.Errorf("invalid fabric mode")
}

// Create installs the tag pools and writes the global state.
func (c globalCtl) Create(ctx context.Context, tx *contivmodel.Tx, g *contivmodel.Global) error {
	if err := checkInfra(g.NetworkInfraType); err != nil {
		return err
	}
	if err := checkTagRanges(g); err != nil {
		return err
	}
	held, err := c.m.heldTags(ctx)
	if err != nil {
		return err
	}
	if err := c.guard(ctx, tx); err != nil {
		return err
	}
	if err := c.m.res.DefineVLANs(ctx, g.Vlans, held); err != nil {
		return err
	}
	start, err := c.m.res.DefineVXLANs(ctx, g.Vxlans, held)
	if err != nil {
		return err
	}
	return c.m.writeGlobalState(ctx, g, start)
}

// heldTags are the tags the stored networks and groups own. A global
// created again after a delete (which removes the tag pools, never refused
// as in the original) keeps them taken instead of handing them out a
// second time; a new range that leaves one out is refused as an update's
// is (docs/allocation-integrity.md).
func (m *Objects) heldTags(ctx context.Context) (resources.Held, error) {
	var h resources.Held
	nets, _, err := m.st.Networks.ReadAll(ctx)
	if err != nil {
		return h, fmt.Errorf("read networks: %w", err)
	}
	groups, _, err := m.st.EndpointGroups.ReadAll(ctx)
	if err != nil {
		return h, fmt.Errorf("read endpoint groups: %w", err)
	}
	add := func(tagType string, pkt, ext int) {
		switch {
		case tagType == "vlan" && pkt > 0:
			h.VLANs = append(h.VLANs, uint(pkt))
		case tagType == "vxlan":
			if ext > 0 {
				h.VXLANs = append(h.VXLANs, uint(ext))
			}
			if pkt > 0 {
				h.LocalVLANs = append(h.LocalVLANs, uint(pkt))
			}
		}
	}
	netTag := map[string]int{}
	for _, n := range nets {
		add(n.PktTagType, n.PktTag, n.ExtPktTag)
		netTag[n.ID] = n.PktTag
	}
	for _, g := range groups {
		// A group shares its network's tags, except in ACI mode, where
		// it has a VLAN of its own from the VLAN pool.
		if g.PktTag > 0 && g.PktTag != netTag[state.NetworkID(g.TenantName, g.NetworkName)] {
			h.VLANs = append(h.VLANs, uint(g.PktTag))
		}
	}
	return h, nil
}

func (m *Objects) writeGlobalState(ctx context.Context, g *contivmodel.Global, vxlanStart uint) error {
	if _, err := m.st.GlobalCfg.Write(ctx, state.GlobalCfg{Auto: state.GlobalAutoTags{VLANs: g.Vlans, VXLANs: g.Vxlans}}); err != nil {
		return fmt.Errorf("write global tag config: %w", err)
	}
	if _, err := m.st.GlobalOper.Write(ctx, state.GlobalOper{FreeVXLANsStart: vxlanStart}); err != nil {
		return fmt.Errorf("write global oper state: %w", err)
	}
	gc := state.GlobConfig{NwInfra: g.NetworkInfraType, FwdMode: g.FwdMode, ArpMode: g.ArpMode, PvtSubnet: g.PvtSubnet}
	if _, err := m.st.GlobConfig.Write(ctx, gc); err != nil {
		return fmt.Errorf("write global forwarding config: %w", err)
	}
	return nil
}

// inUseParts renders "<V> vlans", "<X> vxlans" or both joined by " and ".
func inUseParts(v, x int) string {
	var parts []string
	if v > 0 {
		parts = append(parts, fmt.Sprintf("%d vlans", v))
	}
	if x > 0 {
		parts = append(parts, fmt.Sprintf("%d vxlans", x))
	}
	return strings.Join(parts, " and ")
}

// Update applies a changed global object, refusing in the spec's order.
func (c globalCtl) Update(ctx context.Context, tx *contivmodel.Tx, stored, req *contivmodel.Global) error {
	m := c.m
	if err := checkTagRanges(req); err != nil {
		return err
	}
	_, nv, err := m.res.VLANsInUse(ctx)
	if err != nil && !errors.Is(err, resources.ErrNotDefined) {
		return fmt.Errorf("read vlans in use: %w", err)
	}
	_, nx, err := m.res.VXLANsInUse(ctx)
	if err != nil && !errors.Is(err, resources.ErrNotDefined) {
		return fmt.Errorf("read vxlans in use: %w", err)
	}
	if req.FwdMode != stored.FwdMode {
		if nv+nx > 0 {
			return contivmodel.Errorf("Unable to update forwarding mode due to existing %s", inUseParts(nv, nx))
		}
		if stored.FwdMode == "routing" {
			bgps, err := contivmodel.List[contivmodel.Bgp](tx)
			if err != nil {
				return err
			}
			if len(bgps) > 0 {
				return contivmodel.Errorf("please delete existing Bgp configs")
			}
		}
	}
	if req.PvtSubnet != stored.PvtSubnet && nv+nx > 0 &&
		!(stored.PvtSubnet == "" && req.PvtSubnet == DefaultPvtSubnet) {
		return contivmodel.Errorf("Unable to update private subnet due to existing %s", inUseParts(nv, nx))
	}
	if err := checkInfra(req.NetworkInfraType); err != nil {
		return err
	}
	held, err := m.heldTags(ctx)
	if err != nil {
		return err
	}
	if err := c.guard(ctx, tx); err != nil {
		return err
	}
	if req.Vlans != stored.Vlans {
		if err := m.res.DefineVLANs(ctx, req.Vlans, held); err != nil {
			return err
		}
	}
	start, err := m.res.VXLANStart(ctx)
	if err != nil && !errors.Is(err, resources.ErrNotDefined) {
		return fmt.Errorf("read vxlan start: %w", err)
	}
	if req.Vxlans != stored.Vxlans {
		if start, err = m.res.DefineVXLANs(ctx, req.Vxlans, held); err != nil {
			return err
		}
	}
	if err := m.writeGlobalState(ctx, req, start); err != nil {
		return err
	}
	stored.ArpMode, stored.FwdMode, stored.NetworkInfraType = req.ArpMode, req.FwdMode, req.NetworkInfraType
	stored.PvtSubnet, stored.Vlans, stored.Vxlans = req.PvtSubnet, req.Vlans, req.Vxlans
	return nil
}

// Delete removes the global state and the tag pools (never refused).
func (c globalCtl) Delete(ctx context.Context, tx *contivmodel.Tx, _ *contivmodel.Global) error {
	m := c.m
	if err := c.guard(ctx, tx); err != nil {
		return err
	}
	for _, clear := range []func() error{
		func() error { return m.st.GlobConfig.Clear(ctx, GlobalName) },
		func() error { return m.res.DeleteVLANs(ctx) },
		func() error { return m.res.DeleteVXLANs(ctx) },
		func() error { return m.st.GlobalCfg.Clear(ctx, GlobalName) },
		func() error { return m.st.GlobalOper.Clear(ctx, GlobalName) },
	} {
		if err := clear(); err != nil {
			return fmt.Errorf("delete global state: %w", err)
		}
	}
	return nil
}

// Oper reports the tags in use.
func (c globalCtl) Oper(ctx context.Context, _ *contivmodel.Tx, _ *contivmodel.Global) (any, error) {
	m := c.m
	gop, err := m.st.GlobalOper.Read(ctx, GlobalName)
	if err != nil {
		return nil, apierr.Store("read global oper state", err)
	}
	vl, nv, err := m.res.VLANsInUse(ctx)
	if err != nil {
		return nil, apierr.Store("read vlans in use", err)
	}
	xl, nx, err := m.res.VXLANsInUse(ctx)
	if err != nil {
		return nil, apierr.Store("read vxlans in use", err)
	}
	return &contivmodel.GlobalOper{
		ClusterMode:     m.cfg.ClusterMode,
		DefaultNetwork:  gop.DefaultNetwork,
		FreeVXLANsStart: int(gop.FreeVXLANsStart),
		NumNetworks:     nv + nx,
		VlansInUse:      vl,
		VxlansInUse:     xl,
	}, nil
}

// globalReady checks the readiness for a network of encap (spec
// docs/rest-api.md §2.4 step 1) and returns the global object.
func globalReady(tx *contivmodel.Tx, encap string) (*contivmodel.Global, error) {
	notReady := func(why string) error {
		return contivmodel.Errorf("Global configuration is not ready: %s", why)
	}
	g, err := contivmodel.Get[contivmodel.Global](tx, GlobalName)
	if errors.Is(err, contivmodel.ErrNotFound) {
		return nil, notReady("global configuration is not ready")
	}
	if err != nil {
		return nil, err
	}
	switch {
	case g.FwdMode == "":
		return nil, notReady("global forwarding mode is not set")
	case encap == "vlan" && g.Vlans == "":
		return nil, notReady("global vlan range is not set")
	case encap == "vxlan" && g.Vxlans == "":
		return nil, notReady("global vxlan range is not set")
	}
	return g, nil
}
