package etcd

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/contiv/netplugin/objdb"

	"github.com/contiv/netplugin/utils/ctxutil"
)

// lockEventBuffer lets a few transitions queue up when the consumer is
// slow, so Release rarely waits to hand over its final event.
const lockEventBuffer = 16

// lockState is where a lock is in its life: idle until Acquire, running
// while campaigning or holding, released after Release.
type lockState int

const (
	lockIdle lockState = iota
	lockRunning
	lockDone
)

// lock is an objdb.Lock on a concurrency.Election under Root/lock/<name>.
// Each candidate's key is Root/lock/<name>/<lease> with the holder ID as
// value, bound to a concurrency.Session whose TTL is the lock TTL.
type lock struct {
	c      *Client
	name   string
	holder string
	pfx    string // election prefix (absolute)
	ttl    int    // seconds

	events   chan objdb.LockEvent
	acquired atomic.Bool

	mu      sync.Mutex
	state   lockState
	relCtx  context.Context // set by Release before stop is called
	relErr  error           // set by run before done closes
	stopCtx context.Context // cancelled by Release
	stop    context.CancelFunc
	done    chan struct{} // closed when run returns
}

var _ objdb.Lock = (*lock)(nil)

// NewLock returns a leader lock on "lock/<name>". The TTL is rounded up to
// whole seconds (at least one), the granularity of etcd leases.
func (c *Client) NewLock(name, holderID string, ttl time.Duration) (objdb.Lock, error) {
	if err := objdb.CheckKey(objdb.LockKey(name)); err != nil || name == "" {
		return nil, fmt.Errorf("new lock %q: %w: bad lock name", name, objdb.ErrInvalid)
	}
	if holderID == "" {
		return nil, fmt.Errorf("new lock %q: %w: empty holder ID", name, objdb.ErrInvalid)
	}
	if ttl <= 0 {
		return nil, fmt.Errorf("new lock %q: %w: TTL %s must be positive", name, objdb.ErrInvalid, ttl)
	}
	secs := int(math.Ceil(ttl.Seconds()))
	if secs < 1 {
		secs = 1
	}
	stopCtx, stop := context.WithCancel(context.Background())
	return &lock{
		c:       c,
		name:    name,
		holder:  holderID,
		pfx:     c.full(objdb.LockKey(name)),
		ttl:     secs,
		events:  make(chan objdb.LockEvent, lockEventBuffer),
		stopCtx: stopCtx,
		stop:    stop,
		done:    make(chan struct{}),
	}, nil
}

// Events delivers Acquired, Lost and Released transitions in order. It is
// closed when the campaign stops.
func (l *lock) Events() <-chan objdb.LockEvent { return l.events }

// IsAcquired reports whether this holder leads now.
func (l *lock) IsAcquired() bool { return l.acquired.Load() }

// Holder returns the holder ID of the current leader, "" when there is
// none. It reads the oldest candidate key under the election prefix, the
// same query concurrency.Election.Leader makes, without needing a session.
func (l *lock) Holder(ctx context.Context) (string, error) {
	var resp *clientv3.GetResponse
	err := l.c.do(ctx, "lock holder", objdb.LockKey(l.name), func(actx context.Context) (err error) {
		resp, err = l.c.cli.Get(actx, l.pfx+"/", clientv3.WithFirstCreate()...)
		return err
	})
	if err != nil {
		return "", err
	}
	if len(resp.Kvs) == 0 {
		return "", nil
	}
	return string(resp.Kvs[0].Value), nil
}

// Acquire starts the campaign in the background and returns at once. The
// campaign runs until Release, until ctx ends or until the client is
// closed; when it stops because ctx ended, the session lease is revoked so
// another candidate takes over at once.
func (l *lock) Acquire(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch l.state {
	case lockRunning:
		return fmt.Errorf("acquire lock %q: %w: already acquiring", l.name, objdb.ErrInvalid)
	case lockDone:
		return fmt.Errorf("acquire lock %q: %w: lock was released", l.name, objdb.ErrInvalid)
	}
	runCtx, cancel := l.c.withClient(ctx)
	err := l.c.goStart(func() {
		defer cancel()
		l.run(runCtx)
	})
	if err != nil {
		cancel()
		return fmt.Errorf("acquire lock %q: %w", l.name, err)
	}
	l.state = lockRunning
	return nil
}

