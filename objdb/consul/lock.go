package consul

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/utils/ctxutil"
)

// acquireRetry is the pause after a refused KV acquire (the key's
// lock-delay after its holder's session was invalidated, or a race).
const acquireRetry = 2 * lockDelay

// NewLock returns a leader lock on "lock/<name>" under the root. The lock
// is a consul session (behaviour delete, lock-delay 10ms, TTL ttl/2 so a
// dead holder's key vanishes within ttl; see the package comment) and a KV
// acquire of the key with value holderID.
func (c *Client) NewLock(name, holderID string, ttl time.Duration) (objdb.Lock, error) {
	if err := c.checkOpen(); err != nil {
		return nil, fmt.Errorf("new lock %q: %w", name, err)
	}
	if err := objdb.CheckKey(objdb.LockKey(name)); err != nil {
		return nil, fmt.Errorf("new lock %q: %w", name, err)
	}
	if holderID == "" {
		return nil, fmt.Errorf("new lock %q: %w: empty holder ID", name, objdb.ErrInvalid)
	}
	if ttl <= 0 {
		return nil, fmt.Errorf("new lock %q: %w: TTL %v", name, objdb.ErrInvalid, ttl)
	}
	return &lock{
		c:      c,
		name:   name,
		key:    c.full(objdb.LockKey(name)),
		holder: holderID,
		ttl:    ttl,
		events: make(chan objdb.LockEvent, 16),
	}, nil
}

type lock struct {
	c      *Client
	name   string
	key    string // consul key
	holder string
	ttl    time.Duration
	events chan objdb.LockEvent

	acquired atomic.Bool

	mu        sync.Mutex
	started   bool
	stopped   bool
	cancel    context.CancelFunc
	done      chan struct{}
	releasing bool            // Release asked the campaign to stop
	relCtx    context.Context // Release's ctx, for the final clean-up
}

var _ objdb.Lock = (*lock)(nil)

func (l *lock) Events() <-chan objdb.LockEvent { return l.events }

func (l *lock) IsAcquired() bool { return l.acquired.Load() }

// Holder returns the value of the lock key while a session holds it, ""
// when nobody does.
func (l *lock) Holder(ctx context.Context) (string, error) {
	var pair *api.KVPair
	err := l.c.retry(ctx, fmt.Sprintf("read lock %q", l.name), func(ctx context.Context) error {
		p, _, err := l.c.api.KV().Get(l.key, qopts(ctx))
		pair = p
		return err
	})
	if err != nil || pair == nil || pair.Session == "" {
		return "", err
	}
	return string(pair.Value), nil
}

// Acquire starts the campaign in the background; see the package comment
// for the consul mechanics. When ctx ends the campaign stops and, if the
// lock is held, resigns it (best effort). Client.Close stops it without
// resigning: the key then expires by TTL.
func (l *lock) Acquire(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.started || l.stopped {
		return fmt.Errorf("acquire lock %q: %w: Acquire already called or lock released", l.name, objdb.ErrInvalid)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	err := l.c.goOwned(func() {
		defer close(done)
		defer close(l.events)
		defer cancel()
		stop := context.AfterFunc(l.c.base, cancel)
		defer stop()
		l.run(ctx, runCtx)
	})
	if err != nil {
		cancel()
		return fmt.Errorf("acquire lock %q: %w", l.name, err)
	}
	l.started, l.cancel, l.done = true, cancel, done
	return nil
}

// Release resigns (if held), stops the campaign and waits for it. The last
// event is LockReleased if the lock was held; then Events is closed.
func (l *lock) Release(ctx context.Context) error {
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return nil
	}
	l.stopped = true
	if !l.started {
		l.mu.Unlock()
		close(l.events)
		return nil
	}
	l.releasing, l.relCtx = true, ctx
	cancel, done := l.cancel, l.done
	l.mu.Unlock()
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("release lock %q: %w", l.name, ctx.Err())
	}
}

func (l *lock) emit(ctx context.Context, t objdb.LockEventType, err error) {
	select {
	case l.events <- objdb.LockEvent{Type: t, Err: err}:
	case <-ctx.Done():
	}
}

