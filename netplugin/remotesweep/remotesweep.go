// Package remotesweep is netplugin's store sweep of remote endpoints: it
// removes from the ofnet agents the remote endpoints whose endpoint
// records the store no longer holds, a deletion that never reached the
// agent (docs/architecture.md, "Headless dataplane"). It sees the agents
// through Agent, the store through Lister and the endpoint follower's
// cache through Cache; netplugin/daemon wires it and runs the orphan sweep
// on its periodic listings (Config.Periodic).
//
// A master forgets nothing it was told, but each netmaster term runs a
// fresh ofnet master that knows only what agents push to it after they
// register: a deletion queued in the old term's master for an agent, or
// sent while the agent was between masters, is lost, and the remote
// endpoint's flows stay on that agent for good (found by the soak test,
// docs/soak.md). The periodic listing of the store settles it: a remote
// endpoint whose address no endpoint record of its tenant holds, seen so
// on two sweeps in a row (so an endpoint deleted and re-created in
// between, or one whose record is being written, is never touched), is
// removed. A store that cannot be read removes nothing.
//
// A deletion the agent missed need not wait for two sweeps: the store
// watch reports the record's deletion (NoteDeleted), and a remote endpoint
// of that address still held Grace later (a deletion the master sent
// arrives well within it) is marked with the time it was seen and an
// early sweep is asked for (at most one per KickGap). That sweep removes a
// marked version (same agent, endpoint and timestamp) its listing finds
// unbacked, if the listing began after the mark: every remote endpoint is
// sent only after its record was written, so a version held before a
// listing that has no record of its address is a deleted record's, never
// that of a record re-created with the address (such a version is held
// after the re-creation, and its record is in any listing after it).
// Without the early sweep it waits for the periodic ones (up to two
// intervals).
package remotesweep

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/ofnet/ofrpc"
	"github.com/contiv/netplugin/state"
	"github.com/contiv/netplugin/utils/ctxutil"
)

// Agent is what the sweep asks of one bridge's ofnet agent
// (*agent.Agent): the remote endpoints the masters sent, and their
// removal.
type Agent interface {
	RemoteEndpoints() []ofrpc.OfnetEndpoint
	RemoveRemoteEndpoint(ctx context.Context, ep ofrpc.OfnetEndpoint) error
}

// Lister lists the store's endpoint records (state.Collection).
type Lister interface {
	ReadAll(ctx context.Context) ([]state.Endpoint, int64, error)
}

// Cache is the endpoint follower's cache of the records
// (*follow.Follower[state.Endpoint]).
type Cache interface {
	IDs() []string
	Get(id string) (state.Endpoint, bool)
}

// Config is what a Sweeper works with. Every field is required.
type Config struct {
	HostLabel string // this host: its own records' deletions are not remote
	// Agents are the running agents, always in the same order.
	Agents  func() []Agent
	Records Lister
	Cached  Cache
	// Periodic runs on each periodic listing (not on the early ones),
	// before the remote endpoints are swept: the daemon's orphan sweep.
	Periodic func(ctx context.Context, all []state.Endpoint)
	Interval time.Duration // between periodic sweeps (1 min)
	Grace    time.Duration // after a record's deletion, before its remote endpoints are marked (5 s)
	KickGap  time.Duration // the least time between two sweeps' listings when an early one is asked for (10 s)
	Log      logrus.FieldLogger
}

// Sweeper runs the periodic and early sweeps of one netplugin.
type Sweeper struct {
	cfg Config
	// unbacked are the remote endpoints the last sweep found no endpoint
	// record for; owned by sweepLoop.
	unbacked map[string]bool

	mu        sync.Mutex
	deleted   map[string]time.Time // remoteKey → when the watch reported it
	marks     map[string]time.Time // staleRemoteID → when it was seen (after)
	delKick   chan struct{}        // to markLoop (capacity 1)
	sweepKick chan struct{}        // to sweepLoop (capacity 1)
}

// New makes a Sweeper; Run runs it.
func New(cfg Config) *Sweeper {
	return &Sweeper{cfg: cfg, deleted: map[string]time.Time{}, marks: map[string]time.Time{},
		delKick: make(chan struct{}, 1), sweepKick: make(chan struct{}, 1)}
}

// Run sweeps until ctx ends: a periodic sweep now and every Interval, and
// the early sweeps the deletions reported to NoteDeleted ask for.
func (s *Sweeper) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.markLoop(ctx)
	}()
	s.sweepLoop(ctx)
	wg.Wait()
}

// remoteKey names a remote endpoint by what an endpoint record gives:
// IPv4 address and tenant (the agent's VRF).
func remoteKey(ip, tenant string) string { return ip + "|" + tenant }

// recordKey is the remoteKey of ep's address.
func recordKey(ep state.Endpoint) string {
	_, tenant, _ := strings.Cut(ep.NetID, ".")
	return remoteKey(strings.Split(ep.IPAddress, "/")[0], tenant)
}

// storeRemoteKeys are the keys of every endpoint record in all.
func storeRemoteKeys(all []state.Endpoint) map[string]bool {
	keys := make(map[string]bool, len(all))
	for _, ep := range all {
		if ep.IPAddress != "" {
			keys[recordKey(ep)] = true
		}
	}
	return keys
}

// staleRemoteID identifies one version of one agent's remote endpoint.
func staleRemoteID(agent int, r ofrpc.OfnetEndpoint) string {
	return fmt.Sprint(agent) + "|" + r.EndpointID + "|" + r.Timestamp.String()
}

