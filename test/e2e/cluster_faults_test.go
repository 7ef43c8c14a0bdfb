package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/contiv/netplugin/api/attach"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/test/stall"
	"github.com/contiv/netplugin/test/testbed"
)

// The network of TestClusterFaults.
const (
	cfNet     = "cf"
	cfSubnet  = "198.19.40.0/23"
	cfGateway = "198.19.41.254"
	cfNetID   = cfNet + ".default"
)

// Bounds of TestClusterFaults.
const (
	// cfConverge bounds each fault's convergence.
	cfConverge = 60 * time.Second
	// cfMaxGap is the longest pause of forwarding between the untouched
	// hosts the test accepts; the figures it logs are what it measured.
	cfMaxGap = 5 * time.Second
	// cfPerHost caps the endpoints each creator makes.
	cfPerHost = 40
)

// cfAddrRE finds addresses of the test's network in flows (an address
// followed by a mask is a subnet match, not an endpoint).
var cfAddrRE = regexp.MustCompile(`198\.19\.4[01]\.\d+(/\d+)?`)

// TestClusterFaults: three etcd members (each in its own namespace), three
// netmasters and three hosts. While endpoints are created on every host and
// a TCP and a UDP probe run between containers on hosts 0 and 1, four
// faults follow one another: the leading netmaster is killed, the leading
// etcd member is killed (and restarted), the leading etcd member is cut off
// the management network (and reconnected), host 2's netplugin is
// restarted. After each, the test waits for convergence (timed) and checks:
// no address has two owners, the network's counters equal its records,
// every endpoint made is in the store with its address and port, no OVS
// port or flow names an endpoint that does not exist, and every host has
// flows for every endpoint. It logs one "cluster-faults:" line per fault.
func TestClusterFaults(t *testing.T) {
	tb := testbed.New(t, testbed.Config{Hosts: 3, Netmasters: 3, Store: testbed.ExternalEtcd, EtcdMembers: 3,
		LeaderTTL: 3 * time.Second})
	st := tb.Store(t)
	netctl(t, tb, "net", "create", "--encap", "vxlan", "--subnet", cfSubnet, "--gateway", cfGateway, cfNet)
	a := attachNew(t, tb.Hosts[0], "pa", "default", cfNet, "")
	b := attachNew(t, tb.Hosts[1], "pb", "default", cfNet, "")
	if err := pingOK(a, b, 30*time.Second); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	pr := &probe{start: time.Now()}
	var probing, creating sync.WaitGroup
	probeCtx, stopProbe := context.WithCancel(ctx)
	defer stopProbe()
	probing.Go(func() { pr.run(probeCtx, a, b) })
	cr := newCreators(tb)
	cr.add(a)
	cr.add(b)
	createCtx, stopCreate := context.WithCancel(ctx)
	defer stopCreate()
	for _, h := range tb.Hosts {
		creating.Go(func() { cr.run(createCtx, t, h) })
	}
	defer func() {
		stopCreate()
		stopProbe()
		creating.Wait()
		probing.Wait()
		if t.Failed() {
			t.Logf("etcd members:\n%s", tb.EtcdLogTails(40))
		}
	}()

	// converge waits until the cluster has converged after a fault that
	// began at t0, with every invariant holding, and logs the figures.
	converge := func(name string, t0 time.Time) {
		t.Helper()
		took, waited, err := cr.converge(ctx, st, t0, cfConverge)
		if err != nil {
			t.Fatalf("%s: not converged within %v: %v", name, cfConverge, err)
		}
		tcp, udp := pr.gaps(t0, time.Now())
		line := fmt.Sprintf("cluster-faults: fault=%s converge_s=%.1f tcp_gap_s=%.1f udp_gap_s=%.1f endpoints=%d attach_failures=%d waited_for=%q",
			name, took.Seconds(), tcp.Seconds(), udp.Seconds(), cr.count(), cr.failures.Load(), waited)
		t.Log(line)
		if tcp > cfMaxGap || udp > cfMaxGap {
			t.Errorf("%s: forwarding between hosts 0 and 1 stopped for %v (TCP) / %v (UDP), more than %v", name, tcp, udp, cfMaxGap)
		}
	}

	time.Sleep(time.Second)
	converge("baseline", time.Now())

	// 1. The leading netmaster dies; it comes back as a follower.
	old := tb.Leader()
	if old == nil {
		t.Fatal("no netmaster leader")
	}
	t0 := time.Now()
	old.Kill(t)
	tb.WaitLeader(t, old, 30*time.Second)
	old.Start(t)
	converge("kill-netmaster-leader", t0)

	// 2. The leading etcd member dies; the other two go on; it restarts.
	em := etcdLeader(t, tb)
	t0 = time.Now()
	em.Kill(t)
	converge("kill-etcd-leader", t0)
	t0 = time.Now()
	em.Start(t)
	converge("restart-etcd-member", t0)

	// 3. The leading etcd member is cut off the network, then reconnected.
	em = etcdLeader(t, tb)
	t0 = time.Now()
	em.Partition(t)
	healed := false
	defer func() {
		if !healed {
			em.Heal(t)
		}
	}()
	converge("partition-etcd-leader", t0)
	t0 = time.Now()
	em.Heal(t)
	healed = true
	converge("heal-etcd-partition", t0)

	// 4. Host 2's netplugin restarts (SIGTERM, start).
	t0 = time.Now()
	tb.Hosts[2].RestartNetplugin(t)
	converge("restart-netplugin", t0)

	stopCreate()
	creating.Wait() // the creators finish the endpoint they are making
	converge("final", time.Now())
	tcp, udp := pr.gaps(pr.start, time.Now())
	t.Logf("cluster-faults: fault=all tcp_gap_s=%.1f udp_gap_s=%.1f tcp_ok=%d udp_ok=%d endpoints=%d attach_failures=%d",
		tcp.Seconds(), udp.Seconds(), pr.okCount(true), pr.okCount(false), cr.count(), cr.failures.Load())
	if tcp > cfMaxGap || udp > cfMaxGap {
		t.Errorf("forwarding between hosts 0 and 1 stopped for %v (TCP) / %v (UDP), more than %v", tcp, udp, cfMaxGap)
	}
}

