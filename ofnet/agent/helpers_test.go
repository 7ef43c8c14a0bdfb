package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contiv/netplugin/ofnet/ofrpc"
	"github.com/contiv/netplugin/ofnet/pipeline"
	"github.com/contiv/netplugin/test/ovstest"
	"github.com/contiv/netplugin/utils/logtest"
	"github.com/contiv/netplugin/utils/runtest"
	"github.com/sirupsen/logrus"
)

func testLogger(t testing.TB) logrus.FieldLogger { return logtest.New(t, logrus.DebugLevel) }

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// host is one simulated host: a private OVS with one netdev bridge whose controller
// is an Agent.
type host struct {
	t      testing.TB
	ovs    *ovstest.OVS
	bridge string
	agent  *Agent
	stop   func()
	ip     net.IP
}

type hostOpt func(*Config)

// startHost starts OVS, creates the bridge and runs an agent for it until the test
// ends. The agent's RPC server listens on the root namespace's loopback.
func startHost(t testing.TB, datapath string, localIP string, opts ...hostOpt) *host {
	t.Helper()
	o := ovstest.Start(t)
	h := &host{t: t, ovs: o, bridge: "contivBr", ip: net.ParseIP(localIP)}
	out, err := o.Vsctl("add-br", h.bridge, "--", "set", "bridge", h.bridge, "datapath_type=netdev",
		"protocols=OpenFlow10,OpenFlow11,OpenFlow12,OpenFlow13", "fail_mode=secure")
	if err != nil {
		t.Fatalf("create bridge: %v: %s", err, out)
	}
	h.runAgent(t, datapath, opts...)
	return h
}

