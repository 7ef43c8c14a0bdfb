package bgp

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"sync"
	"time"

	api "github.com/osrg/gobgp/v3/api"
	gobgplog "github.com/osrg/gobgp/v3/pkg/log"
	"github.com/osrg/gobgp/v3/pkg/server"
	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/types/known/anypb"
)

// Events are the speaker's callbacks. They run on the speaker's own goroutine,
// one at a time, in order.
type Events struct {
	// Route is called for a route learned from the neighbor (add) or withdrawn.
	Route func(pfx netip.Prefix, add bool)
	// Session is called when the session comes up or goes down.
	Session func(up bool)
}

// Speaker is a running BGP speaker.
type Speaker struct {
	cfg    Config
	log    logrus.FieldLogger
	srv    *server.BgpServer
	cancel context.CancelFunc
	done   chan struct{}
	events chan func()
	ev     Events
	ctx    context.Context

	mu        sync.Mutex
	announced map[netip.Addr]bool
	learned   map[netip.Prefix]bool
	state     string

	guardDone chan struct{} // closed when the framing guard stopped
}

// defaultListenPort is the BGP port.
const defaultListenPort int32 = 179

// Options are the speaker's transport settings.
type Options struct {
	ListenPort   int32 // 0 means 179
	NeighborPort int32 // the neighbor's port; 0 means 179 (tests)
	Passive      bool  // only accept the neighbor's connection (tests)
}

// Start runs a speaker for cfg until ctx ends or Stop.
func Start(ctx context.Context, cfg Config, opt Options, ev Events, log logrus.FieldLogger) (*Speaker, error) {
	listenPort := opt.ListenPort
	if listenPort == 0 {
		listenPort = defaultListenPort
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &Speaker{ev: ev, ctx: ctx, cfg: cfg, log: log.WithField("component", "bgp"), cancel: cancel, done: make(chan struct{}),
		events: make(chan func(), 1024), announced: map[netip.Addr]bool{}, learned: map[netip.Prefix]bool{}, state: "starting"}
	router := cfg.RouterIP.Addr().String()
	// The neighbor reaches the guard at router:listenPort; GoBGP peers with
	// the guard over loopback (docs/dataplane.md §3.4).
	g, err := listenGuard(cfg.RouterIP.Addr(), cfg.Neighbor, int(listenPort), int(defaultListenPort), s.log)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("bgp: start (AS %d, router %s): %w", cfg.AS, router, err)
	}
	if opt.NeighborPort != 0 {
		g.peerPort = int(opt.NeighborPort)
	}
	s.srv = server.NewBgpServer(server.LoggerOption(&logAdapter{log: s.log}))
	go s.srv.Serve()
	var gobgpPort int
	for try := 0; ; try++ {
		if gobgpPort, err = freeLoopbackPort(gobgpAddr); err == nil {
			err = s.srv.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{
				Asn: cfg.AS, RouterId: router, ListenPort: int32(gobgpPort), ListenAddresses: []string{gobgpAddr}}})
		}
		if err == nil || try == 2 { // another process may take the free port first
			break
		}
	}
	if err != nil {
		cancel()
		g.close()
		s.srv.Stop()
		return nil, fmt.Errorf("bgp: start (AS %d, router %s): %w", cfg.AS, router, err)
	}
	err = s.srv.WatchEvent(ctx, &api.WatchEventRequest{
		Peer:  &api.WatchEventRequest_Peer{},
		Table: &api.WatchEventRequest_Table{Filters: []*api.WatchEventRequest_Table_Filter{{Type: api.WatchEventRequest_Table_Filter_BEST, Init: true}}},
	}, s.onEvent)
	if err == nil {
		err = s.srv.AddPeer(ctx, &api.AddPeerRequest{Peer: &api.Peer{
			Conf:   &api.PeerConf{NeighborAddress: guardAddr, PeerAsn: cfg.NeighborAS},
			Timers: &api.Timers{Config: &api.TimersConfig{ConnectRetry: 2, HoldTime: 9, KeepaliveInterval: 3}},
			Transport: &api.Transport{LocalAddress: gobgpAddr, RemotePort: uint32(g.innerPort()),
				PassiveMode: opt.Passive},
		}})
	}
	if err != nil {
		cancel()
		g.close()
		s.srv.Stop()
		return nil, fmt.Errorf("bgp: neighbor %s AS %d: %w", cfg.Neighbor, cfg.NeighborAS, err)
	}
	s.guardDone = make(chan struct{})
	go func() {
		defer close(s.guardDone)
		g.serve(ctx, net.JoinHostPort(gobgpAddr, strconv.Itoa(gobgpPort)))
	}()
	go s.dispatch(ctx)
	return s, nil
}

