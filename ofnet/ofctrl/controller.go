package ofctrl

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"sync"
	"time"

	of "github.com/contiv/netplugin/ofnet/openflow13"
	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/utils/ctxutil"
)

// Defaults for the zero values of Config.
const (
	DefaultListenAddr       = "127.0.0.1:6653"
	DefaultEchoInterval     = 3 * time.Second
	DefaultDeadTimeout      = 12 * time.Second
	DefaultHandshakeTimeout = 3 * time.Second
)

// Config configures a Controller. Zero values take the defaults above.
type Config struct {
	// ListenAddr is the TCP address to listen on (host:port). Ignored when Listener is set.
	ListenAddr string
	// Listener, when set, is used instead of ListenAddr. Run closes it when it returns.
	Listener net.Listener
	// EchoInterval: an ECHO_REQUEST is sent when nothing was received from a switch for
	// this long.
	EchoInterval time.Duration
	// DeadTimeout: a switch that sends nothing for EchoInterval+DeadTimeout (so has not
	// answered an echo request for at least DeadTimeout) is disconnected.
	DeadTimeout time.Duration
	// HandshakeTimeout bounds each handshake step (HELLO, FEATURES_REPLY).
	HandshakeTimeout time.Duration
	// Logger receives the controller's logs; nil means logrus.StandardLogger().
	Logger logrus.FieldLogger
	// DeferFirstResync keeps a restarted owner from cutting forwarding. On the first
	// connection of a datapath in this process the controller does not run Resync:
	// flows and groups already on the switch (from a previous run) stay, and only the
	// recorded ones that are missing or differ are pushed (nothing is deleted). The
	// owner replays its state (ADD overwrites identical flows) and then calls
	// Switch.Resync to delete what is stale. Later reconnects of that datapath (e.g.
	// after ovs-vswitchd restarts) run the full Resync as usual.
	DeferFirstResync bool
	// KeepUnrecorded, when set, names flows on the switch that are not recorded but
	// are not stale either, such as those a learn action installs: Resync leaves
	// them. It runs with the switch's locks held: it must not call back into the
	// switch or wait for its owner.
	KeepUnrecorded func(f Flow) bool

	// OnConnect is called after a switch connected and was resynchronised to its
	// recorded state (also after every reconnect). It runs on the connection's
	// goroutine: do not block in it for long.
	OnConnect func(sw *Switch)
	// OnDisconnect is called when a switch's connection ended (and was not replaced by
	// a newer connection of the same datapath).
	OnDisconnect func(dpid uint64)
	// OnPacketIn is called for every PACKET_IN, in order, from one goroutine per
	// connection. Packet-ins are dropped while the callback lags by more than 1024.
	OnPacketIn func(sw *Switch, pi *of.PacketIn)
}

// Controller is a passive OpenFlow 1.3 controller: switches connect to it. It keeps,
// per datapath ID, a Switch holding the recorded flows and groups, which survives
// disconnects and is pushed back on every reconnect.
type Controller struct {
	cfg Config
	log logrus.FieldLogger

	mu       sync.Mutex
	switches map[uint64]*Switch
	ln       net.Listener
	running  bool
	ready    chan struct{} // closed once the listener exists
}

// New validates cfg and returns a controller. Nothing runs until Run.
func New(cfg Config) (*Controller, error) {
	if cfg.Listener == nil && cfg.ListenAddr == "" {
		cfg.ListenAddr = DefaultListenAddr
	}
	if cfg.EchoInterval == 0 {
		cfg.EchoInterval = DefaultEchoInterval
	}
	if cfg.DeadTimeout == 0 {
		cfg.DeadTimeout = DefaultDeadTimeout
	}
	if cfg.HandshakeTimeout == 0 {
		cfg.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if cfg.EchoInterval < 0 || cfg.DeadTimeout < 0 || cfg.HandshakeTimeout < 0 {
		return nil, errors.New("ofctrl: negative EchoInterval, DeadTimeout or HandshakeTimeout")
	}
	log := cfg.Logger
	if log == nil {
		log = logrus.StandardLogger()
	}
	return &Controller{cfg: cfg, log: log.WithField("component", "ofctrl"),
		switches: map[uint64]*Switch{}, ready: make(chan struct{})}, nil
}

// Addr waits until Run is listening and returns the listen address.
func (c *Controller) Addr(ctx context.Context) (net.Addr, error) {
	select {
	case <-c.ready:
		return c.ln.Addr(), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Switch returns the switch handle of a datapath ID, creating an empty, disconnected
// one if the datapath was never seen: flows installed on it are recorded and pushed when
// the switch connects.
func (c *Controller) Switch(dpid uint64) *Switch {
	c.mu.Lock()
	defer c.mu.Unlock()
	sw, ok := c.switches[dpid]
	if !ok {
		sw = newSwitch(c, dpid)
		c.switches[dpid] = sw
	}
	return sw
}

// Switches returns every known switch handle, connected or not, by datapath ID.
func (c *Controller) Switches() []*Switch {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*Switch, 0, len(c.switches))
	for _, sw := range c.switches {
		out = append(out, sw)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].dpid < out[j].dpid })
	return out
}

