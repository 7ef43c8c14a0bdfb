package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/contiv/netplugin/netplugin/ovsdriver"
	"github.com/contiv/netplugin/utils/ctxutil"
)

// Two steps that keep a restart cheap, each retried through the work queue
// until it is done instead of being only logged:
const (
	// finishrestart/<bridge>: the agent drops the flows a previous run left
	// (once the masters had time to send the remote endpoints again).
	kindFinishRestart = "finishrestart"
	// vrfids/<bridge>: the VRF ids the agent handed out, persisted in the
	// bridge's external ids so the next run gives each tenant the same id.
	kindVrfIDs = "vrfids"
)

// restartState is what finishrestart/ and vrfids/ applied, per bridge.
type restartState struct {
	done    map[string]bool   // stale flows removed
	ids     map[string]string // the latest VRF ids (JSON)
	written map[string]string // the VRF ids in OVSDB
}

// state returns r with its maps made; callers hold the daemon's mu.
func (r *restartState) state() *restartState {
	if r.done == nil {
		r.done, r.ids, r.written = map[string]bool{}, map[string]string{}, map[string]string{}
	}
	return r
}

// restartBridges are the bridges of the two agents, in key form.
var restartBridges = []string{ovsdriver.VxlanBridge, ovsdriver.VlanBridge}

func (d *Daemon) agentOf(bridge string) (datapath, error) {
	switch bridge {
	case ovsdriver.VxlanBridge:
		return d.vx, nil
	case ovsdriver.VlanBridge:
		return d.vl, nil
	}
	return nil, fmt.Errorf("no agent for bridge %q", bridge)
}

// finishRestart waits for the first master and the settle time, then asks
// for both agents' stale flows to be removed (finishrestart/<bridge>).
func (d *Daemon) finishRestart(ctx context.Context) {
	select {
	case <-d.mastersSeen:
	case <-ctx.Done():
		return
	}
	if !ctxutil.Sleep(ctx, d.cfg.RestartSettle) {
		return
	}
	for _, b := range restartBridges {
		d.rec.Enqueue(kindFinishRestart, b)
	}
}

// reconcileFinishRestart removes the stale flows of a bridge's agent; an
// error is retried by the queue. A second success is harmless (a resync).
func (d *Daemon) reconcileFinishRestart(ctx context.Context, bridge string) error {
	a, err := d.agentOf(bridge)
	if err != nil {
		return err
	}
	d.mu.Lock()
	done := d.restart.state().done[bridge]
	d.mu.Unlock()
	if done {
		return nil
	}
	if err := a.FinishRestart(ctx); err != nil {
		return fmt.Errorf("remove the stale flows of %s: %w", bridge, err)
	}
	d.mu.Lock()
	d.restart.state().done[bridge] = true
	d.mu.Unlock()
	return nil
}

// saveVrfIDs is the agents' OnVrfIDs: it runs under the agent's lock, so it
// only records the ids and tries one OVSDB write; a failed write is
// retried by vrfids/<bridge> with the latest ids.
func (d *Daemon) saveVrfIDs(ctx context.Context, bridge string, ids map[string]uint8) {
	b, err := json.Marshal(ids)
	if err != nil { // a map of strings to numbers always marshals
		d.log.WithError(err).Errorf("VRF ids of %s", bridge)
		return
	}
	d.mu.Lock()
	d.restart.state().ids[bridge] = string(b)
	d.mu.Unlock()
	if err := d.writeVrfIDs(ctx, bridge); err != nil {
		d.log.WithError(err).Warnf("persist the VRF ids of %s (retried)", bridge)
		d.rec.Enqueue(kindVrfIDs, bridge)
	}
}

// writeVrfIDs writes the latest VRF ids of bridge, unless written already.
func (d *Daemon) writeVrfIDs(ctx context.Context, bridge string) error {
	d.mu.Lock()
	r := d.restart.state()
	v, written := r.ids[bridge], r.written[bridge]
	d.mu.Unlock()
	if v == "" || v == written {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := d.drv.SetBridgeExternalID(wctx, bridge, vrfIDsKey, v); err != nil {
		return fmt.Errorf("persist the VRF ids of %s: %w", bridge, err)
	}
	d.mu.Lock()
	d.restart.state().written[bridge] = v
	d.mu.Unlock()
	return nil
}