func etcdLeader(t *testing.T, tb *testbed.Testbed) *testbed.EtcdMember {
	t.Helper()
	m, err := tb.EtcdLeader()
	if err != nil {
		t.Fatalf("etcd leader: %v", err)
	}
	return m
}

// probe exchanges a TCP request/response and a UDP datagram from one
// container with another's echo, again and again, and keeps when each
// succeeded.
type probe struct {
	start    time.Time // set before run
	mu       sync.Mutex
	tcp, udp []time.Time
}

func (p *probe) run(ctx context.Context, from, to *ctr) {
	for ctx.Err() == nil {
		var wg sync.WaitGroup
		wg.Go(func() {
			if from.TCPEcho(to.ip(), testbed.TrafficPort, 64, 2*time.Second) == nil {
				p.ok(&p.tcp)
			}
		})
		wg.Go(func() {
			if _, err := from.UDPEcho(to.ip(), testbed.TrafficPort, 2*time.Second); err == nil {
				p.ok(&p.udp)
			}
		})
		wg.Wait()
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (p *probe) ok(series *[]time.Time) {
	p.mu.Lock()
	*series = append(*series, time.Now())
	p.mu.Unlock()
}

func (p *probe) okCount(tcp bool) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if tcp {
		return len(p.tcp)
	}
	return len(p.udp)
}

// gaps returns the longest stretch in [from, to] without a successful TCP
// and UDP exchange. Each exchange is a process start in the container:
// the resolution is a few hundred milliseconds.
func (p *probe) gaps(from, to time.Time) (tcp, udp time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return longestGap(p.tcp, from, to), longestGap(p.udp, from, to)
}

func longestGap(oks []time.Time, from, to time.Time) time.Duration {
	last, longest := from, time.Duration(0)
	for _, at := range oks {
		if at.Before(from) {
			continue
		}
		if at.After(to) {
			break
		}
		longest = max(longest, at.Sub(last))
		last = at
	}
	return max(longest, to.Sub(last))
}

// made is an endpoint a creator made.
type made struct {
	host *testbed.Host
	ip   string
	port string
}

// creators attach new containers on every host, one after another, until
// stopped, and let converge pause them.
type creators struct {
	tb       *testbed.Testbed
	mu       sync.Mutex
	made     map[string]made      // container id -> endpoint
	lastOK   map[string]time.Time // host -> last successful attach
	done     map[string]bool      // host -> its creator has stopped
	paused   atomic.Bool
	inflight atomic.Int32
	failures atomic.Int32
}

func newCreators(tb *testbed.Testbed) *creators {
	return &creators{tb: tb, made: map[string]made{}, lastOK: map[string]time.Time{}, done: map[string]bool{}}
}

func (c *creators) add(x *ctr) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.made[x.id] = made{host: x.host, ip: x.ip(), port: x.res.PortName}
}

