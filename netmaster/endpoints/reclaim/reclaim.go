// Package reclaim takes back, within one netmaster leadership term, what
// endpoints and addresses hold once their records and the pools disagree
// or their owner is gone: the leaked-address sweep (sweep.go) and the
// recount of the endpoint counters from the records (recount.go), the
// deletion half of host GC (hostgc.go) and /debug/epcleanup
// (epcleanup.go). It also defines the address-ownership records the sweep
// checks, which netmaster/endpoints writes. The endpoints themselves are
// removed through netmaster/endpoints (Endpoints).
package reclaim

import (
	"context"
	"net/netip"
	"sync"

	"github.com/gorilla/mux"
	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/netmaster/ipam"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/state"
)

// Addresses handed out by /plugin/allocAddress are recorded under
// "state/ipalloc/<pool>/<ip>" until released (or until an endpoint takes
// the address over). Together with the endpoint records this names the
// owner of every allocated address, so a leadership term can find the
// addresses a killed netmaster allocated but never recorded (it died
// between the allocation and the record) and give them back.
const IPAllocPrefix = "state/ipalloc/"

// IPAllocKey is the address record of ip in pool.
func IPAllocKey(pool string, ip netip.Addr) string { return IPAllocPrefix + pool + "/" + ip.String() }

// VIPRecordPrefix starts the value of the address record of a service
// VIP: VIPRecordPrefix + the service id.
const VIPRecordPrefix = "serviceLB "

// Endpoints is the endpoint side of the term that a Collector removes
// endpoints through and reaches the agents with.
type Endpoints interface {
	// AllEndpoints reads every endpoint state.
	AllEndpoints(ctx context.Context) ([]state.Endpoint, error)
	// RemoveEndpoint deletes an endpoint as /plugin/deleteEndpoint does,
	// giving its addresses and counts back.
	RemoveEndpoint(ctx context.Context, netID, epID string) error
	// CallAgent calls method of the netplugin at addr over the agent RPC.
	CallAgent(ctx context.Context, addr, method string, arg, reply any) error
	// VtepsByHost maps host names to the VTEP address their netplugin
	// registered.
	VtepsByHost(ctx context.Context) (map[string]string, error)
}

// Config is what a Collector works with.
type Config struct {
	KV    objdb.KV
	State *state.Store
	V4    *ipam.V4
	V6    *ipam.V6
	// Endpoints removes endpoints and calls the agents.
	Endpoints Endpoints
	// Topology is the exclusive side of the term's endpoint lock: a sweep
	// holds it, so that the endpoint operations of this process wait.
	Topology sync.Locker
	Log      *logrus.Entry
}

// Collector is the reclaim work of one term.
type Collector struct {
	kv   objdb.KV
	st   *state.Store
	v4   *ipam.V4
	v6   *ipam.V6
	eps  Endpoints
	topo sync.Locker
	log  *logrus.Entry

	sweepMu  sync.Mutex
	sweepRep *SweepReport // last sweep of the term
}

// New returns the Collector of a term over cfg.
func New(cfg Config) *Collector {
	return &Collector{kv: cfg.KV, st: cfg.State, v4: cfg.V4, v6: cfg.V6, eps: cfg.Endpoints,
		topo: cfg.Topology, log: cfg.Log}
}

// AddRoutes serves /debug/epcleanup and /debug/sweep on r; reg answers
// epcleanup's errors.
func (m *Collector) AddRoutes(r *mux.Router, reg *contivmodel.Registry) {
	m.addEpCleanupRoute(r, reg)
	m.addSweepRoute(r)
}
