package ovsdriver

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/vishvananda/netlink"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/ofnet/ovsdb"
	"github.com/contiv/netplugin/state"
)

const (
	// maxPortNum is where the port counter wraps; 0xfffe itself is the host
	// port's number in the host-private subnet (spec dataplane.md §1.5).
	maxPortNum = 0xfffe
	// portNumTries bounds the search for an unused number.
	portNumTries = 100
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

// updateOper applies fn to the persisted driver state with compare-and-swap
// retries, so two drivers of one host label cannot lose each other's
// changes. Without a store it does nothing.
func (d *Driver) updateOper(ctx context.Context, fn func(*state.OvsDriverOper)) error {
	if d.cfg.Store == nil {
		return nil
	}
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
		fn(&cur)
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
// vport<N>/vvport<N> and no OVS port vvport<N>) and persists the counter
// before returning it, so a crash never hands a number out twice.
func (d *Driver) allocPortNum(ctx context.Context) (int, error) {
	d.numMu.Lock()
	defer d.numMu.Unlock()
	n := d.portNum
	for try := 0; try < portNumTries; try++ {
		// Wrap to 1, not 0: number 0 would give the endpoint the
		// host-private subnet's network address.
		if n++; n >= maxPortNum {
			n = 1
		}
		free, err := d.portNumFree(n)
		if err != nil {
			return 0, err
		}
		if !free {
			continue
		}
		if err := d.updateOper(ctx, func(st *state.OvsDriverOper) { st.CurrPortNum = n }); err != nil {
			return 0, fmt.Errorf("allocate port number: %w", err)
		}
		d.portNum = n
		return n, nil
	}
	return 0, fmt.Errorf("allocate port number: no free vport name after %d tries from %d", portNumTries, d.portNum)
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

// recordEndpoint stores (or with info nil removes) an endpoint in the
// persisted LocalEpInfo map.
func (d *Driver) recordEndpoint(ctx context.Context, epID string, info *state.LocalEpInfo) error {
	d.numMu.Lock()
	defer d.numMu.Unlock()
	return d.updateOper(ctx, func(st *state.OvsDriverOper) {
		if info == nil {
			delete(st.LocalEpInfo, epID)
			return
		}
		if st.LocalEpInfo == nil {
			st.LocalEpInfo = map[string]*state.LocalEpInfo{}
		}
		st.LocalEpInfo[epID] = info
	})
}

// forgetPort removes every LocalEpInfo entry of an OVS port name.
func (d *Driver) forgetPort(ctx context.Context, portName string) error {
	d.numMu.Lock()
	defer d.numMu.Unlock()
	if d.cfg.Store == nil {
		return nil
	}
	st, err := d.readOper(ctx)
	if err != nil {
		return err
	}
	found := false
	for _, info := range st.LocalEpInfo {
		if info != nil && info.Ovsportname == portName {
			found = true
		}
	}
	if !found {
		return nil
	}
	return d.updateOper(ctx, func(st *state.OvsDriverOper) {
		for id, info := range st.LocalEpInfo {
			if info != nil && info.Ovsportname == portName {
				delete(st.LocalEpInfo, id)
			}
		}
	})
}
