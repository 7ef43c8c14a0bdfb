package daemon

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/contiv/netplugin/netplugin/ovsdriver"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/ofnet/agent"
	"github.com/contiv/netplugin/state"
	"github.com/contiv/netplugin/test/ovstest"
	"github.com/contiv/netplugin/utils/faulttest"
)

// faultyDatapath is a real agent whose AddNetwork and AddVtepPort fail
// the first N calls (the flow install fails).
type faultyDatapath struct {
	datapath
	*faults
}

func (f faultyDatapath) AddNetwork(ctx context.Context, vlan uint16, vni uint32, gw, vrf string) error {
	if err := f.Call("AddNetwork"); err != nil {
		return err
	}
	return f.datapath.AddNetwork(ctx, vlan, vni, gw, vrf)
}

func (f faultyDatapath) AddVtepPort(ctx context.Context, port uint32, ip net.IP) error {
	if err := f.Call("AddVtepPort"); err != nil {
		return err
	}
	return f.datapath.AddVtepPort(ctx, port, ip)
}

// faultyDriver is a real OVS driver whose OVSDB transactions (EnsureVTEP,
// DeleteEndpoint) fail the first N calls.
type faultyDriver struct {
	switchDriver
	*faults
}

func (f faultyDriver) EnsureVTEP(ctx context.Context, bridge, ip string, port int) (uint32, error) {
	if err := f.Call("EnsureVTEP"); err != nil {
		return 0, err
	}
	return f.switchDriver.EnsureVTEP(ctx, bridge, ip, port)
}

func (f faultyDriver) DeleteEndpoint(ctx context.Context, bridge, portName string) error {
	if err := f.Call("DeleteEndpoint"); err != nil {
		return err
	}
	return f.switchDriver.DeleteEndpoint(ctx, bridge, portName)
}

