package ofmaster

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/ofnet/ofrpc"
	"github.com/contiv/netplugin/utils/ctxutil"
)

// Back-off of a sender whose agent cannot be reached.
const (
	retryMin = time.Second
	retryMax = 30 * time.Second
)

// message is one call to make to an agent, or (replay) a full replay of
// the master's state as of when it is sent.
type message struct {
	method string
	arg    any
	replay bool
}

// peer is one registered agent and its sender.
type peer struct {
	node   ofrpc.OfnetNode
	key    string
	log    logrus.FieldLogger
	cancel context.CancelFunc
	done   chan struct{} // closed when run returns
	wake   chan struct{} // one slot: something was queued
	kick   chan struct{} // one slot: the agent registered (ends a back-off)

	mu    sync.Mutex // guards queue, dropped and stats; never held during a call
	queue []message
	// dropped holds the deletions of a backlog that was dropped (overflow
	// or unreachable agent), one per endpoint or rule id, in the order they
	// were made. A replay sends only what the master holds, so it cannot
	// undo an add the agent already got; these deletions go out first.
	dropped []message
	stats   AgentStats
}

func newPeer(n ofrpc.OfnetNode, log logrus.FieldLogger) *peer {
	return &peer{
		node: n, key: n.Addr(), log: log.WithField("agent", n.Addr()),
		done: make(chan struct{}), wake: make(chan struct{}, 1), kick: make(chan struct{}, 1),
		stats: AgentStats{Sent: map[string]uint64{}, Failed: map[string]uint64{}},
	}
}

// enqueue appends msg. A full queue is replaced by one replay: the state it
// sends already contains the effect of every dropped add (callers change
// the state before queueing). Dropped deletions are kept and sent before
// the replay's state: the agent may hold an endpoint or rule from an
// earlier replay or call that the master has deleted since. GARP bursts
// are lost for an agent this far behind.
func (p *peer) enqueue(m *Master, msg message) {
	p.mu.Lock()
	if len(p.queue) >= m.cfg.QueueLen {
		p.log.WithField("queued", len(p.queue)).Warn("agent queue full: backlog replaced by a full replay")
		p.keepDeletions(append(p.queue, msg))
		p.queue = []message{{replay: true}}
		p.stats.Resyncs++
	} else {
		if msg.replay {
			p.stats.Resyncs++
		}
		p.queue = append(p.queue, msg)
	}
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// registered is called when the agent (re-)registers: a pending back-off
// ends at once.
func (p *peer) registered() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// deletionKey names the object a deletion removes ("" for other messages).
func deletionKey(msg message) string {
	switch msg.method {
	case ofrpc.AgentEndpointDel:
		if ep, ok := msg.arg.(ofrpc.OfnetEndpoint); ok {
			return "ep/" + ep.EndpointID
		}
	case ofrpc.PolicyDelRule:
		if r, ok := msg.arg.(ofrpc.OfnetPolicyRule); ok {
			return "rule/" + r.RuleId
		}
	}
	return ""
}

// keepDeletions moves the deletions among msgs to p.dropped, keeping the
// latest of each id. Callers hold p.mu.
func (p *peer) keepDeletions(msgs []message) {
	for _, msg := range msgs {
		k := deletionKey(msg)
		if k == "" {
			continue
		}
		for i, d := range p.dropped {
			if deletionKey(d) == k {
				p.dropped = append(p.dropped[:i], p.dropped[i+1:]...)
				break
			}
		}
		p.dropped = append(p.dropped, msg)
	}
}

// takeDropped hands the kept deletions to a replay.
func (p *peer) takeDropped() []message {
	p.mu.Lock()
	defer p.mu.Unlock()
	d := p.dropped
	p.dropped = nil
	return d
}

// restoreDropped puts back deletions a replay could not send, ahead of any
// kept since.
func (p *peer) restoreDropped(d []message) {
	p.mu.Lock()
	defer p.mu.Unlock()
	later := p.dropped
	p.dropped = nil
	p.keepDeletions(d)
	p.keepDeletions(later)
}

// resetToReplay drops the backlog for one replay (agent was unreachable),
// keeping its deletions.
func (p *peer) resetToReplay() {
	p.mu.Lock()
	p.keepDeletions(p.queue)
	p.queue = []message{{replay: true}}
	p.stats.Resyncs++
	p.mu.Unlock()
}

// next waits for the oldest message.
func (p *peer) next(ctx context.Context) (message, bool) {
	for {
		p.mu.Lock()
		if len(p.queue) > 0 {
			msg := p.queue[0]
			p.queue[0] = message{}
			p.queue = p.queue[1:]
			if len(p.queue) == 0 {
				p.queue = nil
			}
			p.mu.Unlock()
			return msg, true
		}
		p.mu.Unlock()
		select {
		case <-p.wake:
		case <-ctx.Done():
			return message{}, false
		}
	}
}

func (p *peer) statsCopy() AgentStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := AgentStats{Queued: len(p.queue), KeptDeletions: len(p.dropped), Resyncs: p.stats.Resyncs,
		Sent: make(map[string]uint64, len(p.stats.Sent)), Failed: make(map[string]uint64, len(p.stats.Failed))}
	for k, v := range p.stats.Sent {
		s.Sent[k] = v
	}
	for k, v := range p.stats.Failed {
		s.Failed[k] = v
	}
	return s
}

