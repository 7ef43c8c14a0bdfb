package ovsdriver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/ofnet/ovsdb"
	"github.com/contiv/netplugin/state"
)

const (
	// maxPortNum is where the port counter wraps; 0xfffe itself is the host
	// port's number in the host-private subnet (docs/dataplane.md §1.5).
	maxPortNum = 0xfffe
	// portNumTries bounds the search for an unused number.
	portNumTries = 100
	// portNumBlock is how many numbers one store write reserves: the
	// persisted counter is the last number reserved, at or past every
	// number handed out, so one attach in portNumBlock writes it.
	portNumBlock = 64
)

// Names of an endpoint's veth ends for port number n.
func containerIfName(n int) string { return "vport" + strconv.Itoa(n) }
func ovsIfName(n int) string       { return "vvport" + strconv.Itoa(n) }

// readOper returns the persisted driver state (zero when there is none).
func (d *Driver) readOper(ctx context.Context) (state.OvsDriverOper, error) {
	st, err := d.cfg.Store.OvsDriverOper.Read(ctx, d.cfg.HostLabel)
	if errors.Is(err, objdb.ErrNotFound) {
		return state.OvsDriverOper{Common: state.Common{ID: d.cfg.HostLabel}}, nil
	}
	if err != nil {
		return st, fmt.Errorf("read ovs driver state of %q: %w", d.cfg.HostLabel, err)
	}
	return st, nil
}

// operCommitTimeout bounds one commit of queued state changes. A commit
// runs on behalf of every request in its batch, so it does not end with
// the context of the request that happens to run it.
const operCommitTimeout = 30 * time.Second

// operReq is one change of the persisted driver state waiting to be
// committed. fn reports whether it changed anything.
type operReq struct {
	fn   func(*state.OvsDriverOper) bool
	done chan error    // receives the commit's result (buffered)
	lead chan struct{} // closed when this request is to commit the queue
	// Guarded by Driver.operMu.
	taken    bool // in a batch being committed
	promoted bool // lead was closed
}

// updateOper applies fn to the persisted driver state and returns once
// the change is stored. Changes are group-committed: while one commit (a
// read and a compare-and-swap write of the one state object) is under
// way, further changes queue up, and the next commit applies all of them
// at once. So concurrent attaches share store round trips instead of
// taking turns for them, and two drivers of one host label still cannot
// lose each other's changes. Without a store it does nothing.
func (d *Driver) updateOper(ctx context.Context, fn func(*state.OvsDriverOper) bool) error {
	if d.cfg.Store == nil {
		return nil
	}
	req := &operReq{fn: fn, done: make(chan error, 1), lead: make(chan struct{})}
	d.operMu.Lock()
	d.operQueue = append(d.operQueue, req)
	if !d.operBusy {
		d.operBusy = true
		d.operMu.Unlock()
		return d.commitQueued(ctx, req)
	}
	d.operMu.Unlock()
	select {
	case err := <-req.done:
		return err
	case <-req.lead:
		return d.commitQueued(ctx, req)
	case <-ctx.Done():
	}
	d.operMu.Lock()
	if req.taken {
		// A commit is storing the change already: its result stands.
		d.operMu.Unlock()
		return <-req.done
	}
	d.operQueue = slices.DeleteFunc(d.operQueue, func(r *operReq) bool { return r == req })
	if req.promoted {
		d.handOffLocked()
	}
	d.operMu.Unlock()
	return fmt.Errorf("update ovs driver state of %q: %w", d.cfg.HostLabel, ctx.Err())
}

// commitQueued commits every queued change (own among them) and hands the
// next batch to the first request queued meanwhile.
func (d *Driver) commitQueued(ctx context.Context, own *operReq) error {
	d.operMu.Lock()
	batch := d.operQueue
	d.operQueue = nil
	for _, r := range batch {
		r.taken = true
	}
	d.operMu.Unlock()

	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), operCommitTimeout)
	err := d.commitOper(cctx, batch)
	cancel()
	for _, r := range batch {
		r.done <- err
	}

	d.operMu.Lock()
	d.handOffLocked()
	d.operMu.Unlock()
	return <-own.done
}

// handOffLocked lets the first queued request commit the queue, or marks
// the committer idle when nothing is queued. d.operMu must be held.
func (d *Driver) handOffLocked() {
	if len(d.operQueue) == 0 {
		d.operBusy = false
		return
	}
	next := d.operQueue[0]
	next.promoted = true
	close(next.lead)
}

