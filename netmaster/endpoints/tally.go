package endpoints

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/contiv/netplugin/netmaster/ipam"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/state"
)

// stateTally is the ipam.Tally of a network's or a group's counters: the
// joined transaction of a create or delete batch (ipam.Ride) carries one
// compare-and-swap of the state object with the batch's deltas summed,
// on the version this process last wrote or read (the hint shared with
// casUpdateHinted). A stage holds the object's writer lock until its
// transaction's outcome is known, so this process has one write of the
// object in flight at a time (docs/allocation-integrity.md).
type stateTally[T state.Object] struct {
	id    string // counters key: "net/<id>" or "epg/<id>"
	objID string
	c     *counters
	coll  state.Collection[T]
	add   func(v *T, d [2]int)
}

var _ ipam.Tally = (*stateTally[state.Network])(nil)

func (m *Service) netTally(netID string) ipam.Tally {
	return &stateTally[state.Network]{id: "net/" + netID, objID: netID, c: m.counterFor("net/" + netID),
		coll: m.st.Networks, add: addNetwork}
}

func (m *Service) groupTally(epgID string) ipam.Tally {
	return &stateTally[state.EndpointGroup]{id: "epg/" + epgID, objID: epgID, c: m.counterFor("epg/" + epgID),
		coll: m.st.EndpointGroups, add: addGroup}
}

func (t *stateTally[T]) ID() string { return t.id }

// Stage implements ipam.Tally.
func (t *stateTally[T]) Stage(ctx context.Context, d [2]int) (objdb.TxnOp, error) {
	t.c.wmu.Lock()
	h := hintOf[T](t.c)
	if !h.ok {
		cur, ver, err := t.coll.ReadVersion(ctx, t.objID)
		if err != nil {
			t.c.wmu.Unlock()
			return objdb.TxnOp{}, fmt.Errorf("read counters %s: %w", t.id, err)
		}
		h.val, h.ver, h.ok = cur, ver, true
	}
	next := h.val
	t.add(&next, d)
	b, err := json.Marshal(next)
	if err != nil {
		t.c.wmu.Unlock()
		return objdb.TxnOp{}, fmt.Errorf("encode counters %s: %w", t.id, err)
	}
	t.c.staged = next
	return objdb.TxnOp{Kind: objdb.TxnPut, Key: t.coll.Key(t.objID), Value: b, PrevVersion: h.ver}, nil
}

// Done implements ipam.Tally.
func (t *stateTally[T]) Done(version int64) {
	h := hintOf[T](t.c)
	next, ok := t.c.staged.(T)
	h.val, h.ver, h.ok = next, version, ok && version > 0
	t.c.staged = nil
	t.c.wmu.Unlock()
}

// Abort implements ipam.Tally: the next stage re-reads the object.
func (t *stateTally[T]) Abort() {
	hintOf[T](t.c).ok = false
	t.c.staged = nil
	t.c.wmu.Unlock()
}
