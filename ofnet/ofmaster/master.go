package ofmaster

import (
	"context"
	"fmt"
	"io"
	"net"
	"sort"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/ofnet/ofrpc"
)

// Defaults of Config.
const (
	DefaultQueueLen     = 4096
	DefaultCallTimeout  = 30 * time.Second // an agent's AddRule may wait 20 s for its switch
	DefaultMaxNodes     = 4096             // registered agents (two per host)
	DefaultMaxEndpoints = 1 << 20          // endpoints in the table
)

// Config configures a Master.
type Config struct {
	// LocalIP is the address advertised to agents (OfnetAgent.AddMaster);
	// empty: the listener's IP.
	LocalIP string
	// Port is the advertised RPC port (normally ofrpc.MasterPort); 0: the
	// listener's port.
	Port uint16
	// Pool is used to call the agents; nil: the master makes its own and
	// closes it when Serve returns.
	Pool *ofrpc.Pool
	// Authorize, when set, checks every call of an agent (on mutual TLS:
	// ofrpc.AgentIdentity).
	Authorize ofrpc.Authorizer
	Logger    logrus.FieldLogger
	// QueueLen bounds the messages waiting for one agent; beyond it the
	// backlog is replaced by a full replay. 0: DefaultQueueLen.
	QueueLen int
	// CallTimeout bounds one call to an agent. 0: DefaultCallTimeout.
	CallTimeout time.Duration
	// RetryMin and RetryMax bound the sender's pauses, which double from
	// RetryMin: before a full replay to an agent that could not be
	// reached, and before a call the agent refused is made again.
	// 0: 1 s and 30 s.
	RetryMin, RetryMax time.Duration
	// Limits bound the tables and the RPC server.
	Limits Limits
}

// Limits bound what agents can make a master hold (docs/security.md,
// "RPC limits"). Zero fields take the defaults.
type Limits struct {
	// MaxNodes bounds the registered agents (each has a sender
	// goroutine); a registration beyond it fails with ErrLimit.
	// 0: DefaultMaxNodes.
	MaxNodes int
	// MaxEndpoints bounds the endpoint table; a new endpoint beyond it
	// fails with ErrLimit. 0: DefaultMaxEndpoints.
	MaxEndpoints int
	// RPC bounds the RPC server (zero fields: the ofrpc defaults).
	RPC ofrpc.Limits
}

// Master is one ofnet master. Its local API (AddNode, AddRule, ...) is safe
// for concurrent use; Serve runs once.
type Master struct {
	cfg     Config
	log     logrus.FieldLogger
	pool    *ofrpc.Pool
	ownPool bool

	mu        sync.Mutex
	self      ofrpc.OfnetNode
	runCtx    context.Context // Serve's ctx; nil before Serve
	stopped   bool            // Serve returned
	agents    map[string]*peer
	endpoints map[string]ofrpc.OfnetEndpoint
	rules     map[string]ofrpc.OfnetPolicyRule
}

// New returns a master that serves nothing until Serve.
func New(cfg Config) *Master {
	if cfg.QueueLen <= 0 {
		cfg.QueueLen = DefaultQueueLen
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	if cfg.RetryMin <= 0 {
		cfg.RetryMin = retryMin
	}
	if cfg.RetryMax <= 0 {
		cfg.RetryMax = max(retryMax, cfg.RetryMin)
	}
	if cfg.Limits.MaxNodes <= 0 {
		cfg.Limits.MaxNodes = DefaultMaxNodes
	}
	if cfg.Limits.MaxEndpoints <= 0 {
		cfg.Limits.MaxEndpoints = DefaultMaxEndpoints
	}
	log := cfg.Logger
	if log == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		log = l
	}
	m := &Master{
		cfg: cfg, log: log.WithField("component", "ofnet-master"), pool: cfg.Pool,
		self:      ofrpc.OfnetNode{HostAddr: cfg.LocalIP, HostPort: cfg.Port},
		agents:    map[string]*peer{},
		endpoints: map[string]ofrpc.OfnetEndpoint{},
		rules:     map[string]ofrpc.OfnetPolicyRule{},
	}
	if m.pool == nil {
		m.pool = ofrpc.NewPool()
		m.ownPool = true
	}
	return m
}

// Serve serves the "OfnetMaster" RPC service on ln until ctx ends, then
// stops every agent sender and returns. Serve owns ln. A LocalIP or Port
// left empty in Config is taken from ln's address.
func (m *Master) Serve(ctx context.Context, ln net.Listener) error {
	m.mu.Lock()
	if m.runCtx != nil {
		m.mu.Unlock()
		ln.Close()
		return fmt.Errorf("ofnet master: Serve called twice")
	}
	m.runCtx = ctx
	if ta, ok := ln.Addr().(*net.TCPAddr); ok {
		if m.self.HostAddr == "" {
			m.self.HostAddr = ta.IP.String()
		}
		if m.self.HostPort == 0 {
			m.self.HostPort = uint16(ta.Port)
		}
	}
	m.mu.Unlock()
	m.log.WithField("addr", ln.Addr().String()).Info("ofnet master serving")

	limits := m.cfg.Limits.RPC
	if limits.OnReject == nil {
		limits.OnReject = func(remote net.Addr, err error) {
			m.log.WithError(err).WithField("peer", remote.String()).Warn("ofnet master: RPC connection refused or closed")
		}
	}
	if limits.Authorize == nil {
		limits.Authorize = m.cfg.Authorize
	}
	err := ofrpc.ServeLimits(ctx, ln, map[string]any{ofrpc.ServiceMaster: &rpcService{m: m}}, limits)

	// No RPC method runs any more, so no agent can be added.
	m.mu.Lock()
	m.stopped = true
	peers := m.agents
	m.agents = map[string]*peer{}
	m.mu.Unlock()
	for _, p := range peers {
		p.cancel()
	}
	for _, p := range peers {
		<-p.done
	}
	if m.ownPool {
		m.pool.Close()
	}
	if err != nil {
		return fmt.Errorf("ofnet master: %w", err)
	}
	return nil
}