// realVxlanBridge starts a private OVS with contivVxlanBridge (userspace
// datapath) whose controller is a real agent, and a real OVS driver.
func realVxlanBridge(t *testing.T, ctx context.Context) (*ovstest.OVS, *agent.Agent, *ovsdriver.Driver) {
	t.Helper()
	o := ovstest.Start(t)
	nsh, err := netns.GetFromName(o.NetNS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nsh.Close() })
	nl, err := netlink.NewHandleAt(nsh)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nl.Close)
	drv, err := ovsdriver.New(ctx, ovsdriver.Config{OVSDB: o.DBSock, DatapathType: "netdev", HostLabel: "host1",
		Netlink: nl, NetNSPath: "/var/run/netns/" + o.NetNS, Logger: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { drv.Close() })
	ofl := o.ListenTCP(t)
	if err := drv.EnsureBridge(ctx, ovsdriver.VxlanBridge, ofl.Addr().(*net.TCPAddr).Port); err != nil {
		t.Fatal(err)
	}
	rpcl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Bridge: ovsdriver.VxlanBridge, Datapath: "vxlan", LocalIP: net.ParseIP("198.18.0.1"),
		RPCPort: uint16(rpcl.Addr().(*net.TCPAddr).Port), RPCListener: rpcl, OFListener: ofl, Logger: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := a.Run(actx); err != nil && actx.Err() == nil {
			t.Errorf("agent: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := a.WaitConnected(wctx); err != nil {
		t.Fatalf("bridge did not connect: %v\n%s", err, o.Logs())
	}
	return o, a, drv
}

func dumpFlows(t *testing.T, o *ovstest.OVS) string {
	t.Helper()
	out, err := o.Ofctl("-O", "OpenFlow13", "--no-stats", "dump-flows", ovsdriver.VxlanBridge)
	if err != nil {
		t.Fatalf("dump-flows: %v: %s", err, out)
	}
	return out
}

func ports(t *testing.T, o *ovstest.OVS) string {
	t.Helper()
	out, err := o.Vsctl("list-ports", ovsdriver.VxlanBridge)
	if err != nil {
		t.Fatalf("list-ports: %v: %s", err, out)
	}
	return out
}

// TestReconcileFaultsOnRealOVS: flow installs and OVSDB transactions that
// fail several times converge without a restart, and the ports and flows
// are in OVS at the end.
func TestReconcileFaultsOnRealOVS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	o, a, drv := realVxlanBridge(t, ctx)
	dpFaults, drvFaults := newFaults(), newFaults()
	vx := faultyDatapath{datapath: a, faults: dpFaults}
	fdrv := faultyDriver{switchDriver: drv, faults: drvFaults}
	td := newTestDaemon(t, vx, newFakeDatapath(), fdrv, 0)
	td.cfg.OVSDatapath = "netdev"
	td.start(t)

	// A network whose flow install fails 3 times.
	dpFaults.FailNext("AddNetwork", 3)
	nw := vxlanNet("n1.t1", 100, 5000)
	td.putNetwork(nw)
	faulttest.Eventually(t, "network applied", func() bool {
		return td.nets.IsApplied(nw.ID)
	})
	flows := dumpFlows(t, o)
	if !strings.Contains(flows, "dl_vlan=100 actions=group:") {
		t.Errorf("no flood flow of vlan 100 after the network converged:\n%s", flows)
	}
	if got := dpFaults.Count("AddNetwork"); got != 4 {
		t.Errorf("AddNetwork attempts %d, want 4", got)
	}

	// A VTEP whose OVSDB transaction fails 3 times and whose flow install
	// fails twice.
	drvFaults.FailNext("EnsureVTEP", 3)
	dpFaults.FailNext("AddVtepPort", 2)
	peer := objdb.ServiceInfo{ServiceName: "netplugin.vtep", HostAddr: "198.18.0.2", Port: 4789}
	td.want.peers.Set(peer, true)
	td.vtepEvent(ctx, peer)
	faulttest.Eventually(t, "VTEP applied", func() bool {
		return td.vtep.Applied("198.18.0.2")
	})
	vteps, err := drv.VTEPs(ctx, ovsdriver.VxlanBridge)
	if err != nil {
		t.Fatal(err)
	}
	ofport, ok := vteps["198.18.0.2"]
	if !ok || ofport == 0 {
		t.Fatalf("no VTEP port to 198.18.0.2 in OVS: %v (ports %s)", vteps, ports(t, o))
	}
	if flows := dumpFlows(t, o); !strings.Contains(flows, "in_port="+itoa(ofport)) {
		t.Errorf("no flow for the VTEP port %d:\n%s", ofport, flows)
	}

	// A local endpoint deleted in the store whose OVS port deletion fails
	// twice.
	ep := state.Endpoint{Common: state.Common{ID: "n1.t1-c1"}, NetID: nw.ID, HomingHost: "host1", EndpointID: "c1",
		IPAddress: "198.18.10.5", MacAddress: "02:02:c6:12:0a:05"}
	le, err := td.addLocal(ctx, ep, nw)
	if err != nil {
		t.Fatalf("add local endpoint: %v\n%s", err, o.Logs())
	}
	td.want.eps.Apply(ctx, ep.ID, &ep)
	if !strings.Contains(ports(t, o), le.Port.PortName) {
		t.Fatalf("port %s not in OVS", le.Port.PortName)
	}
	drvFaults.FailNext("DeleteEndpoint", 2)
	td.want.eps.Apply(ctx, ep.ID, nil)
	faulttest.Eventually(t, "endpoint removed", func() bool {
		td.Daemon.mu.Lock()
		defer td.Daemon.mu.Unlock()
		local := td.eps.Has(ep.ID)
		return !local
	})
	if strings.Contains(ports(t, o), le.Port.PortName) {
		t.Errorf("port %s still in OVS after the endpoint converged", le.Port.PortName)
	}
	if flows := dumpFlows(t, o); strings.Contains(flows, "in_port="+itoa(le.Port.OFPort)+",") {
		t.Errorf("flows of the removed port %d remain:\n%s", le.Port.OFPort, flows)
	}
	for kind, want := range map[string]int{kindNetwork: 3, kindVtep: 5, kindEndpoint: 2} {
		if got := td.failed(kind); got != want {
			t.Errorf("%s failures counted %d, want %d", kind, got, want)
		}
	}
}

func itoa(n uint32) string { return strconv.FormatUint(uint64(n), 10) }
