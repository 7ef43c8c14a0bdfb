package ovsdriver

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/contiv/netplugin/ofnet/ovsdb"
)

// bridgeProtocols are the OpenFlow versions the contiv bridges speak.
var bridgeProtocols = []string{"OpenFlow10", "OpenFlow11", "OpenFlow12", "OpenFlow13"}

// EnsureBridge makes sure bridge name exists with the columns of spec
// docs/dataplane.md §1.2: protocols OpenFlow10..13, fail_mode secure, the
// configured datapath_type (omitted for "system"), no LOCAL port, and the
// single controller tcp:127.0.0.1:<controllerPort>, and in-band control
// disabled (other_config:disable-in-band=true). A bridge with another
// fail mode, protocols or controller is corrected; one with another
// datapath type is refused (ErrMismatch), since changing it would cut every
// port of the bridge off. Idempotent.
func (d *Driver) EnsureBridge(ctx context.Context, name string, controllerPort int) error {
	if name == "" {
		return fmt.Errorf("%w: bridge name is empty", ErrInvalid)
	}
	if controllerPort <= 0 || controllerPort > 65535 {
		return fmt.Errorf("%w: bridge %q: controller port %d", ErrInvalid, name, controllerPort)
	}
	spec := ovsdb.BridgeSpec{
		Name:        name,
		FailMode:    "secure",
		Protocols:   bridgeProtocols,
		Controllers: []string{"tcp:127.0.0.1:" + strconv.Itoa(controllerPort)},
	}
	if d.cfg.DatapathType != "system" {
		spec.DatapathType = d.cfg.DatapathType
	}
	spec.KeepDatapathType = true
	if err := d.ovs.CreateBridge(ctx, spec); err != nil {
		return fmt.Errorf("ensure bridge %q: %w", name, err)
	}
	return d.ensureBridgeOtherConfig(ctx, name, bridgeOtherConfig)
}

// DatapathID returns the bridge's datapath id, waiting (bounded by ctx and
// ofportTimeout) until ovs-vswitchd has filled Bridge.datapath_id.
func (d *Driver) DatapathID(ctx context.Context, bridge string) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, ofportTimeout)
	defer cancel()
	var dpid uint64
	var perr error
	err := d.ovs.Cache().WaitFor(ctx, func(v ovsdb.View) bool {
		br, ok := v.FindString("Bridge", "name", bridge)
		if !ok {
			perr = fmt.Errorf("bridge %q: %w", bridge, ErrNotFound)
			return true
		}
		s := br.String("datapath_id")
		if s == "" {
			return false
		}
		dpid, perr = strconv.ParseUint(s, 16, 64)
		return true
	})
	if err != nil {
		return 0, fmt.Errorf("datapath id of bridge %q: %w", bridge, err)
	}
	if perr != nil {
		return 0, fmt.Errorf("datapath id of bridge %q: %w", bridge, perr)
	}
	return dpid, nil
}

// BridgeExternalID reads one key of the bridge's external_ids (from the
// cache). A missing bridge is an error wrapping ErrNotFound.
func (d *Driver) BridgeExternalID(ctx context.Context, bridge, key string) (string, bool, error) {
	info, err := d.ovs.GetBridge(ctx, bridge)
	if err != nil {
		if errors.Is(err, ovsdb.ErrNotFound) {
			err = fmt.Errorf("%w: %w", ErrNotFound, err)
		}
		return "", false, fmt.Errorf("external id %q of bridge %q: %w", key, bridge, err)
	}
	v, ok := info.ExternalIDs[key]
	return v, ok, nil
}

// SetBridgeExternalID sets one key of the bridge's external_ids, keeping
// the others. When it returns nil the cache shows the new value.
func (d *Driver) SetBridgeExternalID(ctx context.Context, bridge, key, value string) error {
	if key == "" {
		return fmt.Errorf("%w: bridge %q: empty external id key", ErrInvalid, bridge)
	}
	err := d.ovs.Ensure(ctx, func(v ovsdb.View) ([]ovsdb.Operation, error) {
		br, ok := v.FindString("Bridge", "name", bridge)
		if !ok {
			return nil, ErrNotFound
		}
		if cur, ok := br.StringMap("external_ids")[key]; ok && cur == value {
			return nil, nil
		}
		where := []ovsdb.Condition{ovsdb.Eq("_uuid", br.UUID())}
		// A map "insert" mutation never overwrites a key: delete it first.
		return []ovsdb.Operation{
			ovsdb.Mutate("Bridge", where, ovsdb.MutateDelete("external_ids", ovsdb.Set{key})),
			ovsdb.Mutate("Bridge", where, ovsdb.MutateInsert("external_ids", map[string]string{key: value})),
		}, nil
	})
	if err != nil {
		return fmt.Errorf("set external id %q of bridge %q: %w", key, bridge, err)
	}
	return nil
}
