package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/contiv/netplugin/ofnet/ofrpc"
)

// pushJob is one call sequence towards masters.
type pushJob struct {
	register *ofrpc.OfnetNode     // RegisterNode, then every local endpoint
	add      *ofrpc.OfnetEndpoint // EndpointAdd to targets
	del      *ofrpc.OfnetEndpoint // EndpointDel to targets
	targets  []ofrpc.OfnetNode
	attempt  int // earlier attempts that failed
}

// Retries of a push a master did not take (docs/soak.md): a registration
// (with its replay of the local endpoints), an EndpointAdd or an
// EndpointDel that failed is sent again, 1 s doubling to 30 s, until the
// master takes it, the master is no longer this agent's, or (an add) the
// endpoint changed or went; the push loop's ctx bounds it all. Dropping
// one was a leak: a master that stays connected never gets the endpoint
// (add) or keeps it and sends it to every agent for ever (delete). The
// master ignores a deletion older than the endpoint it holds and an add
// not newer than it, so a late retry cannot undo a newer change.
const (
	retryMin = time.Second
	retryMax = 30 * time.Second
)

// delayed is a job due at a time.
type delayed struct {
	job pushJob
	due time.Time
}

// pushQueue is an unbounded FIFO, so forwarding set-up never waits for a master.
type pushQueue struct {
	mu     sync.Mutex
	jobs   []pushJob
	later  []delayed // retries, queued when due
	notify chan struct{}
	// down holds the masters a call could not reach, by address: no call
	// is made to one before its until (the job goes to its retry), so an
	// unreachable master costs the loop one failed call per pause, not
	// one per job (docs/dataplane.md §6.2).
	down map[string]downState
}

// downState is an unreachable master's pause: 1 s doubling to 30 s while
// it stays unreachable.
type downState struct {
	until time.Time
	pause time.Duration
}

// errMasterDown: the call was not made, the master was unreachable a moment
// ago.
var errMasterDown = errors.New("master unreachable a moment ago: call deferred")

// errNotMaster: the call was not made, the master is no longer this agent's.
var errNotMaster = errors.New("no longer this agent's master")

// isDown reports whether calls to addr wait.
func (q *pushQueue) isDown(addr string, now time.Time) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	d, ok := q.down[addr]
	return ok && now.Before(d.until)
}

// markDown starts or lengthens addr's pause after a call that could not
// reach it.
func (q *pushQueue) markDown(addr string, now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.down == nil {
		q.down = map[string]downState{}
	}
	d := q.down[addr]
	d.pause = min(max(2*d.pause, retryMin), retryMax)
	d.until = now.Add(d.pause)
	q.down[addr] = d
}

// markUp ends addr's pause (a call reached it, or it announced itself).
func (q *pushQueue) markUp(addr string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.down, addr)
}

// putLater queues j at due.
func (q *pushQueue) putLater(j pushJob, due time.Time) {
	q.mu.Lock()
	q.later = append(q.later, delayed{job: j, due: due})
	q.mu.Unlock()
}

// promote queues the retries that are due and returns when the next one
// is (zero when none waits).
func (q *pushQueue) promote(now time.Time) time.Time {
	q.mu.Lock()
	defer q.mu.Unlock()
	var next time.Time
	keep := q.later[:0]
	for _, d := range q.later {
		if !d.due.After(now) {
			q.jobs = append(q.jobs, d.job)
			continue
		}
		keep = append(keep, d)
		if next.IsZero() || d.due.Before(next) {
			next = d.due
		}
	}
	for i := len(keep); i < len(q.later); i++ {
		q.later[i] = delayed{}
	}
	q.later = keep
	return next
}

// hasRegister reports whether a registration with the master at addr is
// queued or waiting for its retry.
func (q *pushQueue) hasRegister(addr string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, j := range q.jobs {
		if j.register != nil && masterAddr(*j.register) == addr {
			return true
		}
	}
	for _, d := range q.later {
		if d.job.register != nil && masterAddr(*d.job.register) == addr {
			return true
		}
	}
	return false
}

func newPushQueue() *pushQueue { return &pushQueue{notify: make(chan struct{}, 1)} }

func (q *pushQueue) put(j pushJob) {
	q.mu.Lock()
	q.jobs = append(q.jobs, j)
	q.mu.Unlock()
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

func (q *pushQueue) take() (pushJob, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.jobs) == 0 {
		return pushJob{}, false
	}
	j := q.jobs[0]
	q.jobs = q.jobs[1:]
	return j, true
}

