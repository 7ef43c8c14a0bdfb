package ofctrl

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	of "github.com/contiv/netplugin/ofnet/openflow13"
	"github.com/sirupsen/logrus"
)

// chunkSize is how many messages a batch writes per hold of the write lock, so that
// keep-alive traffic can interleave with a long install.
const chunkSize = 512

// batchWindow is how many chunks of a batch may be written before the barrier that
// follows the oldest one is answered.
const batchWindow = 16

// packetInQueue bounds the packet-ins waiting for the OnPacketIn callback; when it is
// full, further packet-ins are dropped (and counted) rather than stalling the reader.
const packetInQueue = 1024

// conn is one live OpenFlow connection to a switch, after the handshake. It owns three
// goroutines: the reader, the keep-alive loop and the packet-in dispatcher. close
// cancels them; wait blocks until all three have returned.
type conn struct {
	nc     net.Conn
	dpid   uint64
	log    logrus.FieldLogger
	cfg    *Config
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	wmu sync.Mutex // guards bw and xid allocation for contiguous ranges
	bw  *bufio.Writer
	xid atomic.Uint32

	pmu     sync.Mutex
	pending map[uint32]*request
	batches map[*batch]struct{}

	lastRx   atomic.Int64 // unix nanos of the last message received
	echoes   chan *of.EchoRequest
	pins     chan *of.PacketIn
	dropped  atomic.Uint64
	errOnce  sync.Once
	closeErr error
	done     chan struct{} // closed when the connection is closed (by anyone)
}

// request is an outstanding barrier or multipart request, completed by the reader.
type request struct {
	done  chan struct{}
	parts []*of.MultipartReply
	err   error
}

// batch collects the OpenFlow errors for a run of messages sent with contiguous xids.
type batch struct {
	ranges []xidRange
	errs   map[int]*of.ErrorMsg // by message index in the batch
}

type xidRange struct {
	first uint32
	index int // index in the batch of the message with xid first
	n     int
}

// deadlineWriter sets a write deadline before every write, so a peer that stops
// reading cannot block a writer forever.
type deadlineWriter struct {
	nc      net.Conn
	timeout time.Duration
}

func (w deadlineWriter) Write(p []byte) (int, error) {
	if err := w.nc.SetWriteDeadline(time.Now().Add(w.timeout)); err != nil {
		return 0, err
	}
	return w.nc.Write(p)
}

func newConn(parent context.Context, nc net.Conn, dpid uint64, cfg *Config, log logrus.FieldLogger) *conn {
	ctx, cancel := context.WithCancel(parent)
	c := &conn{
		nc: nc, dpid: dpid, log: log, cfg: cfg, ctx: ctx, cancel: cancel,
		bw:      bufio.NewWriterSize(deadlineWriter{nc, cfg.EchoInterval + cfg.DeadTimeout}, 64<<10),
		pending: map[uint32]*request{},
		batches: map[*batch]struct{}{},
		echoes:  make(chan *of.EchoRequest, 16),
		pins:    make(chan *of.PacketIn, packetInQueue),
		done:    make(chan struct{}),
	}
	c.xid.Store(0x100) // handshake used small xids
	c.lastRx.Store(time.Now().UnixNano())
	return c
}

// start launches the connection's goroutines. onPacketIn may be nil.
func (c *conn) start(br *bufio.Reader, onPacketIn func(*of.PacketIn)) {
	c.wg.Add(3)
	go func() { defer c.wg.Done(); c.readLoop(br) }()
	go func() { defer c.wg.Done(); c.keepalive() }()
	go func() { defer c.wg.Done(); c.dispatchPacketIns(onPacketIn) }()
}

// close shuts the connection down with the given reason (first reason wins) and fails
// every outstanding request. It does not wait for the goroutines; see wait.
func (c *conn) close(reason error) {
	c.errOnce.Do(func() {
		c.closeErr = reason
		c.cancel()
		c.nc.Close()
		close(c.done)
		c.pmu.Lock()
		for xid, r := range c.pending {
			r.err = fmt.Errorf("switch %s: connection closed: %w", dpidString(c.dpid), reason)
			close(r.done)
			delete(c.pending, xid)
		}
		c.pmu.Unlock()
	})
}

