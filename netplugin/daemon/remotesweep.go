package daemon

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/contiv/netplugin/ofnet/ofrpc"
	"github.com/contiv/netplugin/state"
	"github.com/contiv/netplugin/utils/ctxutil"
)

// Remote endpoints follow the store (docs/architecture.md, "Headless
// dataplane"). A master forgets nothing it was told, but each netmaster
// term runs a fresh ofnet master that knows only what agents push to it
// after they register: a deletion queued in the old term's master for an
// agent, or sent while the agent was between masters, is lost, and the
// remote endpoint's flows stay on that agent for good (found by the soak
// test, docs/soak.md). The orphan sweep's listing of the store settles it:
// a remote endpoint whose address no endpoint record of its tenant holds,
// seen so on two sweeps in a row (so an endpoint deleted and re-created in
// between, or one whose record is being written, is never touched), is
// removed. A store that cannot be read removes nothing.
//
// A deletion the agent missed need not wait for two sweeps: the store
// watch reports the record's deletion, and a remote endpoint of that
// address still held RemoteDelGrace later (a deletion the master sent
// arrives well within it) is marked with the time it was seen and an
// early sweep is asked for (at most one per SweepKickGap). That sweep
// removes a marked version (same agent, endpoint and timestamp) its
// listing finds unbacked, if the listing began after the mark: every
// remote endpoint is sent only after its record was written, so a
// version held before a listing that has no record of its address is a
// deleted record's, never that of a record re-created with the address
// (such a version is held after the re-creation, and its record is in any
// listing after it). Without the early sweep it waits for the periodic
// ones (up to two intervals).

// remoteKey names a remote endpoint by what an endpoint record gives:
// IPv4 address and tenant (the agent's VRF).
func remoteKey(ip, tenant string) string { return ip + "|" + tenant }

// storeRemoteKeys are the keys of every endpoint record in all.
func storeRemoteKeys(all []state.Endpoint) map[string]bool {
	keys := make(map[string]bool, len(all))
	for _, ep := range all {
		if ep.IPAddress == "" {
			continue
		}
		_, tenant, _ := strings.Cut(ep.NetID, ".")
		keys[remoteKey(strings.Split(ep.IPAddress, "/")[0], tenant)] = true
	}
	return keys
}

// staleRemoteID identifies one version of one agent's remote endpoint.
func staleRemoteID(agent int, r ofrpc.OfnetEndpoint) string {
	return fmt.Sprint(agent) + "|" + r.EndpointID + "|" + r.Timestamp.String()
}

// dropStaleRemotes removes the remote endpoints no record of all backs
// that the previous call saw unbacked too, or that were marked
// (markDeletedRemotes) before listed, when the listing all began; it
// returns how many it removed. Only sweepLoop calls it (it owns
// d.unbackedRemotes).
func (d *Daemon) dropStaleRemotes(ctx context.Context, all []state.Endpoint, listed time.Time) (int, error) {
	backed := storeRemoteKeys(all)
	marked := d.remoteDel.takeMarks(listed)
	seen := map[string]bool{}
	var errs []error
	n := 0
	for i, a := range d.agents() {
		for _, r := range a.RemoteEndpoints() {
			ip := r.IpAddr.To4()
			if ip == nil || backed[remoteKey(ip.String(), r.Vrf)] {
				continue
			}
			id := staleRemoteID(i, r)
			if !d.unbackedRemotes[id] && !marked[id] {
				seen[id] = true // first sighting: removed next time if still unbacked
				continue
			}
			if err := a.RemoveRemoteEndpoint(ctx, r); err != nil {
				errs = append(errs, err)
				seen[id] = true
				continue
			}
			d.log.WithField("endpoint", r.EndpointID).WithField("address", ip.String()).
				Warn("removed a remote endpoint the store no longer holds (its deletion never reached this agent)")
			n++
		}
	}
	d.unbackedRemotes = seen
	return n, errors.Join(errs...)
}