func masterAddr(n ofrpc.OfnetNode) string {
	return net.JoinHostPort(n.HostAddr, strconv.Itoa(int(n.HostPort)))
}

// pushLoop runs the queued master calls in order until ctx ends. A call a
// master did not take is logged and tried again later (retry).
func (a *Agent) pushLoop(ctx context.Context) error {
	for {
		next := a.pushes.promote(time.Now())
		j, ok := a.pushes.take()
		if !ok {
			var due <-chan time.Time
			var t *time.Timer
			if !next.IsZero() {
				t = time.NewTimer(time.Until(next))
				due = t.C
			}
			select {
			case <-ctx.Done():
			case <-a.pushes.notify:
			case <-due:
			}
			if t != nil {
				t.Stop()
			}
			if ctx.Err() != nil {
				return nil
			}
			continue
		}
		a.runPush(ctx, j)
	}
}

func (a *Agent) runPush(ctx context.Context, j pushJob) {
	// The loop is serial: a call to a master that is gone (dialled with
	// the pool's attempts, about 4 s each when refused) must not hold up
	// the calls to the others. A master no longer this agent's is not
	// called at all; one that could not be reached is not called again
	// before its pause ends (the job is retried).
	call := func(m ofrpc.OfnetNode, method string, arg any) error {
		addr := masterAddr(m)
		if !a.isMaster(addr) {
			return errNotMaster
		}
		if a.pushes.isDown(addr, time.Now()) {
			return errMasterDown
		}
		var reply bool
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := a.pool.Call(cctx, addr, method, arg, &reply); err != nil {
			var remote *ofrpc.RemoteError
			if !errors.As(err, &remote) && ctx.Err() == nil {
				a.pushes.markDown(addr, time.Now())
			}
			a.log.WithError(err).WithField("master", addr).WithField("method", method).
				Warn("agent: call to master failed")
			return err
		}
		a.pushes.markUp(addr)
		return nil
	}
	switch {
	case j.register != nil:
		me := ofrpc.OfnetNode{HostAddr: a.cfg.LocalIP.String(), HostPort: a.cfg.RPCPort}
		if call(*j.register, "OfnetMaster.RegisterNode", me) != nil {
			a.retry(j, *j.register)
			return
		}
		locals, sync, complete := a.pushedLocals()
		for _, ep := range locals {
			if call(*j.register, "OfnetMaster.EndpointAdd", ep) != nil {
				a.retry(j, *j.register)
				return
			}
		}
		// The complete set: the master drops what it holds from this
		// agent that is not in it (a deletion it missed). Not before the
		// owner replayed the local endpoints (markReplayed registers again).
		if !complete {
			return
		}
		if err := call(*j.register, ofrpc.MasterEndpointSync, sync); err != nil && !ofrpc.IsUnknownMethod(err) {
			a.retry(j, *j.register)
		}
	case j.add != nil:
		if j.attempt > 0 && !a.stillPushed(*j.add) {
			return // changed or gone since: what replaced it has its own push
		}
		var failed []ofrpc.OfnetNode
		for _, m := range j.targets {
			if call(m, "OfnetMaster.EndpointAdd", *j.add) != nil {
				failed = append(failed, m)
			}
		}
		a.retry(j, failed...)
	case j.del != nil:
		var failed []ofrpc.OfnetNode
		for _, m := range j.targets {
			if call(m, "OfnetMaster.EndpointDel", *j.del) != nil {
				failed = append(failed, m)
			}
		}
		a.retry(j, failed...)
	}
}

// retry queues another attempt of j for the masters that failed it and are
// still this agent's masters, after a pause that doubles with each attempt.
// An add is not retried once its endpoint changed or went (what replaced
// it has its own push).
func (a *Agent) retry(j pushJob, failed ...ofrpc.OfnetNode) {
	if len(failed) == 0 {
		return
	}
	a.mu.Lock()
	var still []ofrpc.OfnetNode
	for _, m := range failed {
		if _, ok := a.masters[masterAddr(m)]; ok {
			still = append(still, m)
		}
	}
	current := j.add == nil || a.pushedLocked(*j.add)
	a.mu.Unlock()
	if len(still) == 0 || !current {
		return
	}
	pause := retryMin << min(j.attempt, 16)
	if pause > retryMax || pause <= 0 {
		pause = retryMax
	}
	next := j
	next.attempt++
	if j.register == nil {
		next.targets = still
	} else if a.pushes.hasRegister(masterAddr(*j.register)) {
		return // a newer registration with this master is queued
	}
	a.pushes.putLater(next, time.Now().Add(pause))
}