// Run listens and serves switch connections until ctx ends. It returns only after every
// goroutine it started (one set per connection) has finished. Run may be called once.
func (c *Controller) Run(ctx context.Context) error {
	c.mu.Lock()
	if c.running {
		c.mu.Unlock()
		return errors.New("ofctrl: Run called twice")
	}
	c.running = true
	c.mu.Unlock()

	ln := c.cfg.Listener
	if ln == nil {
		var err error
		var lc net.ListenConfig
		if ln, err = lc.Listen(ctx, "tcp", c.cfg.ListenAddr); err != nil {
			return fmt.Errorf("ofctrl: listen on %s: %w", c.cfg.ListenAddr, err)
		}
	}
	c.ln = ln
	close(c.ready)
	c.log.WithField("addr", ln.Addr().String()).Info("ofctrl: listening for switches")

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	wg.Add(1)
	go func() {
		defer wg.Done()
		<-ctx.Done()
		ln.Close()
	}()

	bo := ctxutil.NewBackoff(5*time.Millisecond, time.Second)
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("ofctrl: listener on %s closed: %w", ln.Addr(), err)
			}
			c.log.WithError(err).Warn("ofctrl: accept failed; retrying")
			if !ctxutil.Sleep(ctx, bo.NextBackOff()) {
				return nil
			}
			continue
		}
		bo.Reset()
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.serve(ctx, nc)
		}()
	}
}

// serve runs one switch connection from handshake to close.
func (c *Controller) serve(ctx context.Context, nc net.Conn) {
	log := c.log.WithField("remote", nc.RemoteAddr().String())
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	br := bufio.NewReaderSize(nc, 64<<10)
	dpid, err := c.handshake(nc, br)
	if err != nil {
		stop()
		nc.Close()
		if ctx.Err() == nil {
			log.WithError(err).Warn("ofctrl: handshake failed")
		}
		return
	}
	stop()
	log = log.WithField("dpid", dpidString(dpid))
	sw := c.Switch(dpid)
	cn := newConn(ctx, nc, dpid, &c.cfg, log)
	cn.start(br, func(pi *of.PacketIn) {
		if c.cfg.OnPacketIn != nil {
			c.cfg.OnPacketIn(sw, pi)
		}
	})
	sw.attach(cn)
	log.Info("ofctrl: switch connected")

	prune := !c.cfg.DeferFirstResync || sw.connectedBefore()
	if res, err := sw.resync(ctx, prune); err != nil {
		log.WithError(err).Warn("ofctrl: resync after connect failed")
	} else {
		log.WithField("result", res.String()).WithField("pruned", prune).Info("ofctrl: switch resynchronised")
	}
	if cn.err() == nil {
		sw.markReady(cn)
		if c.cfg.OnConnect != nil {
			c.cfg.OnConnect(sw)
		}
	}

	select {
	case <-cn.done:
	case <-ctx.Done():
		cn.close(ctx.Err())
	}
	cn.wait()
	log.WithError(cn.err()).Info("ofctrl: switch disconnected")
	if sw.detach(cn) && c.cfg.OnDisconnect != nil {
		c.cfg.OnDisconnect(dpid)
	}
}

// handshake exchanges HELLOs (OpenFlow 1.3 only) and reads the datapath ID from the
// FEATURES_REPLY. Each step is bounded by HandshakeTimeout.
func (c *Controller) handshake(nc net.Conn, br *bufio.Reader) (uint64, error) {
	step := func() error { return nc.SetDeadline(time.Now().Add(c.cfg.HandshakeTimeout)) }
	if err := step(); err != nil {
		return 0, err
	}
	hello := of.NewHello(1, of.Version)
	hello.Xid = 1
	if err := of.WriteMessage(nc, hello); err != nil {
		return 0, fmt.Errorf("send hello: %w", err)
	}
	msg, err := of.ReadMessage(br)
	if err != nil {
		return 0, fmt.Errorf("read hello: %w", err)
	}
	h, ok := msg.(*of.Hello)
	if !ok {
		return 0, fmt.Errorf("expected HELLO, got %s", of.TypeName(msg.MsgType()))
	}
	if vs := h.Versions(); vs != nil && !h.SupportsVersion(of.Version) || vs == nil && h.Version < of.Version {
		// Tell the switch why, then give up (OFPET_HELLO_FAILED / OFPHFC_INCOMPATIBLE).
		em := &of.ErrorMsg{ErrType: of.ErrTypeHelloFailed, Data: []byte("OpenFlow 1.3 required")}
		em.Xid = h.Xid
		_ = of.WriteMessage(nc, em)
		return 0, fmt.Errorf("switch does not speak OpenFlow 1.3 (hello version %d)", h.Version)
	}
	if err := step(); err != nil {
		return 0, err
	}
	fr := &of.FeaturesRequest{}
	fr.Xid = 2
	if err := of.WriteMessage(nc, fr); err != nil {
		return 0, fmt.Errorf("send features request: %w", err)
	}
	for {
		msg, err := of.ReadMessage(br)
		if err != nil {
			var pe *of.ParseError
			if errors.As(err, &pe) {
				continue
			}
			return 0, fmt.Errorf("read features reply: %w", err)
		}
		switch m := msg.(type) {
		case *of.FeaturesReply:
			if err := nc.SetDeadline(time.Time{}); err != nil {
				return 0, err
			}
			return m.DatapathID, nil
		case *of.EchoRequest:
			if err := of.WriteMessage(nc, of.NewEchoReply(m)); err != nil {
				return 0, fmt.Errorf("send echo reply: %w", err)
			}
		case *of.ErrorMsg:
			return 0, fmt.Errorf("features request: %w", m)
		}
	}
}
