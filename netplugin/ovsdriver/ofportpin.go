package ovsdriver

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/contiv/netplugin/ofnet/ovsdb"
)

// maxPinnableOFPort is the first OpenFlow port number ofport_request does
// not accept (OFPP_MAX, 0xff00): the bridge's LOCAL port (65534) and the
// reserved numbers above it are never pinned.
const maxPinnableOFPort = 0xff00

// ErrOFPortUnassigned is wrapped by PinOFPorts when an interface of the
// bridge has no OpenFlow port number yet (ovs-vswitchd is down or has not
// added it): calling again later pins it.
var ErrOFPortUnassigned = errors.New("ovsdriver: interface has no ofport yet")

// PinOFPorts pins every interface of bridge to the OpenFlow port number it
// has now (ofport_request = ofport) where that is not its request already,
// and returns how many it pinned. The driver pins the ports it creates as
// ovs-vswitchd numbers them (ofport); ports made before that (by an older
// netplugin) or by someone else are not, and a restarted ovs-vswitchd that
// adds ports created in its absence may renumber them under the flows that
// name them (docs/dataplane.md §1.3). Called at netplugin's start.
//
// Interfaces ovs-vswitchd gave up on (ofport -1: the device is gone) are
// left alone. Interfaces without a number yet are pinned in the same call
// when the others are, and make it return an error wrapping
// ErrOFPortUnassigned. Each update holds only while the interface still
// has the number read, so a renumbering in between is not pinned. A
// missing bridge has nothing to pin.
func (d *Driver) PinOFPorts(ctx context.Context, bridge string) (int, error) {
	type pin struct {
		name   string
		ofport int64
	}
	var pins []pin
	var unassigned []string
	d.ovs.Cache().View(func(v ovsdb.View) {
		br, ok := v.FindString("Bridge", "name", bridge)
		if !ok {
			return
		}
		for _, p := range rowsOf(v, "Port", br.UUIDs("ports")) {
			for _, i := range rowsOf(v, "Interface", p.UUIDs("interfaces")) {
				n, numbered := i.Int("ofport")
				req, _ := i.Int("ofport_request")
				switch {
				case !numbered:
					unassigned = append(unassigned, i.String("name"))
				case n <= 0 || n >= maxPinnableOFPort || req == n:
				default:
					pins = append(pins, pin{i.String("name"), n})
				}
			}
		}
	})
	sort.Slice(pins, func(a, b int) bool { return pins[a].name < pins[b].name })
	sort.Strings(unassigned)
	pinned := 0
	if len(pins) > 0 {
		ops := make([]ovsdb.Operation, 0, len(pins))
		for _, p := range pins {
			ops = append(ops, ovsdb.Update("Interface", ovsdb.Row{"ofport_request": p.ofport},
				ovsdb.Eq("name", p.name), ovsdb.Eq("ofport", p.ofport)))
		}
		res, err := d.ovs.Transact(ctx, ops...)
		if err != nil {
			return 0, fmt.Errorf("pin the ofports of bridge %q: %w", bridge, err)
		}
		for i, r := range res {
			if i < len(pins) && r.Count > 0 {
				pinned++
				d.log.WithField("port", pins[i].name).WithField("ofport", pins[i].ofport).Info("pinned an existing port's OpenFlow number")
			}
		}
	}
	if len(unassigned) > 0 {
		return pinned, fmt.Errorf("pin the ofports of bridge %q: %w: %v", bridge, ErrOFPortUnassigned, unassigned)
	}
	return pinned, nil
}