// wait blocks until the connection's goroutines have returned.
func (c *conn) wait() { c.wg.Wait() }

// err returns why the connection was closed (nil while open).
func (c *conn) err() error {
	select {
	case <-c.done:
		return c.closeErr
	default:
		return nil
	}
}

// ErrDeadPeer is the reason a connection is closed when the switch sent nothing (not
// even an echo reply) for EchoInterval+DeadTimeout.
var ErrDeadPeer = errors.New("ofctrl: switch stopped answering echo requests")

// readGrace is how long the reader looks for data that already arrived once the dead
// peer deadline passed: if this process itself was descheduled past the deadline, the
// switch's answer may be waiting in the socket.
const readGrace = 100 * time.Millisecond

func (c *conn) readLoop(br *bufio.Reader) {
	limit := c.cfg.EchoInterval + c.cfg.DeadTimeout
	grace := min(readGrace, limit/4)
	for {
		// The first wait ends grace early, so that detection, grace included, takes at
		// most EchoInterval+DeadTimeout after the last message.
		if err := c.nc.SetReadDeadline(time.Now().Add(limit - grace)); err != nil {
			c.close(err)
			return
		}
		// Wait for the next message without consuming it, so a timeout never leaves a
		// half-read frame behind.
		if _, err := br.Peek(1); err != nil {
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() || c.ctx.Err() != nil {
				c.close(err)
				return
			}
			if err := c.nc.SetReadDeadline(time.Now().Add(grace)); err != nil {
				c.close(err)
				return
			}
			if _, err := br.Peek(1); err != nil {
				c.close(fmt.Errorf("%w (nothing received for %v)", ErrDeadPeer, limit))
				return
			}
			if err := c.nc.SetReadDeadline(time.Now().Add(limit)); err != nil {
				c.close(err)
				return
			}
		}
		msg, err := of.ReadMessage(br)
		if err != nil {
			var pe *of.ParseError
			if errors.As(err, &pe) {
				c.lastRx.Store(time.Now().UnixNano())
				c.log.WithError(err).Warn("ofctrl: undecodable message from switch")
				c.failRequest(pe.Header.Xid, fmt.Errorf("switch %s: %w", dpidString(c.dpid), err))
				continue
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && c.ctx.Err() == nil {
				err = fmt.Errorf("%w (a message stayed incomplete for %v)", ErrDeadPeer, limit)
			}
			c.close(err)
			return
		}
		c.lastRx.Store(time.Now().UnixNano())
		c.handle(msg)
	}
}

func (c *conn) handle(msg of.Message) {
	switch m := msg.(type) {
	case *of.EchoRequest:
		select {
		case c.echoes <- m:
		default: // the switch will ask again
		}
	case *of.BarrierReply:
		c.complete(m.Xid, nil, true)
	case *of.MultipartReply:
		c.complete(m.Xid, m, m.Flags&of.MultipartFlagMore == 0)
	case *of.ErrorMsg:
		c.handleError(m)
	case *of.PacketIn:
		select {
		case c.pins <- m:
		default:
			if n := c.dropped.Add(1); n&(n-1) == 0 {
				c.log.WithField("dropped", n).Warn("ofctrl: packet-in queue full, dropping")
			}
		}
	default:
		// EchoReply only refreshes lastRx; PortStatus, FlowRemoved, FeaturesReply and
		// anything else is not used by the controller.
	}
}

func (c *conn) complete(xid uint32, part *of.MultipartReply, last bool) {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	r, ok := c.pending[xid]
	if !ok {
		return
	}
	if part != nil {
		r.parts = append(r.parts, part)
	}
	if last {
		delete(c.pending, xid)
		close(r.done)
	}
}

func (c *conn) failRequest(xid uint32, err error) bool {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	r, ok := c.pending[xid]
	if !ok {
		return false
	}
	r.err = err
	delete(c.pending, xid)
	close(r.done)
	return true
}

func (c *conn) handleError(m *of.ErrorMsg) {
	if c.failRequest(m.Xid, fmt.Errorf("switch %s: %w", dpidString(c.dpid), m)) {
		return
	}
	c.pmu.Lock()
	for b := range c.batches {
		for _, r := range b.ranges {
			if off := m.Xid - r.first; off < uint32(r.n) {
				b.errs[r.index+int(off)] = m
				c.pmu.Unlock()
				return
			}
		}
	}
	c.pmu.Unlock()
	c.log.WithError(m).Warn("ofctrl: unsolicited error from switch")
}

// keepalive sends an echo request when nothing was received for EchoInterval (and
// repeats it every EchoInterval while the silence lasts), and answers the switch's echo
// requests (queued by the reader, which never writes). The check runs every quarter of
// min(EchoInterval, DeadTimeout), so a live switch always gets at least 3/4 DeadTimeout
// to answer before the reader's EchoInterval+DeadTimeout deadline.
func (c *conn) keepalive() {
	t := time.NewTicker(max(min(c.cfg.EchoInterval, c.cfg.DeadTimeout)/4, time.Millisecond))
	defer t.Stop()
	var lastEcho time.Time
	for {
		select {
		case <-c.ctx.Done():
			return
		case req := <-c.echoes:
			rep := of.NewEchoReply(req)
			if err := c.send(rep); err != nil {
				c.close(err)
				return
			}
		case now := <-t.C:
			idle := now.Sub(time.Unix(0, c.lastRx.Load()))
			if idle >= c.cfg.EchoInterval && now.Sub(lastEcho) >= c.cfg.EchoInterval {
				lastEcho = now
				req := &of.EchoRequest{}
				req.Xid = c.xid.Add(1)
				if err := c.send(req); err != nil {
					c.close(err)
					return
				}
			}
		}
	}
}

func (c *conn) dispatchPacketIns(fn func(*of.PacketIn)) {
	for {
		select {
		case <-c.ctx.Done():
			return
		case pi := <-c.pins:
			if fn != nil {
				fn(pi)
			}
		}
	}
}

// send writes messages (their xids already set) and flushes.
func (c *conn) send(msgs ...of.Message) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.writeLocked(msgs, true)
}

