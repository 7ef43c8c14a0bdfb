package ofmaster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/ofnet/ofrpc"
	"github.com/contiv/netplugin/utils/ctxutil"
)

// Defaults of the sender's pauses: after an agent could not be reached
// (then a full replay), and before a call the agent refused is tried again
// (1 s doubling to 30 s).
const (
	retryMin = time.Second
	retryMax = 30 * time.Second
)

// Batches of OfnetAgent.EndpointAddBatch (docs/dataplane.md §6.2): bounded
// in count and in encoded size, well under what an agent's RPC server takes
// in one request (ofrpc.DefaultMaxMessageBytes, 1 MiB).
const (
	maxBatchEndpoints = 512
	maxBatchBytes     = 256 << 10
)

// message is one call to make to an agent, or (replay) a full replay of
// the master's state as of when it is sent.
type message struct {
	method  string
	arg     any
	replay  bool
	attempt int // earlier attempts the agent refused
}

// work is what the sender does next: a replay, or calls in order.
type work struct {
	replay bool
	msgs   []message
	retry  bool // msgs are retries that fell due
}

// retryEntry is a call the agent refused, waiting to be tried again.
type retryEntry struct {
	msg message
	due time.Time
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

	mu    sync.Mutex // guards the fields below; never held during a call
	queue []message
	// dropped holds the deletions of a backlog that was dropped (overflow
	// or unreachable agent), one per endpoint or rule id, in the order they
	// were made. A replay sends only what the master holds, so it cannot
	// undo an add the agent already got; these deletions go out first.
	dropped []message
	// retries holds the calls the agent refused (its method failed, e.g.
	// its switch was down), one per endpoint or rule (objectKey), until
	// they are due again. A newer call for the same object, or a change
	// of the master's state that makes the call stale, supersedes one.
	retries map[string]retryEntry
	// noBatch: the agent has no OfnetAgent.EndpointAddBatch (an older
	// agent): endpoints go one call each until it registers again.
	noBatch bool
	sending bool // the sender is delivering a replay or calls
	stats   AgentStats
}

