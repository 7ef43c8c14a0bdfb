package daemon

import (
	"context"
	"fmt"

	"github.com/contiv/netplugin/netplugin/follow"
	"github.com/contiv/netplugin/state"
)

// replay applies the state that exists at start one kind at a time, and
// drains the reconcile queue after each, so every kind finds the ones
// before it applied. The order: the VXLAN tunnel ports OVS still has;
// networks; endpoint groups; local endpoints, matched with the ports OVS
// still has (a restart re-uses them instead of creating new ones; ports no
// endpoint claims any more are removed); the store's endpoints; the global
// settings. Run continues with BGP, then services and their providers.
// The original (docs/daemons.md §6.2) replayed endpoints before groups;
// here groups come first because a re-announced local endpoint takes its
// QoS from its group.
func (d *Daemon) replay(ctx context.Context, nets *follow.Follower[state.Network], groups *follow.Follower[state.EndpointGroup],
	eps *follow.Follower[state.Endpoint], glob *follow.Follower[state.GlobConfig]) error {
	if err := d.vtep.Restore(ctx); err != nil {
		return err
	}
	if err := nets.Sync(ctx); err != nil {
		return fmt.Errorf("replay networks: %w", err)
	}
	d.rec.Drain(ctx)
	if err := groups.Sync(ctx); err != nil {
		return fmt.Errorf("replay endpoint groups: %w", err)
	}
	d.rec.Drain(ctx)
	if err := d.eps.Restore(ctx, d.drv); err != nil {
		return err
	}
	if err := eps.Sync(ctx); err != nil {
		return fmt.Errorf("replay endpoints: %w", err)
	}
	d.rec.Drain(ctx)
	if err := glob.Sync(ctx); err != nil {
		return fmt.Errorf("replay global settings: %w", err)
	}
	d.rec.Drain(ctx)
	return nil
}

func (d *Daemon) agentFor(nw state.Network) datapath {
	if nw.PktTagType == "vxlan" {
		return d.vx
	}
	return d.vl
}