// dropStale removes the remote endpoints no record of all backs that the
// previous call saw unbacked too, or that were marked (markDeleted) before
// listed, when the listing all began; it returns how many it removed. Only
// sweepLoop calls it (it owns s.unbacked).
func (s *Sweeper) dropStale(ctx context.Context, all []state.Endpoint, listed time.Time) (int, error) {
	backed := storeRemoteKeys(all)
	marked := s.takeMarks(listed)
	seen := map[string]bool{}
	var errs []error
	n := 0
	for i, a := range s.cfg.Agents() {
		for _, r := range a.RemoteEndpoints() {
			ip := r.IpAddr.To4()
			if ip == nil || backed[remoteKey(ip.String(), r.Vrf)] {
				continue
			}
			id := staleRemoteID(i, r)
			if !s.unbacked[id] && !marked[id] {
				seen[id] = true // first sighting: removed next time if still unbacked
				continue
			}
			if err := a.RemoveRemoteEndpoint(ctx, r); err != nil {
				errs = append(errs, err)
				seen[id] = true
				continue
			}
			s.cfg.Log.WithField("endpoint", r.EndpointID).WithField("address", ip.String()).
				Warn("removed a remote endpoint the store no longer holds (its deletion never reached this agent)")
			n++
		}
	}
	s.unbacked = seen
	return n, errors.Join(errs...)
}

func kick(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// takeMarks returns the marks made before t and forgets them (the sweep
// whose listing began at t settles them); later ones stay for the next.
func (s *Sweeper) takeMarks(t time.Time) map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]bool{}
	for id, at := range s.marks {
		if at.Before(t) {
			out[id] = true
			delete(s.marks, id)
		}
	}
	return out
}

// NoteDeleted is the endpoint follower's deletion: the record of another
// host's endpoint is gone, so remote endpoints of its address are looked
// at after the grace (markLoop).
func (s *Sweeper) NoteDeleted(ep state.Endpoint) {
	if ep.HomingHost == s.cfg.HostLabel || ep.IPAddress == "" {
		return
	}
	s.mu.Lock()
	s.deleted[recordKey(ep)] = time.Now()
	s.mu.Unlock()
	kick(s.delKick)
}

// markLoop marks the remote endpoints of deleted records that are still
// held after the grace, until ctx ends.
func (s *Sweeper) markLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.delKick:
		}
		for {
			next, pending := s.markDeleted()
			if !pending {
				break
			}
			if !ctxutil.Sleep(ctx, time.Until(next)) {
				return
			}
		}
	}
}

// markDeleted marks the remote endpoints of the deleted records whose
// grace has passed and that no record in the follower's cache backs
// again, and asks for an early sweep when it marked any. It returns when
// the next pending record's grace ends, if one is pending.
func (s *Sweeper) markDeleted() (next time.Time, pending bool) {
	now := time.Now()
	due := map[string]bool{}
	s.mu.Lock()
	for key, at := range s.deleted {
		end := at.Add(s.cfg.Grace)
		if !end.After(now) {
			due[key] = true
			delete(s.deleted, key)
			continue
		}
		if !pending || end.Before(next) {
			next, pending = end, true
		}
	}
	s.mu.Unlock()
	if len(due) == 0 {
		return next, pending
	}
	// An address a record holds again (re-created) is left to the
	// periodic sweeps: no listing is asked for it.
	for key := range s.cachedRemoteKeys() {
		delete(due, key)
	}
	var seen []string
	for i, a := range s.cfg.Agents() {
		for _, rem := range a.RemoteEndpoints() {
			if ip := rem.IpAddr.To4(); ip != nil && due[remoteKey(ip.String(), rem.Vrf)] {
				seen = append(seen, staleRemoteID(i, rem))
			}
		}
	}
	if len(seen) == 0 {
		return next, pending
	}
	at := time.Now() // after the versions were read: the listing must begin later
	s.mu.Lock()
	for _, id := range seen {
		s.marks[id] = at
	}
	s.mu.Unlock()
	s.cfg.Log.WithField("count", len(seen)).Info("remote endpoints of deleted endpoint records still held: early sweep")
	kick(s.sweepKick)
	return next, pending
}

// cachedRemoteKeys are the remote keys of the records in the endpoint
// follower's cache.
func (s *Sweeper) cachedRemoteKeys() map[string]bool {
	var all []state.Endpoint
	for _, id := range s.cfg.Cached.IDs() {
		if ep, ok := s.cfg.Cached.Get(id); ok {
			all = append(all, ep)
		}
	}
	return storeRemoteKeys(all)
}

// sweepLoop lists the store's endpoints now and every Interval until ctx
// ends, and runs Periodic and dropStale on the listing. Between them, an
// early sweep asked for by markDeleted (at most one per KickGap) runs
// dropStale only.
func (s *Sweeper) sweepLoop(ctx context.Context) {
	full := true
	var nextFull, last time.Time
	for {
		listed := time.Now()
		if full {
			nextFull = listed.Add(s.cfg.Interval)
		}
		last = listed
		all, _, err := s.cfg.Records.ReadAll(ctx)
		if err != nil {
			if ctx.Err() == nil {
				s.cfg.Log.WithError(err).Warn("sweep: list endpoints failed; retrying later")
			}
		} else {
			if full {
				s.cfg.Periodic(ctx, all)
			}
			if _, err := s.dropStale(ctx, all, listed); err != nil && ctx.Err() == nil {
				s.cfg.Log.WithError(err).Warn("sweep of stale remote endpoints incomplete; retrying later")
			}
		}
		t := time.NewTimer(time.Until(nextFull))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
			full = true
		case <-s.sweepKick:
			t.Stop()
			full = false
			if gap := time.Until(last.Add(s.cfg.KickGap)); gap > 0 {
				if !ctxutil.Sleep(ctx, gap) {
					return
				}
			}
			full = !time.Now().Before(nextFull)
		}
	}
}
