package daemon

import (
	"context"
	"fmt"

	"github.com/contiv/netplugin/state"
	"github.com/contiv/netplugin/utils/ctxutil"
)

// writeNode records this host as a cluster member (oper/nodes/<host>):
// peers keep their tunnel to it while the record exists, even when this
// process is down.
func (d *Daemon) writeNode(ctx context.Context) error {
	n := state.Node{Common: state.Common{ID: d.cfg.HostLabel}, Hostname: d.cfg.HostLabel, VtepIP: d.cfg.VtepIP, CtrlIP: d.cfg.CtrlIP}
	if cur, err := d.st.Nodes.Read(ctx, n.ID); err == nil && cur == n {
		return nil
	}
	if _, err := d.st.Nodes.Write(ctx, n); err != nil {
		return fmt.Errorf("write the node record of %s: %w", n.ID, err)
	}
	return nil
}

// keepNodeRecord writes the node record, retrying until it is written or
// ctx ends (a store outage at start does not stop netplugin).
func (d *Daemon) keepNodeRecord(ctx context.Context) {
	for {
		err := d.writeNode(ctx)
		if err == nil {
			return
		}
		d.log.WithError(err).Warn("node record not written; retrying")
		if !ctxutil.Sleep(ctx, d.cfg.StoreRetryDelay) {
			return
		}
	}
}