// commitOper applies a batch of changes to the persisted state with
// compare-and-swap retries; nothing is written when no change applies.
func (d *Driver) commitOper(ctx context.Context, batch []*operReq) error {
	coll := d.cfg.Store.OvsDriverOper
	for {
		cur, ver, err := coll.ReadVersion(ctx, d.cfg.HostLabel)
		opt := objdb.WithPrevVersion(ver)
		switch {
		case errors.Is(err, objdb.ErrNotFound):
			cur, opt = state.OvsDriverOper{}, objdb.WithCreateOnly()
		case err != nil:
			return fmt.Errorf("read ovs driver state of %q: %w", d.cfg.HostLabel, err)
		}
		cur.ID = d.cfg.HostLabel
		// The record used to list every local endpoint and so grew with
		// the host while being rewritten on every attach; a record
		// written by such a version loses the list on its next write
		// (docs/dataplane-scale.md).
		changed := len(cur.LocalEpInfo) > 0
		cur.LocalEpInfo = nil
		for _, r := range batch {
			if r.fn(&cur) {
				changed = true
			}
		}
		if !changed {
			return nil
		}
		_, err = coll.Write(ctx, cur, opt)
		if errors.Is(err, objdb.ErrConflict) {
			continue
		}
		if err != nil {
			return fmt.Errorf("write ovs driver state of %q: %w", d.cfg.HostLabel, err)
		}
		return nil
	}
}

// allocPortNum takes the next port number whose names are free (no link
// vport<N>/vvport<N> and no OVS port vvport<N>). The persisted counter is
// at or past every number handed out, so a crash never hands a number out
// twice: a number the stored reservation covers is handed out at once;
// otherwise the next portNumBlock numbers are reserved (the counter
// stored) before it is returned. The number is taken under numMu; the
// counter is stored outside it, so concurrent allocations share the store
// round trip (see updateOper).
func (d *Driver) allocPortNum(ctx context.Context) (int, error) {
	n, reserve, err := d.takePortNum()
	if err != nil || reserve == 0 {
		return n, err
	}
	// The latest reservation is stored, whichever allocation's change
	// the commit applies last: it covers every number taken before it.
	err = d.updateOper(ctx, func(st *state.OvsDriverOper) bool {
		d.numMu.Lock()
		defer d.numMu.Unlock()
		if st.CurrPortNum == d.portWant {
			return false
		}
		st.CurrPortNum = d.portWant
		return true
	})
	if err != nil {
		return 0, fmt.Errorf("allocate port number: %w", err)
	}
	d.numMu.Lock()
	if !portNumCovers(d.portRes, reserve) {
		d.portRes = reserve // stored: the commit wrote it or a later one
	}
	d.numMu.Unlock()
	return n, nil
}

// portNumCovers reports whether reservation end res covers number n: res
// is at or at most portNumBlock past n on the counter's ring (a
// reservation of an earlier lap is far from n).
func portNumCovers(res, n int) bool {
	return (res-n+maxPortNum)%maxPortNum <= portNumBlock
}

// takePortNum advances the in-memory counter to the next free number.
// reserve is 0 when the stored reservation covers it, else the end of the
// reservation to store before handing it out.
func (d *Driver) takePortNum() (n, reserve int, err error) {
	d.numMu.Lock()
	defer d.numMu.Unlock()
	n = d.portNum
	for try := 0; try < portNumTries; try++ {
		// Wrap to 1, not 0: number 0 would give the endpoint the
		// host-private subnet's network address.
		if n++; n >= maxPortNum {
			n = 1
		}
		free, err := d.portNumFree(n)
		if err != nil {
			return 0, 0, err
		}
		if free {
			d.portNum = n
			if portNumCovers(d.portRes, n) {
				return n, 0, nil
			}
			d.portWant = min(n+portNumBlock-1, maxPortNum-1)
			return n, d.portWant, nil
		}
	}
	return 0, 0, fmt.Errorf("allocate port number: no free vport name after %d tries from %d", portNumTries, d.portNum)
}

func (d *Driver) portNumFree(n int) (bool, error) {
	for _, name := range []string{containerIfName(n), ovsIfName(n)} {
		_, err := d.nl.LinkByName(name)
		var nf netlink.LinkNotFoundError
		switch {
		case err == nil:
			return false, nil
		case !errors.As(err, &nf):
			return false, fmt.Errorf("look up link %q: %w", name, err)
		}
	}
	inOVS := false
	d.ovs.Cache().View(func(v ovsdb.View) {
		_, inOVS = v.FindString("Port", "name", ovsIfName(n))
	})
	return !inOVS, nil
}