// remoteDeletions are the records the store watch reported deleted and the
// remote endpoint versions seen matching them, for the early sweep.
type remoteDeletions struct {
	mu        sync.Mutex
	deleted   map[string]time.Time // remoteKey → when the watch reported it
	marks     map[string]time.Time // staleRemoteID → when it was seen (after)
	delKick   chan struct{}        // to remoteDelLoop (capacity 1)
	sweepKick chan struct{}        // to sweepLoop (capacity 1)
}

// initLocked makes r's maps and channels; r.mu must be held.
func (r *remoteDeletions) initLocked() {
	if r.deleted == nil {
		r.deleted, r.marks = map[string]time.Time{}, map[string]time.Time{}
		r.delKick, r.sweepKick = make(chan struct{}, 1), make(chan struct{}, 1)
	}
}

// channels are the kicks of remoteDelLoop and sweepLoop.
func (r *remoteDeletions) channels() (delKick, sweepKick chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.initLocked()
	return r.delKick, r.sweepKick
}

func kick(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// takeMarks returns the marks made before t and forgets them (the sweep
// whose listing began at t settles them); later ones stay for the next.
func (r *remoteDeletions) takeMarks(t time.Time) map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]bool{}
	for id, at := range r.marks {
		if at.Before(t) {
			out[id] = true
			delete(r.marks, id)
		}
	}
	return out
}

// noteDeletedRecord is the endpoint follower's deletion: the record of
// another host's endpoint is gone, so remote endpoints of its address are
// looked at after the grace (remoteDelLoop).
func (d *Daemon) noteDeletedRecord(ep state.Endpoint) {
	if ep.HomingHost == d.cfg.HostLabel || ep.IPAddress == "" {
		return
	}
	_, tenant, _ := strings.Cut(ep.NetID, ".")
	key := remoteKey(strings.Split(ep.IPAddress, "/")[0], tenant)
	r := &d.remoteDel
	r.mu.Lock()
	r.initLocked()
	r.deleted[key] = time.Now()
	c := r.delKick
	r.mu.Unlock()
	kick(c)
}

// remoteDelLoop marks the remote endpoints of deleted records that are
// still held after the grace, until ctx ends.
func (d *Daemon) remoteDelLoop(ctx context.Context) {
	delKick, _ := d.remoteDel.channels()
	for {
		select {
		case <-ctx.Done():
			return
		case <-delKick:
		}
		for {
			next, pending := d.markDeletedRemotes()
			if !pending {
				break
			}
			if !ctxutil.Sleep(ctx, time.Until(next)) {
				return
			}
		}
	}
}

// markDeletedRemotes marks the remote endpoints of the deleted records
// whose grace has passed and that no record in the follower's cache backs
// again, and asks for an early sweep when it marked any. It returns when
// the next pending record's grace ends, if one is pending.
func (d *Daemon) markDeletedRemotes() (next time.Time, pending bool) {
	r := &d.remoteDel
	now := time.Now()
	due := map[string]bool{}
	r.mu.Lock()
	r.initLocked()
	for key, at := range r.deleted {
		end := at.Add(d.cfg.RemoteDelGrace)
		if !end.After(now) {
			due[key] = true
			delete(r.deleted, key)
			continue
		}
		if !pending || end.Before(next) {
			next, pending = end, true
		}
	}
	r.mu.Unlock()
	if len(due) == 0 {
		return next, pending
	}
	// An address a record holds again (re-created) is left to the
	// periodic sweeps: no listing is asked for it.
	for key := range d.cachedRemoteKeys() {
		delete(due, key)
	}
	var seen []string
	for i, a := range d.agents() {
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
	r.mu.Lock()
	for _, id := range seen {
		r.marks[id] = at
	}
	c := r.sweepKick
	r.mu.Unlock()
	d.log.WithField("count", len(seen)).Info("remote endpoints of deleted endpoint records still held: early sweep")
	kick(c)
	return next, pending
}

// cachedRemoteKeys are the remote keys of the records in the endpoint
// follower's cache.
func (d *Daemon) cachedRemoteKeys() map[string]bool {
	if d.want.eps == nil {
		return nil
	}
	var all []state.Endpoint
	for _, id := range d.want.eps.IDs() {
		if ep, ok := d.want.eps.Get(id); ok {
			all = append(all, ep)
		}
	}
	return storeRemoteKeys(all)
}
