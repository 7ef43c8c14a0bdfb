package endpoints

import (
	"context"
	"sync"
)

// The endpoint path writes its counters concurrently with its other store
// writes (a create: with the endpoint record; a delete: the group's with
// the address release), which takes one store round trip off each request
// at any concurrency. Each write is a compare-and-swap on its own object,
// so the order between them only changes what a reader sees in between
// (a counter may briefly run ahead of the records, as it could lag behind
// them before); a request answers only after all of them are stored, and
// a failed one takes back what it stored. A netmaster killed in between
// leaves the counters off, which every leadership term corrects
// (reclaim.Collector.ReconcileCounters), as before.

// bumpEndpointCounters adds eps endpoints and addrs handed-out addresses to
// the counters of network netID and eps endpoints to those of group epgID
// (none when ""), writing the two objects concurrently. It reports each
// write's outcome, so that a caller rolling back undoes only what was stored.
func (m *Service) bumpEndpointCounters(ctx context.Context, netID, epgID string, eps, addrs int) (netErr, groupErr error) {
	if epgID == "" {
		return m.bumpNetwork(ctx, netID, eps, addrs), nil
	}
	netErr = both(func() { groupErr = m.bumpGroup(ctx, epgID, eps) },
		func() error { return m.bumpNetwork(ctx, netID, eps, addrs) })
	return netErr, groupErr
}

// undoNetworkBump and undoGroupBump add a rollback's deltas, on a context
// that outlives the request.
func (m *Service) undoNetworkBump(netID string, eps, addrs int) {
	ctx, cancel := UndoContext()
	defer cancel()
	if err := m.bumpNetwork(ctx, netID, eps, addrs); err != nil {
		m.log.WithError(err).Error("roll back network counters")
	}
}

func (m *Service) undoGroupBump(epgID string, eps int) {
	ctx, cancel := UndoContext()
	defer cancel()
	if err := m.bumpGroup(ctx, epgID, eps); err != nil {
		m.log.WithError(err).Error("roll back group count")
	}
}

// both runs bg on a goroutine and fg on the caller's, and returns fg's
// error once both have finished. Both are bounded by the caller's context
// (the store calls they make take it).
func both(bg func(), fg func() error) error {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		bg()
	}()
	err := fg()
	wg.Wait()
	return err
}