// run sends queued messages in order until ctx ends. When the agent cannot
// be reached the backlog is dropped and, after a growing pause, replaced by
// a full replay.
func (p *peer) run(ctx context.Context, m *Master) {
	defer close(p.done)
	bo := ctxutil.NewBackoff(retryMin, retryMax)
	for {
		msg, ok := p.next(ctx)
		if !ok {
			return
		}
		var err error
		if msg.replay {
			err = p.replay(ctx, m)
		} else {
			err = p.deliver(ctx, m, msg)
		}
		if ctx.Err() != nil {
			return
		}
		var remote *ofrpc.RemoteError
		if err == nil || errors.As(err, &remote) {
			bo.Reset()
			continue
		}
		pause := bo.NextBackOff()
		p.log.WithError(err).WithField("retry", pause).Warn("agent unreachable: backlog dropped, full replay after the pause")
		if !msg.replay {
			p.restoreDropped([]message{msg}) // a failed deletion is kept too
		}
		p.resetToReplay()
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-p.kick: // it registered again: it is back
			t.Stop()
			bo.Reset()
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// replay sends the deletions kept from dropped backlogs, then the master's
// current state; it stops at the first transport error (unsent deletions
// are kept for the next replay).
func (p *peer) replay(ctx context.Context, m *Master) error {
	dels := p.takeDropped()
	for i, msg := range dels {
		err := p.deliver(ctx, m, msg)
		var remote *ofrpc.RemoteError
		if err != nil && !errors.As(err, &remote) {
			p.restoreDropped(dels[i:])
			return err
		}
	}
	for _, msg := range m.snapshot(p.node.HostAddr) {
		err := p.deliver(ctx, m, msg)
		var remote *ofrpc.RemoteError
		if err != nil && !errors.As(err, &remote) {
			return err
		}
	}
	return nil
}

// deliver makes one call, logs a failure and counts it.
func (p *peer) deliver(ctx context.Context, m *Master, msg message) error {
	cctx, cancel := context.WithTimeout(ctx, m.cfg.CallTimeout)
	defer cancel()
	var reply bool
	err := m.pool.Call(cctx, p.key, msg.method, msg.arg, &reply)
	p.mu.Lock()
	if err == nil {
		p.stats.Sent[msg.method]++
	} else {
		p.stats.Failed[msg.method]++
	}
	p.mu.Unlock()
	if err != nil && ctx.Err() == nil {
		p.log.WithError(err).WithField("method", msg.method).Warn("call to agent failed")
	}
	return err
}