// State is a snapshot of the master for /debug/ofnet. The keys are those of
// the original's dump; AgentStats (never filled upstream) counts the calls
// made to each agent.
type State struct {
	MyAddr     string
	MyPort     uint16
	AgentDb    map[string]ofrpc.OfnetNode
	EndpointDb map[string]ofrpc.OfnetEndpoint
	PolicyDb   map[string]ofrpc.OfnetPolicyRule
	AgentStats map[string]AgentStats
}

// AgentStats is what the master sent one agent.
type AgentStats struct {
	Queued int // messages waiting
	// KeptDeletions counts deletions of dropped backlogs waiting for the
	// next replay.
	KeptDeletions int
	// Retrying counts calls the agent refused that wait to be made again.
	Retrying int
	// Sending: a replay or calls are being delivered. The agent has all
	// of the master's state once Queued, Retrying are 0 and Sending is
	// false.
	Sending bool
	Sent    map[string]uint64 // successful calls per method
	Failed  map[string]uint64 // failed calls per method (unreachable or refused)
	Resyncs uint64            // full replays (registration, overflow, unreachable)
}

// State returns a copy of the master's tables.
func (m *Master) State() State {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := State{
		MyAddr: m.self.HostAddr, MyPort: m.self.HostPort,
		AgentDb:    make(map[string]ofrpc.OfnetNode, len(m.agents)),
		EndpointDb: make(map[string]ofrpc.OfnetEndpoint, len(m.endpoints)),
		PolicyDb:   make(map[string]ofrpc.OfnetPolicyRule, len(m.rules)),
		AgentStats: make(map[string]AgentStats, len(m.agents)),
	}
	for k, p := range m.agents {
		s.AgentDb[k] = p.node
		s.AgentStats[k] = p.statsCopy()
	}
	for k, ep := range m.endpoints {
		s.EndpointDb[k] = ep
	}
	for k, r := range m.rules {
		s.PolicyDb[k] = r
	}
	return s
}

// originatedAt reports whether ep belongs to the host at hostAddr.
func originatedAt(ep ofrpc.OfnetEndpoint, hostAddr string) bool {
	if ip := net.ParseIP(hostAddr); ip != nil {
		return ep.OriginatorIp.Equal(ip)
	}
	return ep.OriginatorIp.String() == hostAddr
}

// fanOut queues a message for every agent not at exceptHost ("" = all).
// Callers hold m.mu, which orders the queues like the state changes.
func (m *Master) fanOut(method string, arg any, exceptHost string) {
	for _, p := range m.agents {
		if exceptHost != "" && sameHost(p.node.HostAddr, exceptHost) {
			continue
		}
		p.enqueue(m, message{method: method, arg: arg})
	}
}

func sameHost(a, b string) bool {
	if a == b {
		return true
	}
	ia, ib := net.ParseIP(a), net.ParseIP(b)
	return ia != nil && ia.Equal(ib)
}

// snapshot lists what a full replay sends an agent at host: the endpoints
// not originated there, then every rule, each sorted by id.
func (m *Master) snapshot(host string) []message {
	m.mu.Lock()
	defer m.mu.Unlock()
	var eps []ofrpc.OfnetEndpoint
	for _, ep := range m.endpoints {
		if !originatedAt(ep, host) {
			eps = append(eps, ep)
		}
	}
	sort.Slice(eps, func(i, j int) bool { return eps[i].EndpointID < eps[j].EndpointID })
	rules := make([]ofrpc.OfnetPolicyRule, 0, len(m.rules))
	for _, r := range m.rules {
		rules = append(rules, r)
	}
	sort.Slice(rules, func(i, j int) bool { return rules[i].RuleId < rules[j].RuleId })
	out := make([]message, 0, len(eps)+len(rules))
	for _, ep := range eps {
		out = append(out, message{method: ofrpc.AgentEndpointAdd, arg: ep})
	}
	for _, r := range rules {
		out = append(out, message{method: ofrpc.PolicyAddRule, arg: r})
	}
	return out
}

// current keeps the refused calls that still say what the master holds:
// an add of the endpoint or rule as stored, a deletion of one no longer
// stored (or stored again with another content or an older timestamp). A
// call the state has moved past is dropped: what changed it was queued
// to the agent after it.
func (m *Master) current(msgs []message) []message {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := msgs[:0]
	for _, msg := range msgs {
		keep := true
		switch arg := msg.arg.(type) {
		case ofrpc.OfnetEndpoint:
			held, ok := m.endpoints[arg.EndpointID]
			switch msg.method {
			case ofrpc.AgentEndpointAdd:
				keep = ok && held.Timestamp.Equal(arg.Timestamp)
			case ofrpc.AgentEndpointDel:
				keep = !ok || !held.Timestamp.After(arg.Timestamp)
			}
		case ofrpc.OfnetPolicyRule:
			held, ok := m.rules[arg.RuleId]
			switch msg.method {
			case ofrpc.PolicyAddRule:
				keep = ok && held == arg
			case ofrpc.PolicyDelRule:
				keep = !ok || held != arg
			}
		}
		if keep {
			out = append(out, msg)
		}
	}
	return out
}