// isMaster reports whether addr is one of this agent's masters.
func (a *Agent) isMaster(addr string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.masters[addr]
	return ok
}

func (a *Agent) stillPushed(ep ofrpc.OfnetEndpoint) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.pushedLocked(ep)
}

// pushedLocked reports whether ep is a local endpoint's current push.
func (a *Agent) pushedLocked(ep ofrpc.OfnetEndpoint) bool {
	for _, l := range a.locals {
		if l.pushed != nil && l.pushed.EndpointID == ep.EndpointID && l.pushed.Timestamp.Equal(ep.Timestamp) {
			return true
		}
	}
	return false
}

func (a *Agent) mastersLocked() []ofrpc.OfnetNode {
	out := make([]ofrpc.OfnetNode, 0, len(a.masters))
	for _, m := range a.masters {
		out = append(out, m)
	}
	return out
}

// pushedLocals returns the local endpoints as last pushed (resolved ones
// only), the sync that says they are all (taken at the same moment), and
// whether the local state is complete (markReplayed ran).
func (a *Agent) pushedLocals() ([]ofrpc.OfnetEndpoint, ofrpc.OfnetEndpointSync, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []ofrpc.OfnetEndpoint
	sync := ofrpc.OfnetEndpointSync{Node: ofrpc.OfnetNode{HostAddr: a.cfg.LocalIP.String(), HostPort: a.cfg.RPCPort},
		EndpointIDs: []string{}, Timestamp: now()}
	for _, l := range a.locals {
		if l.pushed != nil {
			out = append(out, *l.pushed)
			sync.EndpointIDs = append(sync.EndpointIDs, l.pushed.EndpointID)
		}
	}
	return out, sync, a.replayed
}

// markReplayed records that the owner replayed the local endpoints (a
// restarted agent starts empty) and, the first time, registers again with
// every master, so each gets the agent's complete set (EndpointSync).
func (a *Agent) markReplayed() {
	a.mu.Lock()
	first := !a.replayed
	a.replayed = true
	masters := a.mastersLocked()
	a.mu.Unlock()
	if !first {
		return
	}
	for _, m := range masters {
		a.pushes.put(pushJob{register: &m})
	}
}

// pushResolvedLocals pushes every local endpoint that resolved (its network is known)
// and was not pushed yet.
func (a *Agent) pushResolvedLocals() {
	a.mu.Lock()
	defer a.mu.Unlock()
	targets := a.mastersLocked()
	for _, ep := range a.localEndpointsLocked() {
		l := a.locals[ep.Port]
		if l.pushed != nil && l.pushed.EndpointID == ep.ID {
			continue
		}
		rpcEP := a.toRPC(ep, now())
		l.pushed = &rpcEP
		a.pushes.put(pushJob{add: &rpcEP, targets: targets})
	}
}

// pushDel tells the masters a local endpoint is gone.
func (a *Agent) pushDel(l *localEndpoint) {
	if l.pushed == nil {
		return
	}
	a.mu.Lock()
	targets := a.mastersLocked()
	a.mu.Unlock()
	ep := *l.pushed
	ep.Timestamp = now()
	a.pushes.put(pushJob{del: &ep, targets: targets})
}

// AddMaster records a master, registers this agent with it and then pushes every
// local endpoint to it (asynchronously). Adding a known master registers again.
func (a *Agent) AddMaster(ctx context.Context, n ofrpc.OfnetNode) error {
	if n.HostAddr == "" || n.HostPort == 0 {
		return fmt.Errorf("agent: add master %q:%d: address and port required", n.HostAddr, n.HostPort)
	}
	a.mu.Lock()
	a.masters[masterAddr(n)] = n
	a.mu.Unlock()
	a.pushes.markUp(masterAddr(n)) // it just called: it is there
	a.pushes.put(pushJob{register: &n})
	return nil
}

// RemoveMaster forgets a master and drops its connection. Unknown masters are a no-op.
func (a *Agent) RemoveMaster(ctx context.Context, n ofrpc.OfnetNode) error {
	a.mu.Lock()
	delete(a.masters, masterAddr(n))
	a.mu.Unlock()
	a.pool.Drop(masterAddr(n))
	return nil
}
