package endpoints

import (
	"context"
	"errors"
	"time"

	"github.com/contiv/netplugin/objdb"
)

// opTimeout bounds an operation of the address and endpoint path once it
// has started. It runs to its end, or to its rollback, even when the
// client goes away: a request cancelled between its store writes would
// leave writes of unknown outcome and half-done state behind
// (docs/allocation-integrity.md).
const opTimeout = 2 * time.Minute

func opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
}

// repairDelay is how long a counter repair waits after the request that
// asked for it, so that the writes still in flight settle first.
const repairDelay = time.Second

// needRepair schedules a recount of the endpoint counters when err says a
// store write of the endpoint path has an unknown outcome (the store
// stayed unreachable beyond the client's retries): such a write may land,
// or have landed, after the request gave up, so the counters it touched
// can be one off. The recount runs in the background under the exclusive
// endpoint lock, from the records (reclaim.Collector.ReconcileCounters); several requests
// share one recount. See docs/allocation-integrity.md.
func (m *Service) needRepair(err error) {
	if err == nil || !errors.Is(err, objdb.ErrUncertain) {
		return
	}
	m.bgMu.Lock()
	defer m.bgMu.Unlock()
	if m.bgClosed || m.repairPending || m.termCtx == nil {
		return
	}
	m.repairPending = true
	m.sweepWG.Add(1)
	go func() {
		defer m.sweepWG.Done()
		ctx := m.termCtx
		select {
		case <-ctx.Done():
			return
		case <-time.After(repairDelay):
		}
		m.bgMu.Lock()
		m.repairPending = false
		m.bgMu.Unlock()
		m.topo.Lock()
		err := m.rc.ReconcileCounters(ctx)
		m.topo.Unlock()
		if err != nil && ctx.Err() == nil {
			m.log.WithError(err).Error("recount endpoint counters after a store write of unknown outcome")
			m.needRepair(err)
		}
	}()
}