func (c *creators) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.made)
}

// run makes endpoints on h until ctx ends (the one being made is
// finished, bounded) or cfPerHost are made. A failed attach is undone
// with a detach and retried with the same container, as a runtime would.
func (c *creators) run(ctx context.Context, t *testing.T, h *testbed.Host) {
	cl := attach.NewClient(h.AttachSocket())
	defer func() {
		c.mu.Lock()
		c.done[h.Name] = true
		c.mu.Unlock()
	}()
	for i := 0; i < cfPerHost && ctx.Err() == nil; i++ {
		name := fmt.Sprintf("g%d-%02d", h.Index, i)
		ns := h.NewContainerNS(t, name)
		req := attach.Request{Tenant: "default", Network: cfNet, ContainerID: "ctr-" + name, Name: name, NetNS: ns.NSPath()}
		for try := 0; ; try++ {
			for c.paused.Load() {
				time.Sleep(50 * time.Millisecond)
			}
			c.inflight.Add(1)
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			res, err := cl.Attach(actx, req)
			if err != nil {
				dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
				cl.Detach(dctx, attach.DetachRequest{Tenant: req.Tenant, Network: req.Network, ContainerID: req.ContainerID, NetNS: req.NetNS})
				dcancel()
			}
			cancel()
			c.inflight.Add(-1)
			if err == nil {
				c.mu.Lock()
				c.made[req.ContainerID] = made{host: h, ip: strings.Split(res.IPAddress, "/")[0], port: res.PortName}
				c.lastOK[h.Name] = time.Now()
				c.mu.Unlock()
				break
			}
			c.failures.Add(1)
			if try == 0 {
				t.Logf("attach %s on %s failed (retried until it works): %v", name, h.Name, err)
			}
			if ctx.Err() != nil && try >= 20 {
				// Stopped and still failing: the check finds what it left.
				return
			}
			time.Sleep(500 * time.Millisecond)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
	}
}

// converge waits until every host attached an endpoint after t0 and then,
// with the creators paused, until check passes (each pause lasts at most
// 3 s, then the creators go on for a second). It returns the time from t0
// and the first line of the last thing it waited for ("" when nothing).
func (c *creators) converge(ctx context.Context, st objdb.Store, t0 time.Time, within time.Duration) (time.Duration, string, error) {
	deadline := t0.Add(within)
	var last error
	waited := ""
	for time.Now().Before(deadline) {
		if err := c.attachedSince(t0); err != nil {
			last = err
			waited, _, _ = strings.Cut(err.Error(), "\n")
			time.Sleep(200 * time.Millisecond)
			continue
		}
		c.paused.Store(true)
		for drain := time.Now().Add(5 * time.Second); c.inflight.Load() > 0 && time.Now().Before(drain); {
			time.Sleep(20 * time.Millisecond)
		}
		if c.inflight.Load() == 0 {
			for end := time.Now().Add(3 * time.Second); ; {
				if last = c.check(ctx, st); last == nil {
					c.paused.Store(false)
					return time.Since(t0), waited, nil
				}
				waited, _, _ = strings.Cut(last.Error(), "\n")
				if time.Now().After(end) {
					break
				}
				time.Sleep(300 * time.Millisecond)
			}
		} else {
			last = fmt.Errorf("%d attach(es) still in flight", c.inflight.Load())
			waited = last.Error()
		}
		c.paused.Store(false)
		time.Sleep(time.Second)
	}
	return 0, waited, last
}

// attachedSince is nil once every host whose creator still runs has
// completed an attach after t0.
func (c *creators) attachedSince(t0 time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range c.tb.Hosts {
		if !c.done[h.Name] && c.lastOK[h.Name].Before(t0) {
			return fmt.Errorf("no attach on %s since the fault", h.Name)
		}
	}
	return nil
}

// check is one look at the whole cluster: netmaster and etcd leaders,
// registered netplugins, address ownership, the endpoints made, and every
// host's ports and flows.
func (c *creators) check(ctx context.Context, st objdb.Store) error {
	tb := c.tb
	if tb.Leader() == nil {
		return errors.New("no netmaster leader")
	}
	if err := tb.EtcdHealthy(); err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	svcs, err := st.GetService(cctx, "netplugin.vtep")
	if err != nil {
		return fmt.Errorf("netplugin.vtep: %w", err)
	}
	if len(svcs) != len(tb.Hosts) {
		return fmt.Errorf("%d of %d netplugins registered", len(svcs), len(tb.Hosts))
	}
	own, err := stall.CheckNetwork(cctx, st, cfNetID, cfGateway)
	if err != nil {
		return err
	}
	var errs []error
	for _, f := range own.Failures() {
		errs = append(errs, errors.New(f))
	}
	c.mu.Lock()
	made := maps.Clone(c.made)
	c.mu.Unlock()
	recIPs := map[string]bool{}
	for id, ip := range own.IPs {
		recIPs[ip] = true
		if _, ok := made[id]; !ok {
			errs = append(errs, fmt.Errorf("endpoint record %s (%s) belongs to no container made", id, ip))
		}
	}
	homed := map[string][]string{} // host -> ports of endpoints made there
	for id, m := range made {
		if own.IPs[id] != m.ip {
			errs = append(errs, fmt.Errorf("endpoint %s on %s lost: made with %s, store has %q", id, m.host.Name, m.ip, own.IPs[id]))
		}
		homed[m.host.Name] = append(homed[m.host.Name], m.port)
	}
	for _, h := range tb.Hosts {
		out, err := h.Vsctl("list-ports", "contivVxlanBridge")
		if err != nil {
			return fmt.Errorf("%s ports: %w", h.Name, err)
		}
		var ports []string
		for _, p := range strings.Fields(out) {
			if strings.HasPrefix(p, "vport") || strings.HasPrefix(p, "vvport") {
				ports = append(ports, p)
			}
		}
		slices.Sort(ports)
		want := slices.Sorted(slices.Values(homed[h.Name]))
		if !slices.Equal(ports, want) {
			errs = append(errs, fmt.Errorf("%s endpoint ports %v, endpoints made there %v", h.Name, ports, want))
		}
		flows, err := h.DumpFlows("contivVxlanBridge")
		if err != nil {
			return err
		}
		seen := map[string]bool{}
		for _, f := range flows {
			for _, m := range cfAddrRE.FindAllStringSubmatch(f, -1) {
				if m[1] == "" {
					seen[m[0]] = true
				}
			}
		}
		for ip := range seen {
			if !recIPs[ip] && ip != cfGateway {
				errs = append(errs, fmt.Errorf("%s: stale flow for %s, which no endpoint has", h.Name, ip))
			}
		}
		for ip := range recIPs {
			if !seen[ip] {
				errs = append(errs, fmt.Errorf("%s: no flow for endpoint %s", h.Name, ip))
			}
		}
	}
	return errors.Join(errs...)
}
