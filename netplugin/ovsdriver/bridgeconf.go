package ovsdriver

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/contiv/netplugin/ofnet/ovsdb"
)

// bridgeOtherConfig is set in other_config of every contiv bridge
// (docs/dataplane-scale.md). The controller is on 127.0.0.1, so in-band
// control has nothing to do; left on, ovs-vswitchd looks for a route to the
// controller every second, logs that it finds none and keeps hidden in-band
// flows whose changes make it revalidate every datapath flow.
var bridgeOtherConfig = map[string]string{"disable-in-band": "true"}

// ensureBridgeOtherConfig sets the keys of want in the bridge's
// other_config, keeping the others; nothing is written when they are set.
func (d *Driver) ensureBridgeOtherConfig(ctx context.Context, bridge string, want map[string]string) error {
	err := d.ovs.Ensure(ctx, func(v ovsdb.View) ([]ovsdb.Operation, error) {
		br, ok := v.FindString("Bridge", "name", bridge)
		if !ok {
			return nil, fmt.Errorf("bridge %q: %w", bridge, ErrNotFound)
		}
		have := br.StringMap("other_config")
		var stale []string
		for _, k := range slices.Sorted(maps.Keys(want)) {
			if cur, ok := have[k]; !ok || cur != want[k] {
				stale = append(stale, k)
			}
		}
		if len(stale) == 0 {
			return nil, nil
		}
		where := []ovsdb.Condition{ovsdb.Eq("_uuid", br.UUID())}
		set := ovsdb.Set{}
		ins := map[string]string{}
		for _, k := range stale {
			set = append(set, k)
			ins[k] = want[k]
		}
		// A map "insert" mutation never overwrites a key: delete it first.
		return []ovsdb.Operation{
			ovsdb.Mutate("Bridge", where, ovsdb.MutateDelete("other_config", set)),
			ovsdb.Mutate("Bridge", where, ovsdb.MutateInsert("other_config", ins)),
		}, nil
	})
	if err != nil {
		return fmt.Errorf("set other_config of bridge %q: %w", bridge, err)
	}
	return nil
}
