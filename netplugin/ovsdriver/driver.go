// Package ovsdriver is netplugin's OVS driver: it creates the two contiv
// bridges, endpoint veth pairs and their OVS ports, VXLAN tunnel ports,
// uplinks and the host port contivh0 over OVSDB (docs/dataplane.md §1),
// and does the Linux link work around them. It programs no flows: the
// netplugin daemon hands the OpenFlow port numbers it returns to the ofnet
// agents.
//
// Every Ensure*/Create* method re-reads what exists first (the OVSDB
// monitor cache and the kernel's links), so a restarted netplugin can run
// them again without duplicating anything.
package ovsdriver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/vishvananda/netlink"

	"github.com/contiv/netplugin/ofnet/ovsdb"
	"github.com/contiv/netplugin/state"
)

// Bridge names and OpenFlow controller ports (docs/dataplane.md §1.2).
const (
	VxlanBridge         = "contivVxlanBridge"
	VlanBridge          = "contivVlanBridge"
	VxlanControllerPort = 6633
	VlanControllerPort  = 6634
)

// DefaultOVSDB is ovsdb-server's usual socket.
const DefaultOVSDB = "/var/run/openvswitch/db.sock"

// ofportTimeout bounds the wait for ovs-vswitchd to number a new port.
const ofportTimeout = 20 * time.Second

var (
	// ErrInvalid is wrapped by errors about a bad request; nothing changes.
	ErrInvalid = errors.New("ovsdriver: invalid argument")
	// ErrMismatch is wrapped when an object of the requested name exists
	// with attributes the driver will not change (e.g. another datapath
	// type, another port type). It is the OVSDB client's sentinel, so the
	// refusals made there match it too.
	ErrMismatch = ovsdb.ErrMismatch
	// ErrNotFound is wrapped when a bridge or port the call needs is
	// missing.
	ErrNotFound = errors.New("ovsdriver: not found")
)

// Config configures a Driver.
type Config struct {
	// OVSDB is ovsdb-server's endpoint: a socket path, "unix:/path" or
	// "tcp:ip:port" (default DefaultOVSDB).
	OVSDB string
	// DatapathType is "system" (default, kernel datapath) or "netdev"
	// (userspace).
	DatapathType string
	// HostLabel keys the persisted driver state oper/ovs-driver/<host>.
	HostLabel string
	// Store persists the port counter and the local endpoint map; nil
	// keeps them in memory only (the counter then restarts at 0).
	Store *state.Store
	// Netlink is the handle for link work; nil means a handle in the
	// process's own network namespace.
	Netlink *netlink.Handle
	// NetNSPath is the namespace Netlink works in (a bind mount such as
	// /var/run/netns/NAME), for the ethtool calls netlink cannot make;
	// empty means the process's own namespace.
	NetNSPath string
	Logger    logrus.FieldLogger
}

// Driver is the OVS driver of one host. Its methods are safe for
// concurrent use.
type Driver struct {
	cfg       Config
	ovs       *ovsdb.Client
	nl        *netlink.Handle
	ownHandle bool
	log       logrus.FieldLogger
	closeOnce sync.Once

	// numMu guards the in-memory port counter: the last number taken,
	// the end of the stored reservation (allocPortNum) and the end of the
	// reservation to store next.
	numMu    sync.Mutex
	portNum  int
	portRes  int
	portWant int

	// operMu guards the queue of persisted-state changes (updateOper).
	operMu    sync.Mutex
	operQueue []*operReq
	operBusy  bool // a request is committing the queue
}

// New dials OVSDB and reads the persisted driver state.
func New(ctx context.Context, cfg Config) (*Driver, error) {
	switch cfg.DatapathType {
	case "":
		cfg.DatapathType = "system"
	case "system", "netdev":
	default:
		return nil, fmt.Errorf("%w: datapath type %q (want system or netdev)", ErrInvalid, cfg.DatapathType)
	}
	if cfg.HostLabel == "" && cfg.Store != nil {
		return nil, fmt.Errorf("%w: host label is empty", ErrInvalid)
	}
	if cfg.OVSDB == "" {
		cfg.OVSDB = DefaultOVSDB
	}
	d := &Driver{cfg: cfg, log: cfg.Logger, nl: cfg.Netlink}
	if d.log == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		d.log = l
	}
	if cfg.Store != nil {
		st, err := d.readOper(ctx)
		if err != nil {
			return nil, err
		}
		d.portNum, d.portRes = st.CurrPortNum, st.CurrPortNum
	}
	if d.nl == nil {
		h, err := netlink.NewHandle()
		if err != nil {
			return nil, fmt.Errorf("open netlink handle: %w", err)
		}
		d.nl, d.ownHandle = h, true
	}
	c, err := ovsdb.Dial(ctx, ovsdbEndpoint(cfg.OVSDB), ovsdb.WithLogf(func(f string, args ...any) {
		d.log.Debugf("ovsdb: "+f, args...)
	}))
	if err != nil {
		d.closeHandle()
		return nil, fmt.Errorf("connect to ovsdb-server at %s: %w", cfg.OVSDB, err)
	}
	d.ovs = c
	return d, nil
}