// Release resigns if held, revokes the session lease, stops the campaign
// and waits for it, bounded by ctx. A second Release is a no-op.
func (l *lock) Release(ctx context.Context) error {
	l.mu.Lock()
	switch l.state {
	case lockDone:
		l.mu.Unlock()
		return nil
	case lockIdle:
		l.state = lockDone
		l.stop()
		close(l.events)
		close(l.done)
		l.mu.Unlock()
		return nil
	}
	l.state = lockDone
	l.relCtx = ctx
	l.stop()
	l.mu.Unlock()

	select {
	case <-l.done:
	case <-ctx.Done():
		return fmt.Errorf("release lock %q: %w", l.name, ctx.Err())
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.relErr
}

func (l *lock) logger() *logrus.Entry {
	return l.c.log.WithFields(logrus.Fields{"lock": l.name, "holder": l.holder})
}

// emit delivers ev unless the campaign is being stopped.
func (l *lock) emit(ctx context.Context, ev objdb.LockEvent) {
	select {
	case l.events <- ev:
	case <-ctx.Done():
	case <-l.stopCtx.Done():
	}
}

// stopping reports whether the campaign must end.
func (l *lock) stopping(runCtx context.Context) bool {
	return runCtx.Err() != nil || l.stopCtx.Err() != nil
}

// run is the campaign loop: get a session, campaign, report Acquired, wait
// for the session to end (Lost, then campaign again with a new session) or
// for the stop.
func (l *lock) run(runCtx context.Context) {
	defer close(l.done)
	defer close(l.events)
	log := l.logger()

	var (
		sess *concurrency.Session
		elec *concurrency.Election
		bo   = ctxutil.NewBackoff(backoffMin, backoffMax)
	)
	// waitCtx ends with either stop signal. Sessions live in it, so a
	// Release also interrupts a session grant blocked on an unreachable
	// store; finish resigns and revokes with its own context.
	waitCtx, waitCancel := context.WithCancel(runCtx)
	defer waitCancel()
	stopAF := context.AfterFunc(l.stopCtx, waitCancel)
	defer stopAF()

	for attempt := 1; !l.stopping(runCtx); {
		if sess == nil {
			s, err := concurrency.NewSession(l.c.cli, concurrency.WithTTL(l.ttl), concurrency.WithContext(waitCtx))
			if err != nil {
				if l.stopping(runCtx) {
					break
				}
				log.WithError(err).WithField("attempt", attempt).Warn("cannot create lock session, retrying")
				attempt++
				ctxutil.Sleep(waitCtx, bo.NextBackOff())
				continue
			}
			sess, elec = s, concurrency.NewElection(s, l.pfx)
		}

		// Campaign until elected, the session ends or we are stopped (the
		// session's context ends in all those cases but the first).
		err := elec.Campaign(sess.Ctx(), l.holder)
		if l.stopping(runCtx) {
			break
		}
		if !sessionAlive(sess) {
			log.Warn("lock session expired while campaigning, starting a new one")
			l.dropSession(waitCtx, sess)
			sess, elec = nil, nil
			continue
		}
		if err != nil {
			log.WithError(err).WithField("attempt", attempt).Warn("lock campaign failed, retrying")
			attempt++
			ctxutil.Sleep(waitCtx, bo.NextBackOff())
			continue
		}

		attempt = 1
		bo.Reset()
		l.acquired.Store(true)
		log.Info("lock acquired")
		l.emit(runCtx, objdb.LockEvent{Type: objdb.LockAcquired})

		select {
		case <-sess.Done():
		case <-l.stopCtx.Done():
		case <-runCtx.Done():
		}
		if l.stopping(runCtx) {
			break
		}
		l.acquired.Store(false)
		err = fmt.Errorf("lock %q: session lease of holder %q expired: %w", l.name, l.holder, objdb.ErrUnavailable)
		log.WithError(err).Warn("lock lost")
		l.emit(runCtx, objdb.LockEvent{Type: objdb.LockLost, Err: err})
		l.dropSession(waitCtx, sess)
		sess, elec = nil, nil
	}

	l.finish(sess, elec)
}

// dropSession revokes the lease of a session the client gave up on: if the
// store still has it (a keep-alive response came late), our stale key would
// otherwise keep its place in the election until the TTL runs out.
func (l *lock) dropSession(ctx context.Context, sess *concurrency.Session) {
	rctx, cancel := context.WithTimeout(ctx, l.c.reqTO)
	defer cancel()
	if _, err := l.c.cli.Revoke(rctx, sess.Lease()); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		l.logger().WithError(err).Debug("revoke of a dropped lock session failed; it expires by TTL")
	}
}

func sessionAlive(s *concurrency.Session) bool {
	select {
	case <-s.Done():
		return false
	default:
		return true
	}
}

// finish ends the session. On Release it resigns and revokes the lease
// within the Release context and reports Released if the lock was held.
// When the Acquire context ended it revokes the lease with a bounded
// request; when the client is closing the lease is left to expire.
func (l *lock) finish(sess *concurrency.Session, elec *concurrency.Election) {
	wasHeld := l.acquired.Swap(false)
	l.mu.Lock()
	relCtx := l.relCtx
	l.mu.Unlock()
	released := relCtx != nil

	var err error
	if sess != nil && l.c.ctx.Err() != nil {
		sess.Orphan() // the client is closing: leave the lease to expire
	} else if sess != nil {
		var ctx context.Context
		var cancel context.CancelFunc
		if released {
			ctx, cancel = l.c.withClient(relCtx)
		} else {
			ctx, cancel = context.WithCancel(l.c.ctx)
		}
		ctx, cancelTO := context.WithTimeout(ctx, l.c.reqTO)
		if wasHeld {
			if rerr := elec.Resign(ctx); rerr != nil {
				err = fmt.Errorf("resign lock %q: %w", l.name, rerr)
			}
		}
		sess.Orphan()
		if _, rerr := l.c.cli.Revoke(ctx, sess.Lease()); rerr != nil && !errors.Is(rerr, rpctypes.ErrLeaseNotFound) && l.c.ctx.Err() == nil {
			err = errors.Join(err, fmt.Errorf("revoke session of lock %q: %w", l.name, rerr))
		}
		cancelTO()
		cancel()
	}
	if err != nil {
		l.logger().WithError(err).Warn("lock session not cleaned up; it expires by TTL")
	}
	if released {
		l.mu.Lock()
		l.relErr = err
		l.mu.Unlock()
		if wasHeld {
			l.logger().Info("lock released")
			select {
			case l.events <- objdb.LockEvent{Type: objdb.LockReleased}:
			case <-relCtx.Done():
			case <-l.c.ctx.Done():
			}
		}
	}
}