// runAgent starts a (new) agent for the host's bridge on a fresh controller listener
// and points the bridge at it; it waits until the agent is connected.
func (h *host) runAgent(t testing.TB, datapath string, opts ...hostOpt) {
	t.Helper()
	ofln := h.ovs.ListenTCP(t)
	rpcln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Bridge: h.bridge, Datapath: datapath, LocalIP: h.ip,
		RPCPort: uint16(rpcln.Addr().(*net.TCPAddr).Port), RPCListener: rpcln, OFListener: ofln,
		Logger: testLogger(t), GARPInterval: 100 * time.Millisecond, GARPRounds: 3}
	for _, o := range opts {
		o(&cfg)
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.stop = runtest.Go(t, "agent Run", a.Run)
	h.agent = a
	out, err := h.ovs.Vsctl("set-controller", h.bridge, "tcp:"+ofln.Addr().String(),
		"--", "set", "controller", h.bridge, "max_backoff=1000", "inactivity_probe=5000")
	if err != nil {
		t.Fatalf("set-controller: %v: %s", err, out)
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer wcancel()
	if err := a.WaitConnected(wctx); err != nil {
		t.Fatalf("agent did not connect: %v\n%s", err, h.ovs.Logs())
	}
}

// flows returns the bridge's flows in normalised dump syntax (no cookies).
func (h *host) flows(t testing.TB) []string {
	t.Helper()
	out, err := h.ovs.Ofctl("-O", "OpenFlow13", "--no-stats", "dump-flows", h.bridge)
	if err != nil {
		t.Fatalf("dump-flows: %v: %s", err, out)
	}
	return pipeline.NormalizeDump(out, false)
}

// groups returns the bridge's groups, sorted.
func (h *host) groups(t testing.TB) []string {
	t.Helper()
	gs, err := h.ovs.Groups(h.bridge)
	if err != nil {
		t.Fatal(err)
	}
	return gs
}

// container is a network namespace with one veth whose other end is an OVS port.
type container struct {
	ns    string
	port  uint32
	ip    net.IP
	mac   net.HardwareAddr
	ovsIf string
}

func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// macFor is the container MAC convention: 02:02 + the IPv4 bytes.
func macFor(ip net.IP) net.HardwareAddr {
	ip4 := ip.To4()
	return net.HardwareAddr{0x02, 0x02, ip4[0], ip4[1], ip4[2], ip4[3]}
}

// addContainer creates a namespace with address ip/prefix on a veth and attaches the
// veth's peer to the bridge (with access tag when tag ≠ 0), with ofport_request
// ofport when non-zero.
func (h *host) addContainer(t testing.TB, ip string, prefix int, tag uint16, ofport uint32) *container {
	t.Helper()
	c := &container{ns: "agtc-" + randHex(4), ip: net.ParseIP(ip).To4()}
	c.mac = macFor(c.ip)
	suffix := randHex(4)
	c.ovsIf = "vv" + suffix
	cif := "vc" + suffix
	run(t, "ip", "netns", "add", c.ns)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", c.ns).Run() })
	run(t, "ip", "link", "add", c.ovsIf, "type", "veth", "peer", "name", cif)
	t.Cleanup(func() { _ = exec.Command("ip", "-n", h.ovs.NetNS, "link", "del", c.ovsIf).Run() })
	run(t, "ip", "link", "set", c.ovsIf, "netns", h.ovs.NetNS)
	run(t, "ip", "link", "set", cif, "netns", c.ns)
	run(t, "ip", "-n", h.ovs.NetNS, "link", "set", c.ovsIf, "up")
	run(t, "ip", "-n", c.ns, "link", "set", "lo", "up")
	run(t, "ip", "-n", c.ns, "link", "set", cif, "address", c.mac.String())
	run(t, "ip", "-n", c.ns, "addr", "add", fmt.Sprintf("%s/%d", ip, prefix), "dev", cif)
	run(t, "ip", "-n", c.ns, "link", "set", cif, "up")
	args := []string{"add-port", h.bridge, c.ovsIf}
	if tag != 0 {
		args = append(args, fmt.Sprintf("tag=%d", tag))
	}
	if ofport != 0 {
		args = append(args, "--", "set", "interface", c.ovsIf, fmt.Sprintf("ofport_request=%d", ofport))
	}
	if out, err := h.ovs.Vsctl(args...); err != nil {
		t.Fatalf("add-port: %v: %s", err, out)
	}
	c.port = h.ofport(t, c.ovsIf)
	return c
}

// ofport reads an interface's OpenFlow port number.
func (h *host) ofport(t testing.TB, name string) uint32 {
	t.Helper()
	for i := 0; i < 100; i++ {
		out, err := h.ovs.Vsctl("get", "interface", name, "ofport")
		if err == nil {
			if n, err := strconv.Atoi(strings.TrimSpace(out)); err == nil && n > 0 {
				return uint32(n)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no ofport for %s", name)
	return 0
}

// ping sends up to tries single pings (1 s timeout each) and reports whether one
// was answered.
func (c *container) ping(ip net.IP, tries int) bool {
	for i := 0; i < tries; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := exec.CommandContext(ctx, "ip", "netns", "exec", c.ns, "ping", "-c", "1", "-W", "1", ip.String()).Run()
		cancel()
		if err == nil {
			return true
		}
	}
	return false
}

// pingFails sends up to tries single pings and reports whether one was lost.
func (c *container) pingFails(ip net.IP, tries int) bool {
	for i := 0; i < tries; i++ {
		if !c.ping(ip, 1) {
			return true
		}
	}
	return false
}

// endpointInfo describes the container as a local endpoint.
func (c *container) endpointInfo(vlan uint16, epg int) EndpointInfo {
	return EndpointInfo{PortNo: c.port, MacAddr: c.mac, IpAddr: c.ip, Vlan: vlan, EndpointGroup: epg}
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// fakeMaster is an OfnetMaster that records registrations and relays EndpointAdd /
// EndpointDel to every other registered agent, as the real master does.
type fakeMaster struct {
	pool   *ofrpc.Pool
	addr   ofrpc.OfnetNode
	mu     sync.Mutex
	agents map[string]ofrpc.OfnetNode
	eps    map[string]ofrpc.OfnetEndpoint
}

// FakeMasterService is the RPC receiver of fakeMaster.
type FakeMasterService struct{ m *fakeMaster }

func startFakeMaster(t testing.TB) *fakeMaster {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := &fakeMaster{pool: ofrpc.NewPool(), agents: map[string]ofrpc.OfnetNode{},
		eps:  map[string]ofrpc.OfnetEndpoint{},
		addr: ofrpc.OfnetNode{HostAddr: "127.0.0.1", HostPort: uint16(ln.Addr().(*net.TCPAddr).Port)}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := ofrpc.Serve(ctx, ln, map[string]any{"OfnetMaster": &FakeMasterService{m: m}}); err != nil {
			t.Errorf("fake master: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait(); m.pool.Close() })
	return m
}

func (s *FakeMasterService) RegisterNode(n ofrpc.OfnetNode, reply *bool) error {
	s.m.mu.Lock()
	s.m.agents[n.Addr()] = n
	var send []ofrpc.OfnetEndpoint
	for _, ep := range s.m.eps {
		if ep.OriginatorIp.String() != n.HostAddr {
			send = append(send, ep)
		}
	}
	s.m.mu.Unlock()
	// Agents listen on the root namespace's loopback in these tests.
	for _, ep := range send {
		var r bool
		_ = s.m.pool.Call(context.Background(), agentAddr(n), "OfnetAgent.EndpointAdd", ep, &r)
	}
	return nil
}

func (s *FakeMasterService) UnRegisterNode(n ofrpc.OfnetNode, reply *bool) error {
	s.m.mu.Lock()
	delete(s.m.agents, n.Addr())
	s.m.mu.Unlock()
	return nil
}

// EndpointSync is taken and ignored (the fake keeps what it was told).
func (s *FakeMasterService) EndpointSync(sync ofrpc.OfnetEndpointSync, reply *bool) error {
	*reply = true
	return nil
}

func (s *FakeMasterService) EndpointAdd(ep ofrpc.OfnetEndpoint, reply *bool) error {
	return s.m.relay(ep, "OfnetAgent.EndpointAdd", true)
}

func (s *FakeMasterService) EndpointDel(ep ofrpc.OfnetEndpoint, reply *bool) error {
	return s.m.relay(ep, "OfnetAgent.EndpointDel", false)
}

func (m *fakeMaster) relay(ep ofrpc.OfnetEndpoint, method string, add bool) error {
	m.mu.Lock()
	if add {
		m.eps[ep.EndpointID] = ep
	} else {
		delete(m.eps, ep.EndpointID)
	}
	var targets []ofrpc.OfnetNode
	for _, n := range m.agents {
		if n.HostAddr != ep.OriginatorIp.String() {
			targets = append(targets, n)
		}
	}
	m.mu.Unlock()
	for _, n := range targets {
		var r bool
		if err := m.pool.Call(context.Background(), agentAddr(n), method, ep, &r); err != nil {
			return err
		}
	}
	return nil
}

// agentAddr: agents register with their VTEP IP, but in tests they listen on
// 127.0.0.1 (the port identifies them).
func agentAddr(n ofrpc.OfnetNode) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(int(n.HostPort)))
}

// waitFor polls cond (bounded) and fails with msg() when it never holds.
func waitFor(t testing.TB, what string, cond func() bool, msg func() string) {
	t.Helper()
	for i := 0; i < 200; i++ {
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s\n%s", what, msg())
}

func sorted(in []string) []string {
	out := append([]string(nil), in...)
	sort.Strings(out)
	return out
}