// run campaigns in terms, one session each, until runCtx ends.
func (l *lock) run(actx, runCtx context.Context) {
	log := l.c.log.WithField("lock", l.name).WithField("holder", l.holder)
	bo := l.c.cfg.newBackoff()
	var last session
	for runCtx.Err() == nil {
		s, err := l.c.createSession(runCtx, l.key, l.ttl)
		if err != nil {
			if runCtx.Err() != nil {
				break
			}
			d := bo.NextBackOff()
			log.WithError(err).Warnf("lock campaign: cannot create a consul session, retrying in %v", d)
			if !ctxutil.Sleep(runCtx, d) {
				break
			}
			continue
		}
		bo.Reset()
		last = s
		lost := l.term(runCtx, s)
		if runCtx.Err() != nil {
			break
		}
		// The term ended with the stop of runCtx or a loss; in the latter
		// case drop what is left of the session and campaign again.
		if l.acquired.Swap(false) {
			log.WithError(lost).Warn("lock lost")
			l.emit(runCtx, objdb.LockLost, lost)
		}
		dctx, cancel := cleanupCtx(runCtx, l.c.cfg.RequestTimeout)
		l.c.destroySession(dctx, s)
		cancel()
		last = session{}
	}

	// Stopped: by Release, by actx, or by Client.Close.
	l.mu.Lock()
	releasing, relCtx := l.releasing, l.relCtx
	l.mu.Unlock()
	held := l.acquired.Swap(false)
	if l.c.base.Err() != nil && !releasing {
		return // client closed: leave the session to expire, as a dead process would
	}
	parent := actx
	if releasing {
		parent = relCtx
	}
	cctx, cancel := cleanupCtx(parent, l.c.cfg.RequestTimeout)
	defer cancel()
	if held && last.id != "" {
		if _, _, err := l.c.api.KV().Release(&api.KVPair{Key: l.key, Value: []byte(l.holder), Session: last.id}, wopts(cctx)); err != nil {
			log.WithError(err).Warn("release lock key (it goes with the session)")
		}
	}
	l.c.destroySession(cctx, last)
	if held && releasing {
		select {
		case l.events <- objdb.LockEvent{Type: objdb.LockReleased}:
		case <-relCtx.Done():
		}
	}
}

// term campaigns with session s until runCtx ends or s is lost; it returns
// why s was lost. While the lock is held it watches the key; while not, it
// acquires the key as soon as no session holds it.
func (l *lock) term(runCtx context.Context, s session) error {
	tctx, cancel := context.WithCancel(runCtx)
	defer cancel()
	renewErr := make(chan error, 1)
	go func() { // owned by term: it waits for renewErr below
		err := l.c.renew(tctx, s)
		renewErr <- err
		cancel()
	}()
	lost := l.campaign(runCtx, tctx, s)
	cancel()
	rerr := <-renewErr
	if lost == nil {
		lost = fmt.Errorf("lock %q: session %s renewal failed: %w", l.name, s.id, rerr)
	}
	return lost
}

// campaign runs blocking queries on the key until tctx ends (nil) or the
// held lock is seen lost (the reason). Events are sent under runCtx, so an
// acquisition is reported even if the term ends right after it.
func (l *lock) campaign(runCtx, tctx context.Context, s session) error {
	var idx uint64
	bo := l.c.cfg.newBackoff()
	for {
		rctx, cancel := context.WithTimeout(tctx, l.c.blockingTimeout())
		q := &api.QueryOptions{WaitIndex: idx, WaitTime: l.c.cfg.WaitTime}
		pair, meta, err := l.c.api.KV().Get(l.key, q.WithContext(rctx))
		cancel()
		if tctx.Err() != nil {
			return nil
		}
		if err != nil {
			d := bo.NextBackOff()
			l.c.log.WithError(err).WithField("lock", l.name).Debugf("lock campaign: read failed, retrying in %v", d)
			if !ctxutil.Sleep(tctx, d) {
				return nil
			}
			idx = 0
			continue
		}
		bo.Reset()
		if meta.LastIndex < idx {
			idx = 0 // index went backwards: read again at once
		} else {
			idx = meta.LastIndex
		}

		if l.acquired.Load() {
			switch {
			case pair == nil:
				return fmt.Errorf("lock %q: key deleted: %w", l.name, errLost)
			case pair.Session != s.id:
				return fmt.Errorf("lock %q: key now held by session %q: %w", l.name, pair.Session, errLost)
			case string(pair.Value) != l.holder:
				return fmt.Errorf("lock %q: value changed to %q: %w", l.name, pair.Value, errLost)
			}
			continue
		}
		if pair != nil && pair.Session != "" {
			if pair.Session == s.id && string(pair.Value) == l.holder {
				// Our acquire went through though its reply was lost.
				l.acquired.Store(true)
				l.emit(runCtx, objdb.LockAcquired, nil)
			}
			continue // held by another: wait for a change
		}
		ok, _, err := l.c.api.KV().Acquire(&api.KVPair{Key: l.key, Value: []byte(l.holder), Session: s.id}, wopts(tctx))
		if tctx.Err() != nil {
			return nil
		}
		switch {
		case err != nil:
			l.c.log.WithError(err).WithField("lock", l.name).Debug("lock campaign: acquire failed")
			idx = 0
			if !ctxutil.Sleep(tctx, l.c.cfg.newBackoff().NextBackOff()) {
				return nil
			}
		case ok:
			l.acquired.Store(true)
			l.emit(runCtx, objdb.LockAcquired, nil)
		default:
			// Refused: lock-delay after the last holder's session was
			// invalidated, or another contender won the race.
			idx = 0
			if !ctxutil.Sleep(tctx, acquireRetry) {
				return nil
			}
		}
	}
}

// errLost marks a loss seen on the key itself.
var errLost = errors.New("lock lost")