func (c *conn) writeLocked(msgs []of.Message, flush bool) error {
	if err := c.err(); err != nil {
		return fmt.Errorf("switch %s: connection closed: %w", dpidString(c.dpid), err)
	}
	for _, m := range msgs {
		b, err := m.MarshalBinary()
		if err != nil {
			// Nothing of m was written: the stream stays in sync.
			return &EncodeError{Switch: c.dpid, Msg: m, Err: err}
		}
		if _, err := c.bw.Write(b); err != nil {
			c.close(err)
			return fmt.Errorf("switch %s: write: %w", dpidString(c.dpid), err)
		}
	}
	if flush {
		if err := c.bw.Flush(); err != nil {
			c.close(err)
			return fmt.Errorf("switch %s: write: %w", dpidString(c.dpid), err)
		}
	}
	return nil
}

// waitRequest waits for r to complete, ctx to end or the connection to close.
func (c *conn) waitRequest(ctx context.Context, xid uint32, r *request) error {
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		c.pmu.Lock()
		delete(c.pending, xid)
		c.pmu.Unlock()
		return ctx.Err()
	case <-c.done:
		// close() fails pending requests; r.done is closed too, but report the
		// connection's reason either way.
		<-r.done
		return r.err
	}
}

func (c *conn) register(xid uint32) *request {
	r := &request{done: make(chan struct{})}
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if err := c.err(); err != nil {
		r.err = fmt.Errorf("switch %s: connection closed: %w", dpidString(c.dpid), err)
		close(r.done)
		return r
	}
	c.pending[xid] = r
	return r
}