// freeLoopbackPort finds a TCP port free on addr.
func freeLoopbackPort(addr string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		return 0, fmt.Errorf("bgp: a port for GoBGP on %s: %w", addr, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Config is the configuration the speaker runs with.
func (s *Speaker) Config() Config { return s.cfg }

// dispatch runs the callbacks in order on one goroutine.
func (s *Speaker) dispatch(ctx context.Context) {
	defer close(s.done)
	for {
		select {
		case <-ctx.Done():
			return
		case f := <-s.events:
			f()
		}
	}
}

// onEvent runs on GoBGP's goroutine: it records the event and queues the
// callbacks.
func (s *Speaker) onEvent(r *api.WatchEventResponse) {
	if p := r.GetPeer(); p != nil && p.GetPeer() != nil && p.GetPeer().GetState() != nil {
		st := p.GetPeer().GetState()
		if st.GetNeighborAddress() != guardAddr {
			return
		}
		up := st.GetSessionState() == api.PeerState_ESTABLISHED
		s.mu.Lock()
		prev := s.state
		s.state = st.GetSessionState().String()
		var flushed []netip.Prefix
		if !up {
			for pfx := range s.learned {
				flushed = append(flushed, pfx)
			}
			s.learned = map[netip.Prefix]bool{}
		}
		s.mu.Unlock()
		if prev != s.state {
			s.log.WithField("neighbor", s.cfg.Neighbor).WithField("state", s.state).Info("bgp: session state")
		}
		s.queue(func(ev Events) {
			for _, pfx := range flushed {
				if ev.Route != nil {
					ev.Route(pfx, false)
				}
			}
			if ev.Session != nil {
				ev.Session(up)
			}
		})
		return
	}
	t := r.GetTable()
	if t == nil {
		return
	}
	for _, p := range t.GetPaths() {
		if p.GetNeighborIp() != guardAddr {
			continue // our own announcements
		}
		pfx, ok := pathPrefix(p)
		if !ok {
			continue
		}
		add := !p.GetIsWithdraw()
		s.mu.Lock()
		if add {
			s.learned[pfx] = true
		} else {
			delete(s.learned, pfx)
		}
		s.mu.Unlock()
		s.queue(func(ev Events) {
			if ev.Route != nil {
				ev.Route(pfx, add)
			}
		})
	}
}

// queue hands f to the dispatch goroutine (dropped once the speaker stopped).
func (s *Speaker) queue(f func(Events)) {
	select {
	case s.events <- func() { f(s.ev) }:
	case <-s.ctx.Done():
	}
}

func pathPrefix(p *api.Path) (netip.Prefix, bool) {
	if p.GetNlri() == nil {
		return netip.Prefix{}, false
	}
	var n api.IPAddressPrefix
	if err := p.GetNlri().UnmarshalTo(&n); err != nil {
		return netip.Prefix{}, false
	}
	a, err := netip.ParseAddr(n.GetPrefix())
	if err != nil || !a.Is4() || n.GetPrefixLen() > 32 {
		return netip.Prefix{}, false
	}
	return netip.PrefixFrom(a, int(n.GetPrefixLen())).Masked(), true
}

func (s *Speaker) path(ip netip.Addr) (*api.Path, error) {
	nlri, err := anypb.New(&api.IPAddressPrefix{Prefix: ip.String(), PrefixLen: 32})
	if err != nil {
		return nil, err
	}
	origin, err := anypb.New(&api.OriginAttribute{Origin: 0})
	if err != nil {
		return nil, err
	}
	nh, err := anypb.New(&api.NextHopAttribute{NextHop: s.cfg.RouterIP.Addr().String()})
	if err != nil {
		return nil, err
	}
	return &api.Path{Family: &api.Family{Afi: api.Family_AFI_IP, Safi: api.Family_SAFI_UNICAST},
		Nlri: nlri, Pattrs: []*anypb.Any{origin, nh}}, nil
}

// Announce advertises ip/32 with the router address as next hop. Idempotent.
func (s *Speaker) Announce(ctx context.Context, ip netip.Addr) error {
	if !ip.Is4() {
		return fmt.Errorf("bgp: announce %s: not IPv4", ip)
	}
	p, err := s.path(ip)
	if err != nil {
		return fmt.Errorf("bgp: announce %s: %w", ip, err)
	}
	if _, err := s.srv.AddPath(ctx, &api.AddPathRequest{TableType: api.TableType_GLOBAL, Path: p}); err != nil {
		return fmt.Errorf("bgp: announce %s: %w", ip, err)
	}
	s.mu.Lock()
	s.announced[ip] = true
	s.mu.Unlock()
	return nil
}

// Withdraw takes ip/32 back. Idempotent.
func (s *Speaker) Withdraw(ctx context.Context, ip netip.Addr) error {
	s.mu.Lock()
	had := s.announced[ip]
	delete(s.announced, ip)
	s.mu.Unlock()
	if !had {
		return nil
	}
	p, err := s.path(ip)
	if err != nil {
		return fmt.Errorf("bgp: withdraw %s: %w", ip, err)
	}
	if err := s.srv.DeletePath(ctx, &api.DeletePathRequest{TableType: api.TableType_GLOBAL,
		Family: p.Family, Path: p}); err != nil {
		return fmt.Errorf("bgp: withdraw %s: %w", ip, err)
	}
	return nil
}

// Stop ends the speaker: the session closes (the neighbor withdraws the routes).
func (s *Speaker) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.StopBgp(ctx, &api.StopBgpRequest{})
	s.cancel()
	s.srv.Stop()
	<-s.done
	<-s.guardDone
}

// Neighbor is the inspect view of the peer.
type Neighbor struct {
	Address     string `json:"address"`
	AS          uint32 `json:"as"`
	State       string `json:"state"`
	Uptime      int64  `json:"uptime,omitempty"`
	Received    uint64 `json:"received"`
	Advertised  uint64 `json:"advertised"`
	MessagesIn  uint64 `json:"messagesIn"`
	MessagesOut uint64 `json:"messagesOut"`
}

// Inspect is the speaker's state for /inspect/bgp.
type Inspect struct {
	RouterIP  string     `json:"routerIP"`
	AS        uint32     `json:"as"`
	Neighbors []Neighbor `json:"neighbors"`
	Announced []string   `json:"announced"`
	Learned   []string   `json:"learned"`
}

// State reads the neighbor state from GoBGP and the routes from the speaker.
func (s *Speaker) State(ctx context.Context) Inspect {
	in := Inspect{RouterIP: s.cfg.RouterIP.String(), AS: s.cfg.AS, Neighbors: []Neighbor{}, Announced: []string{}, Learned: []string{}}
	_ = s.srv.ListPeer(ctx, &api.ListPeerRequest{EnableAdvertised: true}, func(p *api.Peer) {
		// GoBGP's peer is the guard; the neighbor is the one behind it.
		n := Neighbor{Address: s.cfg.Neighbor.String(), AS: p.GetConf().GetPeerAsn(),
			State: p.GetState().GetSessionState().String()}
		if m := p.GetState().GetMessages(); m != nil {
			n.MessagesIn, n.MessagesOut = m.GetReceived().GetTotal(), m.GetSent().GetTotal()
		}
		for _, af := range p.GetAfiSafis() {
			n.Received += af.GetState().GetReceived()
			n.Advertised += af.GetState().GetAdvertised()
		}
		if t := p.GetTimers().GetState().GetUptime(); t != nil {
			n.Uptime = t.GetSeconds()
		}
		in.Neighbors = append(in.Neighbors, n)
	})
	s.mu.Lock()
	for a := range s.announced {
		in.Announced = append(in.Announced, a.String()+"/32")
	}
	for p := range s.learned {
		in.Learned = append(in.Learned, p.String())
	}
	s.mu.Unlock()
	sort.Strings(in.Announced)
	sort.Strings(in.Learned)
	return in
}

// logAdapter sends GoBGP's log to logrus. Fatal and Panic are logged as
// errors: nothing a neighbor sends may end netplugin.
type logAdapter struct{ log logrus.FieldLogger }

func (l *logAdapter) f(fields gobgplog.Fields) logrus.FieldLogger {
	return l.log.WithFields(logrus.Fields(fields))
}
func (l *logAdapter) Panic(msg string, fields gobgplog.Fields) { l.f(fields).Error("gobgp: " + msg) }
func (l *logAdapter) Fatal(msg string, fields gobgplog.Fields) { l.f(fields).Error("gobgp: " + msg) }
func (l *logAdapter) Error(msg string, fields gobgplog.Fields) { l.f(fields).Error("gobgp: " + msg) }
func (l *logAdapter) Warn(msg string, fields gobgplog.Fields)  { l.f(fields).Warn("gobgp: " + msg) }
func (l *logAdapter) Info(msg string, fields gobgplog.Fields)  { l.f(fields).Info("gobgp: " + msg) }
func (l *logAdapter) Debug(msg string, fields gobgplog.Fields) { l.f(fields).Debug("gobgp: " + msg) }
func (l *logAdapter) SetLevel(gobgplog.LogLevel)               {}
func (l *logAdapter) GetLevel() gobgplog.LogLevel              { return gobgplog.InfoLevel }