func newPeer(n ofrpc.OfnetNode, log logrus.FieldLogger) *peer {
	return &peer{
		node: n, key: n.Addr(), log: log.WithField("agent", n.Addr()),
		done: make(chan struct{}), wake: make(chan struct{}, 1), kick: make(chan struct{}, 1),
		retries: map[string]retryEntry{},
		stats:   AgentStats{Sent: map[string]uint64{}, Failed: map[string]uint64{}},
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
// ends at once, refused calls are due at once, and the agent is asked for
// batches again (it may have been upgraded).
func (p *peer) registered() {
	p.mu.Lock()
	p.noBatch = false
	now := time.Now()
	for k, e := range p.retries {
		e.due = now
		p.retries[k] = e
	}
	p.mu.Unlock()
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

// objectKey names the endpoint or rule a call adds or deletes ("" for
// other calls): a later call with the same key supersedes a refused one.
func objectKey(msg message) string {
	switch msg.method {
	case ofrpc.AgentEndpointAdd, ofrpc.AgentEndpointDel:
		if ep, ok := msg.arg.(ofrpc.OfnetEndpoint); ok {
			return "ep/" + ep.EndpointID
		}
	case ofrpc.PolicyAddRule, ofrpc.PolicyDelRule:
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
// It ends the current delivery (sending) in the same step, so the
// agent never looks idle in between.
func (p *peer) resetToReplay() {
	p.mu.Lock()
	p.keepDeletions(p.queue)
	p.queue = []message{{replay: true}}
	p.stats.Resyncs++
	p.sending = false
	p.mu.Unlock()
}

// finished ends the current delivery.
func (p *peer) finished() {
	p.mu.Lock()
	p.sending = false
	p.mu.Unlock()
}

// next waits for what to send: the refused calls that are due, else the
// oldest queued message with, when it is an endpoint add, the adds that
// directly follow it (up to a batch).
func (p *peer) next(ctx context.Context) (work, bool) {
	for {
		now := time.Now()
		p.mu.Lock()
		if due := p.takeDueLocked(now); len(due) > 0 {
			p.sending = true
			p.mu.Unlock()
			return work{msgs: due, retry: true}, true
		}
		if len(p.queue) > 0 {
			w := p.takeRunLocked()
			p.sending = true
			p.mu.Unlock()
			return w, true
		}
		wakeAt := p.nextDueLocked()
		p.mu.Unlock()
		var timer *time.Timer
		var due <-chan time.Time
		if !wakeAt.IsZero() {
			timer = time.NewTimer(time.Until(wakeAt))
			due = timer.C
		}
		select {
		case <-p.wake:
		case <-due:
		case <-ctx.Done():
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return work{}, false
		}
	}
}

// takeRunLocked pops the queue's head and, if it is an endpoint add, the
// adds right behind it, up to maxBatchEndpoints.
func (p *peer) takeRunLocked() work {
	head := p.queue[0]
	n := 1
	if head.replay {
		p.popLocked(1)
		return work{replay: true}
	}
	if head.method == ofrpc.AgentEndpointAdd {
		for n < len(p.queue) && n < maxBatchEndpoints && p.queue[n].method == ofrpc.AgentEndpointAdd && !p.queue[n].replay {
			n++
		}
	}
	msgs := append([]message(nil), p.queue[:n]...)
	p.popLocked(n)
	return work{msgs: msgs}
}

func (p *peer) popLocked(n int) {
	clear(p.queue[:n])
	p.queue = p.queue[n:]
	if len(p.queue) == 0 {
		p.queue = nil
	}
}

// takeDueLocked removes and returns the refused calls due at now, oldest
// due first.
func (p *peer) takeDueLocked(now time.Time) []message {
	var due []retryEntry
	var keys []string
	for k, e := range p.retries {
		if !e.due.After(now) {
			due = append(due, e)
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		delete(p.retries, k)
	}
	sort.Slice(due, func(i, j int) bool {
		if !due[i].due.Equal(due[j].due) {
			return due[i].due.Before(due[j].due)
		}
		return objectKey(due[i].msg) < objectKey(due[j].msg)
	})
	out := make([]message, len(due))
	for i, e := range due {
		out[i] = e.msg
	}
	return out
}

// nextDueLocked returns when the next refused call is due (zero: none).
func (p *peer) nextDueLocked() time.Time {
	var next time.Time
	for _, e := range p.retries {
		if next.IsZero() || e.due.Before(next) {
			next = e.due
		}
	}
	return next
}

// supersede drops the refused call waiting for msg's object: msg is newer.
func (p *peer) supersede(msg message) {
	k := objectKey(msg)
	if k == "" {
		return
	}
	p.mu.Lock()
	delete(p.retries, k)
	p.mu.Unlock()
}

// refused handles a call the agent's method failed: it is tried again
// after a pause that doubles with each attempt (retryMin to retryMax),
// unless it cannot help: a GARP burst (only useful now), a method the
// agent does not have, or a deletion the agent says it has nothing for
// (an older agent reports an unknown rule or endpoint as an error).
func (p *peer) refused(m *Master, msg message, text string) {
	k := objectKey(msg)
	if k == "" || strings.HasPrefix(text, "rpc: can't find ") {
		return
	}
	if msg.method == ofrpc.AgentEndpointDel || msg.method == ofrpc.PolicyDelRule {
		lt := strings.ToLower(text)
		if strings.Contains(lt, "not found") || strings.Contains(lt, "does not exist") {
			return
		}
	}
	pause := m.cfg.RetryMin << min(msg.attempt, 16)
	if pause > m.cfg.RetryMax || pause <= 0 {
		pause = m.cfg.RetryMax
	}
	msg.attempt++
	p.mu.Lock()
	p.retries[k] = retryEntry{msg: msg, due: time.Now().Add(pause)}
	p.mu.Unlock()
	p.log.WithFields(logrus.Fields{"method": msg.method, "object": k, "attempt": msg.attempt, "retry": pause}).
		Warn("agent refused a call: it is tried again")
	select { // the sender may be waiting with no timer
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *peer) statsCopy() AgentStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := AgentStats{Queued: len(p.queue), KeptDeletions: len(p.dropped), Retrying: len(p.retries),
		Sending: p.sending, Resyncs: p.stats.Resyncs,
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
// a full replay. Calls the agent refuses are tried again (refused).
func (p *peer) run(ctx context.Context, m *Master) {
	defer close(p.done)
	bo := ctxutil.NewBackoff(m.cfg.RetryMin, m.cfg.RetryMax)
	for {
		w, ok := p.next(ctx)
		if !ok {
			return
		}
		var unsent []message
		var err error
		switch {
		case w.replay:
			unsent, err = p.replay(ctx, m)
		case w.retry:
			unsent, err = p.send(ctx, m, m.current(w.msgs))
		default:
			unsent, err = p.send(ctx, m, w.msgs)
		}
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			p.finished()
			bo.Reset()
			continue
		}
		pause := bo.NextBackOff()
		p.log.WithError(err).WithField("retry", pause).Warn("agent unreachable: backlog dropped, full replay after the pause")
		p.restoreDropped(unsent) // deletions not sent are kept
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
// current state; it stops at the first transport error and returns the
// deletions not sent.
func (p *peer) replay(ctx context.Context, m *Master) ([]message, error) {
	if unsent, err := p.send(ctx, m, p.takeDropped()); err != nil {
		return unsent, err
	}
	_, err := p.send(ctx, m, m.snapshot(p.node.HostAddr))
	return nil, err
}

// send delivers msgs in order, runs of two or more endpoint adds as
// batches when the agent takes them. Calls the agent refuses are queued
// for a retry (refused). At a transport error it stops and returns the
// messages not delivered with the error.
func (p *peer) send(ctx context.Context, m *Master, msgs []message) ([]message, error) {
	for i := 0; i < len(msgs); {
		j := i
		for j < len(msgs) && msgs[j].method == ofrpc.AgentEndpointAdd && !msgs[j].replay {
			j++
		}
		if j-i >= 2 && p.batching() {
			n, err := p.sendAdds(ctx, m, msgs[i:j])
			if err != nil {
				return msgs[i+n:], err
			}
			i = j
			continue
		}
		if err := p.sendOne(ctx, m, msgs[i]); err != nil {
			return msgs[i:], err
		}
		i++
	}
	return nil, nil
}

func (p *peer) batching() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.noBatch
}

// sendOne makes one call; only a transport error is returned.
func (p *peer) sendOne(ctx context.Context, m *Master, msg message) error {
	if msg.replay {
		return nil
	}
	p.supersede(msg)
	var reply bool
	err := p.deliver(ctx, m, msg.method, msg.arg, &reply)
	var remote *ofrpc.RemoteError
	if errors.As(err, &remote) {
		p.refused(m, msg, remote.Msg)
		return nil
	}
	return err
}

// endpointBatch is ofrpc.OfnetEndpointBatch with its endpoints already
// encoded (they were, to measure the batch).
type endpointBatch struct {
	Endpoints []json.RawMessage
}

// sendAdds sends endpoint adds as OfnetAgent.EndpointAddBatch calls, each
// within maxBatchEndpoints and maxBatchBytes, falling back to one call per
// endpoint for an agent without that method. At a transport error it
// returns how many of adds were delivered.
func (p *peer) sendAdds(ctx context.Context, m *Master, adds []message) (int, error) {
	for start := 0; start < len(adds); {
		if !p.batching() {
			for i := start; i < len(adds); i++ {
				if err := p.sendOne(ctx, m, adds[i]); err != nil {
					return i, err
				}
			}
			return len(adds), nil
		}
		var raws []json.RawMessage
		size, end := 0, start
		for end < len(adds) && end-start < maxBatchEndpoints {
			b, err := json.Marshal(adds[end].arg)
			if err != nil {
				return end, fmt.Errorf("encode endpoint: %w", err)
			}
			if end > start && size+len(b)+1 > maxBatchBytes {
				break
			}
			raws = append(raws, b)
			size += len(b) + 1
			end++
		}
		if end-start == 1 { // alone over the budget: as it is
			if err := p.sendOne(ctx, m, adds[start]); err != nil {
				return start, err
			}
			start = end
			continue
		}
		batch := adds[start:end]
		for _, msg := range batch {
			p.supersede(msg)
		}
		var reply ofrpc.OfnetBatchReply
		err := p.deliver(ctx, m, ofrpc.AgentEndpointAddBatch, endpointBatch{Endpoints: raws}, &reply)
		var remote *ofrpc.RemoteError
		switch {
		case err == nil:
			if len(reply.Failed) > 0 {
				byID := make(map[string]message, len(batch))
				for _, msg := range batch {
					byID[msg.arg.(ofrpc.OfnetEndpoint).EndpointID] = msg // the last wins
				}
				for _, f := range reply.Failed {
					if msg, ok := byID[f.EndpointID]; ok {
						delete(byID, f.EndpointID)
						p.refused(m, msg, f.Error)
					}
				}
			}
		case ofrpc.IsUnknownMethod(err):
			p.log.Info("agent has no EndpointAddBatch: endpoints sent one call each")
			p.mu.Lock()
			p.noBatch = true
			p.mu.Unlock()
			continue // the same endpoints, one by one
		case errors.As(err, &remote):
			for _, msg := range batch {
				p.refused(m, msg, remote.Msg)
			}
		default:
			return start, err
		}
		start = end
	}
	return len(adds), nil
}

// deliver makes one call, logs a failure and counts it.
func (p *peer) deliver(ctx context.Context, m *Master, method string, arg, reply any) error {
	cctx, cancel := context.WithTimeout(ctx, m.cfg.CallTimeout)
	defer cancel()
	err := m.pool.Call(cctx, p.key, method, arg, reply)
	p.mu.Lock()
	if err == nil {
		p.stats.Sent[method]++
	} else {
		p.stats.Failed[method]++
	}
	p.mu.Unlock()
	if err != nil && ctx.Err() == nil {
		p.log.WithError(err).WithField("method", method).Warn("call to agent failed")
	}
	return err
}