// ovsdbEndpoint accepts a bare socket path as well as an endpoint string.
func ovsdbEndpoint(s string) string {
	if _, _, err := ovsdb.ParseEndpoint(s); err == nil {
		return s
	}
	return "unix:" + s
}

// Close closes the OVSDB connection (and the netlink handle New opened).
// Calls after the first do nothing.
func (d *Driver) Close() error {
	var err error
	d.closeOnce.Do(func() {
		err = d.ovs.Close()
		d.closeHandle()
	})
	return err
}

func (d *Driver) closeHandle() {
	if d.ownHandle {
		d.nl.Close()
	}
}

// OVSDB returns the driver's OVSDB client (for read-only inspection).
func (d *Driver) OVSDB() *ovsdb.Client { return d.ovs }

// ofport returns the OpenFlow port number of interface ifName, waiting a
// bounded time for ovs-vswitchd to assign it, and pins it (ofport_request).
// It waits on the monitor cache, which ovsdb-server updates the moment
// ovs-vswitchd writes the number, instead of asking the server again and
// again (interface names are unique in OVSDB, and the cache applies each
// update whole). Pinning: ovs-vswitchd keeps an assigned number only as a
// preference, and when it restarts with ports added in its absence it
// numbers those first and may give one of them an existing port's number,
// renumbering that port under the flows and the agent's endpoints that
// name it (docs/dataplane.md §1.3). A requested number is reserved: such
// ports are added first. A port already pinned to its number costs no
// write.
func (d *Driver) ofport(ctx context.Context, ifName string) (uint32, error) {
	ctx, cancel := context.WithTimeout(ctx, ofportTimeout)
	defer cancel()
	var n, pinned int64
	var ifErr string
	err := d.ovs.Cache().WaitFor(ctx, func(v ovsdb.View) bool {
		i, ok := v.FindString("Interface", "name", ifName)
		if !ok {
			return false
		}
		n, _ = i.Int("ofport")
		pinned, _ = i.Int("ofport_request")
		ifErr = i.String("error")
		return n > 0
	})
	switch {
	case err == nil && pinned == n:
		return uint32(n), nil
	case err == nil:
		if _, err := d.ovs.Transact(ctx, ovsdb.Update("Interface", ovsdb.Row{"ofport_request": n}, ovsdb.Eq("name", ifName))); err != nil {
			return 0, fmt.Errorf("pin ofport %d of interface %q: %w", n, ifName, err)
		}
		return uint32(n), nil
	case ifErr != "":
		return 0, fmt.Errorf("ofport of interface %q not assigned (interface error: %s): %w", ifName, ifErr, err)
	}
	return 0, fmt.Errorf("ofport of interface %q not assigned: %w", ifName, err)
}

// errNoDevice is returned by liveOFPort for an interface whose device is
// gone (OVS reports ofport -1 and an error).
var errNoDevice = errors.New("ovsdriver: interface has no device")

// liveOFPort is like ofport, but returns errNoDevice at once when OVS has
// given up on the interface instead of waiting for a number.
func (d *Driver) liveOFPort(ctx context.Context, ifName string) (uint32, error) {
	ctx, cancel := context.WithTimeout(ctx, ofportTimeout)
	defer cancel()
	for {
		res, err := d.ovs.Transact(ctx, ovsdb.Select("Interface", []string{"ofport", "error"}, ovsdb.Eq("name", ifName)))
		if err != nil {
			return 0, fmt.Errorf("ofport of interface %q: %w", ifName, err)
		}
		if len(res[0].Rows) == 0 {
			return 0, fmt.Errorf("ofport of interface %q: %w", ifName, ErrNotFound)
		}
		row := res[0].Rows[0]
		n, ok := row.Int("ofport")
		switch {
		case ok && n > 0:
			return uint32(n), nil
		case ok && n == -1 && row.String("error") != "":
			return 0, fmt.Errorf("interface %q: %w: %s", ifName, errNoDevice, row.String("error"))
		}
		t := time.NewTimer(linkPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, fmt.Errorf("ofport of interface %q not assigned: %w", ifName, ctx.Err())
		case <-t.C:
		}
	}
}

// bridgeExists reports from the cache whether the bridge exists.
func (d *Driver) bridgeExists(name string) bool {
	found := false
	d.ovs.Cache().View(func(v ovsdb.View) {
		_, found = v.FindString("Bridge", "name", name)
	})
	return found
}

// portBridge returns the name of the bridge holding port name ("" when no
// bridge lists it) and whether the port exists at all.
func portBridge(v ovsdb.View, name string) (string, bool) {
	p, ok := v.FindString("Port", "name", name)
	if !ok {
		return "", false
	}
	for _, br := range v.Rows("Bridge") {
		for _, id := range br.UUIDs("ports") {
			if id == p.UUID() {
				return br.String("name"), true
			}
		}
	}
	return "", true
}

// rowsOf returns the rows of table that ids name and v holds, in the order
// of ids: a bridge's ports (rowsOf(v, "Port", br.UUIDs("ports"))) or a
// port's interfaces.
func rowsOf(v ovsdb.View, table string, ids []ovsdb.UUID) []ovsdb.Row {
	rows := make([]ovsdb.Row, 0, len(ids))
	for _, id := range ids {
		if r, ok := v.Row(table, id); ok {
			rows = append(rows, r)
		}
	}
	return rows
}