// barrier sends a barrier request and waits for its reply.
func (c *conn) barrier(ctx context.Context) error {
	c.wmu.Lock()
	xid := c.xid.Add(1)
	r := c.register(xid)
	br := &of.BarrierRequest{}
	br.Xid = xid
	err := c.writeLocked([]of.Message{br}, true)
	c.wmu.Unlock()
	if err != nil {
		c.failRequest(xid, err)
		return err
	}
	return c.waitRequest(ctx, xid, r)
}

// runBatch writes msgs in chunks of chunkSize with contiguous xids, each chunk followed
// by a barrier request, keeping at most batchWindow chunks unconfirmed: the switch's
// backlog stays bounded (so echo replies stay timely during a long install and a dead
// switch is noticed) while the pipe stays full. It returns when the last barrier reply
// arrived, with the OpenFlow errors by message index. The error return is for I/O,
// connection loss and ctx.
func (c *conn) runBatch(ctx context.Context, msgs []of.Message) (map[int]*of.ErrorMsg, error) {
	b := &batch{errs: map[int]*of.ErrorMsg{}}
	c.pmu.Lock()
	c.batches[b] = struct{}{}
	c.pmu.Unlock()
	type inflight struct {
		xid uint32
		r   *request
	}
	var window []inflight
	defer func() {
		c.pmu.Lock()
		delete(c.batches, b)
		for _, w := range window {
			delete(c.pending, w.xid)
		}
		c.pmu.Unlock()
	}()
	for i := 0; i < len(msgs); i += chunkSize {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		chunk := msgs[i:min(i+chunkSize, len(msgs))]
		c.wmu.Lock()
		first := c.xid.Add(uint32(len(chunk))) - uint32(len(chunk)) + 1
		for j, m := range chunk {
			m.MsgHeader().Xid = first + uint32(j)
		}
		c.pmu.Lock()
		b.ranges = append(b.ranges, xidRange{first: first, index: i, n: len(chunk)})
		c.pmu.Unlock()
		bxid := c.xid.Add(1)
		r := c.register(bxid)
		br := &of.BarrierRequest{}
		br.Xid = bxid
		err := c.writeLocked(chunk, false)
		if err == nil {
			err = c.writeLocked([]of.Message{br}, true)
		}
		c.wmu.Unlock()
		if err != nil {
			c.failRequest(bxid, err)
			return nil, err
		}
		window = append(window, inflight{bxid, r})
		for len(window) > batchWindow || (i+chunkSize >= len(msgs) && len(window) > 0) {
			if err := c.waitRequest(ctx, window[0].xid, window[0].r); err != nil {
				return nil, err
			}
			window = window[1:]
		}
	}
	c.pmu.Lock()
	defer c.pmu.Unlock()
	errs := b.errs
	b.errs = map[int]*of.ErrorMsg{}
	return errs, nil
}

// multipart sends a multipart request and collects every reply part (until a part
// without the MORE flag).
func (c *conn) multipart(ctx context.Context, req *of.MultipartRequest) ([]*of.MultipartReply, error) {
	c.wmu.Lock()
	xid := c.xid.Add(1)
	r := c.register(xid)
	req.Xid = xid
	err := c.writeLocked([]of.Message{req}, true)
	c.wmu.Unlock()
	if err != nil {
		c.failRequest(xid, err)
		return nil, err
	}
	if err := c.waitRequest(ctx, xid, r); err != nil {
		return nil, err
	}
	return r.parts, nil
}

func dpidString(dpid uint64) string { return fmt.Sprintf("%016x", dpid) }

// EncodeError reports a message the codec could not encode; nothing of it was sent.
type EncodeError struct {
	Switch uint64
	Msg    of.Message
	Err    error
}

func (e *EncodeError) Error() string {
	return fmt.Sprintf("switch %s: encode %s: %v", dpidString(e.Switch), of.TypeName(e.Msg.MsgType()), e.Err)
}

func (e *EncodeError) Unwrap() error { return e.Err }

// connLost reports whether err from a batch means only that the connection went away
// (so the change is recorded and left to the reconnect's Resync), rather than ctx
// ending or a message being unencodable.
func connLost(ctx context.Context, err error) bool {
	var ee *EncodeError
	return ctx.Err() == nil && !errors.As(err, &ee)
}
