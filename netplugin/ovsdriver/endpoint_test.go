package ovsdriver_test

import (
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/contiv/netplugin/netplugin/ovsdriver"
	"github.com/contiv/netplugin/state"
)

func mustMAC(t *testing.T, s string) net.HardwareAddr {
	t.Helper()
	m, err := net.ParseMAC(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func ensureBridge(t *testing.T, e *env, d *ovsdriver.Driver, br string) {
	t.Helper()
	port := ovsdriver.VlanControllerPort
	if br == ovsdriver.VxlanBridge {
		port = ovsdriver.VxlanControllerPort
	}
	if err := d.EnsureBridge(e.ctx, br, port); err != nil {
		t.Fatal(err)
	}
}

func TestEndpointCreateDelete(t *testing.T) {
	e := newEnv(t)
	d := e.driver(t, nil)
	ensureBridge(t, e, d, ovsdriver.VxlanBridge)
	mac := mustMAC(t, "02:02:c6:12:00:05")
	p, err := d.CreateEndpoint(e.ctx, ovsdriver.EndpointSpec{EndpointID: "198.18.0.5:default", Bridge: ovsdriver.VxlanBridge,
		Tag: 10, MAC: mac, Bandwidth: "10Mbps", Burst: 100})
	if err != nil {
		t.Fatal(err)
	}
	if p.PortName != "vvport1" || p.IntfName != "vport1" || p.EndpointID != "198.18.0.5:default" {
		t.Fatalf("port = %+v", p)
	}
	if got := e.vsctl(t, "get", "Interface", p.PortName, "ofport"); p.OFPort == 0 || got != strconv.Itoa(int(p.OFPort)) {
		t.Errorf("OFPort %d, ovs-vsctl says %s", p.OFPort, got)
	}
	checks := [][3]string{
		{"Port", "tag", "10"},
		{"Port", "vlan_mode", "access"},
		{"Port", "external_ids:endpoint-id", `"198.18.0.5:default"`},
		{"Interface", "external_ids:endpoint-id", `"198.18.0.5:default"`},
		{"Interface", "type", `""`},
		{"Interface", "ingress_policing_rate", "10485"},
		{"Interface", "ingress_policing_burst", "100"},
	}
	for _, c := range checks {
		if got := e.vsctl(t, "get", c[0], p.PortName, c[1]); got != c[2] {
			t.Errorf("%s %s = %s, want %s", c[0], c[1], got, c[2])
		}
	}
	// ovs-vswitchd's own taps (MTU 1500) appear asynchronously, so the
	// expected MTU is computed afterwards.
	wantMTU, err := ovsdriver.EndpointMTU(e.nl, true)
	if err != nil {
		t.Fatal(err)
	}
	cont, err := e.nl.LinkByName("vport1")
	if err != nil {
		t.Fatal(err)
	}
	if cont.Attrs().HardwareAddr.String() != mac.String() || cont.Attrs().MTU != wantMTU {
		t.Errorf("vport1 MAC %s MTU %d, want %s %d", cont.Attrs().HardwareAddr, cont.Attrs().MTU, mac, wantMTU)
	}
	// The OVS side gets no IPv6 link-local address (the container side
	// keeps the kernel's default).
	if out, err := e.ovs.Exec("ip", "-d", "link", "show", "vvport1"); err != nil || !strings.Contains(out, "addrgenmode none") {
		t.Errorf("vvport1 is not addrgenmode none: %v\n%s", err, out)
	}
	if out, err := e.ovs.Exec("ip", "-d", "link", "show", "vport1"); err != nil || strings.Contains(out, "addrgenmode none") {
		t.Errorf("vport1 changed from the default addrgenmode: %v\n%s", err, out)
	}
	ovsSide, err := e.nl.LinkByName("vvport1")
	if err != nil {
		t.Fatal(err)
	}
	if ovsSide.Attrs().Flags&net.FlagUp == 0 {
		t.Error("vvport1 is not up")
	}
	if ovsSide.Attrs().MTU != wantMTU {
		t.Errorf("vvport1 MTU %d, want the endpoint's %d", ovsSide.Attrs().MTU, wantMTU)
	}

	if err := d.UpdatePolicing(e.ctx, p.PortName, "1G", 5); err != nil {
		t.Fatal(err)
	}
	if got := e.vsctl(t, "get", "Interface", p.PortName, "ingress_policing_rate"); got != "1073741" {
		t.Errorf("rate after update = %s", got)
	}
	if err := d.UpdatePolicing(e.ctx, p.PortName, "", 0); err != nil {
		t.Fatal(err)
	}
	if got := e.vsctl(t, "get", "Interface", p.PortName, "ingress_policing_burst"); got != "0" {
		t.Errorf("burst after clear = %s", got)
	}
	if err := d.UpdatePolicing(e.ctx, "nosuchport", "1k", 0); !errors.Is(err, ovsdriver.ErrNotFound) {
		t.Errorf("UpdatePolicing on a missing port: %v", err)
	}
	if err := d.UpdatePolicing(e.ctx, p.PortName, "fast", 0); !errors.Is(err, ovsdriver.ErrInvalid) {
		t.Errorf("UpdatePolicing with a bad bandwidth: %v", err)
	}

	for i := 0; i < 2; i++ { // the second delete is a no-op
		if err := d.DeleteEndpoint(e.ctx, ovsdriver.VxlanBridge, p.PortName); err != nil {
			t.Fatalf("delete #%d: %v", i+1, err)
		}
	}
	if e.linkExists(t, "vport1") || e.linkExists(t, "vvport1") {
		t.Error("veth left after delete")
	}
	if ports := e.vsctl(t, "list-ports", ovsdriver.VxlanBridge); ports != "" {
		t.Errorf("ports left after delete: %q", ports)
	}
}

func TestInfraEndpoint(t *testing.T) {
	e := newEnv(t)
	d := e.driver(t, nil)
	ensureBridge(t, e, d, ovsdriver.VlanBridge)
	mac := mustMAC(t, "02:02:c6:12:00:01")
	p, err := d.CreateEndpoint(e.ctx, ovsdriver.EndpointSpec{EndpointID: "infra-ep", Bridge: ovsdriver.VlanBridge,
		Tag: 7, MAC: mac, Infra: true, InfraName: "infranet"})
	if err != nil {
		t.Fatal(err)
	}
	if p.PortName != "infranet" || p.IntfName != "" || p.OFPort == 0 {
		t.Fatalf("port = %+v", p)
	}
	if got := e.vsctl(t, "get", "Interface", "infranet", "type"); got != "internal" {
		t.Errorf("type = %s", got)
	}
	if got := e.vsctl(t, "get", "Port", "infranet", "tag"); got != "7" {
		t.Errorf("tag = %s", got)
	}
	l, err := e.nl.LinkByName("infranet")
	if err != nil || l.Attrs().HardwareAddr.String() != mac.String() {
		t.Errorf("infranet link: %v %v", l, err)
	}
	eps, err := d.ExistingEndpoints(e.ctx, ovsdriver.VlanBridge)
	if err != nil || len(eps) != 1 || eps[0] != p {
		t.Errorf("ExistingEndpoints = %+v, %v; want [%+v]", eps, err, p)
	}
	// The endpoints' MTU, kept by ovs-vswitchd, and not counted by
	// EndpointMTU (which would otherwise shrink with every infra port).
	want, err := ovsdriver.EndpointMTU(e.nl, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.vsctl(t, "get", "Interface", "infranet", "mtu_request"); got != strconv.Itoa(want) {
		t.Errorf("mtu_request = %s, want %d", got, want)
	}
	if err := e.nl.LinkSetMTU(l, want-100); err != nil {
		t.Fatal(err)
	}
	if got, err := ovsdriver.EndpointMTU(e.nl, false); err != nil || got != want {
		t.Errorf("EndpointMTU with a lower infra port = %d, %v; want %d", got, err, want)
	}
	// A second create (netplugin restarted) adopts the port: same device,
	// its address kept, its MTU set again.
	addr, _ := netlink.ParseAddr("198.18.40.1/24")
	if err := e.nl.AddrAdd(l, addr); err != nil {
		t.Fatal(err)
	}
	p2, err := d.CreateEndpoint(e.ctx, ovsdriver.EndpointSpec{EndpointID: "infra-ep", Bridge: ovsdriver.VlanBridge,
		Tag: 7, MAC: mac, Infra: true, InfraName: "infranet"})
	if err != nil || p2 != p {
		t.Fatalf("second create = %+v, %v; want %+v", p2, err, p)
	}
	l2, err := e.nl.LinkByName("infranet")
	if err != nil || l2.Attrs().Index != l.Attrs().Index || l2.Attrs().MTU != want {
		t.Fatalf("after the second create: link %+v, %v (was index %d, want MTU %d)", l2, err, l.Attrs().Index, want)
	}
	if addrs, err := e.nl.AddrList(l2, netlink.FAMILY_V4); err != nil || len(addrs) != 1 || !addrs[0].IP.Equal(addr.IP) {
		t.Errorf("addresses after the second create: %v, %v", addrs, err)
	}
	if err := d.DeleteEndpoint(e.ctx, ovsdriver.VlanBridge, "infranet"); err != nil {
		t.Fatal(err)
	}
	if ports := e.vsctl(t, "list-ports", ovsdriver.VlanBridge); ports != "" {
		t.Errorf("ports left: %q", ports)
	}
}

func TestCreateEndpointRollback(t *testing.T) {
	e := newEnv(t)
	d := e.driver(t, nil)

	// The bridge is missing: nothing is created.
	_, err := d.CreateEndpoint(e.ctx, ovsdriver.EndpointSpec{EndpointID: "ep1", Bridge: ovsdriver.VlanBridge, Tag: 5})
	if !errors.Is(err, ovsdriver.ErrNotFound) {
		t.Fatalf("create on a missing bridge: %v", err)
	}
	// An MTU the kernel refuses fails after the veth and the OVS port
	// exist: both are removed again.
	ensureBridge(t, e, d, ovsdriver.VlanBridge)
	_, err = d.CreateEndpoint(e.ctx, ovsdriver.EndpointSpec{EndpointID: "ep1", Bridge: ovsdriver.VlanBridge, Tag: 5, MTU: 1 << 20})
	if err == nil {
		t.Fatal("create with MTU 1M succeeded")
	}
	t.Logf("expected error: %v", err)
	if ports := e.vsctl(t, "list-ports", ovsdriver.VlanBridge); ports != "" {
		t.Errorf("ports left after failed create: %q", ports)
	}
	links, err := e.nl.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		if strings.Contains(l.Attrs().Name, "vport") {
			t.Errorf("link %s left after failed create", l.Attrs().Name)
		}
	}
	// Bad specs change nothing.
	bad := []ovsdriver.EndpointSpec{
		{Bridge: ovsdriver.VlanBridge},
		{EndpointID: "x", Bridge: ovsdriver.VlanBridge, Tag: 5000},
		{EndpointID: "x", Bridge: ovsdriver.VlanBridge, Bandwidth: "lots"},
		{EndpointID: "x", Bridge: ovsdriver.VlanBridge, Infra: true},
	}
	for _, s := range bad {
		if _, err := d.CreateEndpoint(e.ctx, s); !errors.Is(err, ovsdriver.ErrInvalid) {
			t.Errorf("CreateEndpoint(%+v) = %v, want ErrInvalid", s, err)
		}
	}
}

// A stale port of the name the counter gives next is replaced, not reused.
func TestCreateEndpointReplacesStalePort(t *testing.T) {
	e := newEnv(t)
	d := e.driver(t, nil)
	ensureBridge(t, e, d, ovsdriver.VlanBridge)
	// A leftover port without a veth: the counter must skip its name.
	e.vsctl(t, "add-port", ovsdriver.VlanBridge, "vvport1", "--", "set", "Interface", "vvport1", "type=internal")
	p, err := d.CreateEndpoint(e.ctx, ovsdriver.EndpointSpec{EndpointID: "ep", Bridge: ovsdriver.VlanBridge, Tag: 3})
	if err != nil {
		t.Fatal(err)
	}
	if p.PortName != "vvport2" {
		t.Errorf("port %s, want vvport2 (vvport1 is taken)", p.PortName)
	}
	// Infra ports are named by the caller: an internal port of that name
	// is adopted (its device, with the host's addresses and routes, stays);
	// a port of another type is deleted and created again.
	e.vsctl(t, "add-port", ovsdriver.VlanBridge, "infra1", "--", "set", "Interface", "infra1", "type=internal")
	e.vsctl(t, "add-port", ovsdriver.VlanBridge, "infra2")
	old1, old2 := e.vsctl(t, "get", "Port", "infra1", "_uuid"), e.vsctl(t, "get", "Port", "infra2", "_uuid")
	for _, name := range []string{"infra1", "infra2"} {
		if _, err := d.CreateEndpoint(e.ctx, ovsdriver.EndpointSpec{EndpointID: "ep-" + name, Bridge: ovsdriver.VlanBridge,
			Tag: 3, Infra: true, InfraName: name}); err != nil {
			t.Fatal(err)
		}
		if got := e.vsctl(t, "get", "Port", name, "external_ids:endpoint-id"); got != "ep-"+name {
			t.Errorf("%s endpoint-id = %s", name, got)
		}
		if got := e.vsctl(t, "get", "Interface", name, "type"); got != "internal" {
			t.Errorf("%s type = %s", name, got)
		}
	}
	if now := e.vsctl(t, "get", "Port", "infra1", "_uuid"); now != old1 {
		t.Error("internal port infra1 was re-created, not adopted")
	}
	if now := e.vsctl(t, "get", "Port", "infra2", "_uuid"); now == old2 {
		t.Error("system port infra2 was not re-created as an internal port")
	}
}

func TestPortCounterPersists(t *testing.T) {
	e := newEnv(t)
	st := newStore(t)
	// A record of an older version lists the local endpoints; the next
	// write drops the list (the record no longer grows with the host).
	legacy := state.OvsDriverOper{Common: state.Common{ID: "host1"},
		LocalEpInfo: map[string]*state.LocalEpInfo{"old": {Ovsportname: "vvport9", EpgKey: "web:default", BridgeType: "vlan"}}}
	if _, err := st.OvsDriverOper.Write(e.ctx, legacy); err != nil {
		t.Fatal(err)
	}
	d1 := e.driver(t, st)
	ensureBridge(t, e, d1, ovsdriver.VlanBridge)
	for i := 1; i <= 2; i++ {
		p, err := d1.CreateEndpoint(e.ctx, ovsdriver.EndpointSpec{EndpointID: fmt.Sprintf("ep%d", i), Bridge: ovsdriver.VlanBridge,
			Tag: 3})
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("vvport%d", i); p.PortName != want {
			t.Fatalf("port %s, want %s", p.PortName, want)
		}
	}
	d1.Close()
	// The stored counter is the end of a reservation at or past every
	// number handed out: one write for many attaches.
	oper, err := st.OvsDriverOper.Read(e.ctx, "host1")
	if err != nil {
		t.Fatal(err)
	}
	res := oper.CurrPortNum
	if res < 2 || res > 2+64 || len(oper.LocalEpInfo) != 0 {
		t.Fatalf("persisted state %+v, want a counter at or past 2 and no endpoint list", oper)
	}

	// After a restart numbers continue past the reservation (none is
	// handed out twice); a link named like the next number is skipped.
	e.addVeth(t, fmt.Sprintf("vport%d", res+1), "veth-t3", 0)
	d2 := e.driver(t, st)
	p, err := d2.CreateEndpoint(e.ctx, ovsdriver.EndpointSpec{EndpointID: "ep3", Bridge: ovsdriver.VlanBridge, Tag: 3})
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("vvport%d", res+2); p.PortName != want {
		t.Fatalf("after restart: port %s, want %s", p.PortName, want)
	}
	oper, err = st.OvsDriverOper.Read(e.ctx, "host1")
	if err != nil {
		t.Fatal(err)
	}
	if oper.CurrPortNum < res+2 || len(oper.LocalEpInfo) != 0 {
		t.Fatalf("persisted state %+v, want a counter at or past %d and no endpoint list", oper, res+2)
	}
	res = oper.CurrPortNum
	if err := d2.DeleteEndpoint(e.ctx, ovsdriver.VlanBridge, "vvport1"); err != nil {
		t.Fatal(err)
	}
	oper, err = st.OvsDriverOper.Read(e.ctx, "host1")
	if err != nil {
		t.Fatal(err)
	}
	if oper.CurrPortNum != res {
		t.Errorf("after delete: %+v, want the counter %d unchanged", oper, res)
	}
}

func TestConcurrentEndpoints(t *testing.T) {
	e := newEnv(t)
	st := newStore(t)
	d := e.driver(t, st)
	ensureBridge(t, e, d, ovsdriver.VlanBridge)
	const total, workers = 50, 8
	jobs := make(chan int)
	var mu sync.Mutex
	var ports []ovsdriver.EndpointPort
	var errs []error
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				p, err := d.CreateEndpoint(e.ctx, ovsdriver.EndpointSpec{EndpointID: fmt.Sprintf("ep%d", i),
					Bridge: ovsdriver.VlanBridge, Tag: 1 + i%4})
				mu.Lock()
				ports = append(ports, p)
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < total; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	names, ofports := map[string]bool{}, map[uint32]bool{}
	highest := 0
	for _, p := range ports {
		names[p.PortName], ofports[p.OFPort] = true, true
		n, _ := strconv.Atoi(strings.TrimPrefix(p.PortName, "vvport"))
		highest = max(highest, n)
	}
	if len(names) != total || len(ofports) != total {
		t.Fatalf("%d distinct names, %d distinct ofports, want %d", len(names), len(ofports), total)
	}
	if n := len(strings.Fields(e.vsctl(t, "list-ports", ovsdriver.VlanBridge))); n != total {
		t.Fatalf("bridge has %d ports, want %d", n, total)
	}
	existing, err := d.ExistingEndpoints(e.ctx, ovsdriver.VlanBridge)
	if err != nil || len(existing) != total {
		t.Fatalf("ExistingEndpoints: %d, %v", len(existing), err)
	}
	// The concurrent changes of the persisted state are all kept.
	oper, err := st.OvsDriverOper.Read(e.ctx, "host1")
	if err != nil {
		t.Fatal(err)
	}
	if oper.CurrPortNum < highest || len(oper.LocalEpInfo) != 0 {
		t.Fatalf("persisted counter %d and %d endpoints, want at or past %d (the highest number handed out) and none",
			oper.CurrPortNum, len(oper.LocalEpInfo), highest)
	}
}

// The container side moves into a container's namespace; after a driver
// restart the endpoint is still found and can be deleted.
func TestExistingEndpointAfterMove(t *testing.T) {
	e := newEnv(t)
	st := newStore(t)
	d1 := e.driver(t, st)
	ensureBridge(t, e, d1, ovsdriver.VxlanBridge)
	if _, err := d1.EnsureHostPort(e.ctx, "198.19.0.0/16"); err != nil {
		t.Fatal(err)
	}
	if _, err := d1.EnsureVTEP(e.ctx, ovsdriver.VxlanBridge, "198.18.0.9", 0); err != nil {
		t.Fatal(err)
	}
	p, err := d1.CreateEndpoint(e.ctx, ovsdriver.EndpointSpec{EndpointID: "ep-moved", Bridge: ovsdriver.VxlanBridge, Tag: 9})
	if err != nil {
		t.Fatal(err)
	}
	cont := newNetNS(t)
	link, err := e.nl.LinkByName(p.IntfName)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.nl.LinkSetNsFd(link, int(cont)); err != nil {
		t.Fatal(err)
	}
	if e.linkExists(t, p.IntfName) {
		t.Fatal("container side still in the OVS namespace")
	}
	d1.Close()

	d2 := e.driver(t, st)
	eps, err := d2.ExistingEndpoints(e.ctx, ovsdriver.VxlanBridge)
	if err != nil {
		t.Fatal(err)
	}
	p.MTU = 0 // known to the creator only
	if len(eps) != 1 || eps[0] != p {
		t.Fatalf("ExistingEndpoints = %+v, want [%+v] (host port and VTEP excluded)", eps, p)
	}
	if err := d2.DeleteEndpoint(e.ctx, ovsdriver.VxlanBridge, p.PortName); err != nil {
		t.Fatal(err)
	}
	if e.linkExists(t, p.PortName) {
		t.Error("OVS side veth left")
	}
	ch, err := netlink.NewHandleAt(cont)
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if _, err := ch.LinkByName(p.IntfName); err == nil {
		t.Error("container side left in the container namespace")
	}
	if ports := e.vsctl(t, "list-ports", ovsdriver.VxlanBridge); strings.Contains(ports, "vvport") {
		t.Errorf("ports left: %q", ports)
	}
}

func TestEndpointMTU(t *testing.T) {
	e := newEnv(t)
	add := func(name string, mtu int) { e.addVeth(t, name, "veth-"+name, mtu) }
	add("docker0", 1000)
	add("vport9", 1100)
	add("veth9", 1200)
	base, err := ovsdriver.EndpointMTU(e.nl, false)
	if err != nil {
		t.Fatal(err)
	}
	if base < 1300 {
		t.Fatalf("ignored links lowered the MTU to %d", base)
	}
	add("uplink0", 1400)
	for vx, want := range map[bool]int{false: min(base, 1400), true: min(base, 1400) - 50} {
		if got, err := ovsdriver.EndpointMTU(e.nl, vx); err != nil || got != want {
			t.Errorf("EndpointMTU(vxlan=%v) = %d, %v; want %d", vx, got, err, want)
		}
	}
}

// Both ends of every endpoint veth get the endpoint MTU, and creating
// endpoints does not lower it for the next ones: ovs-vswitchd lowers the
// bridge's own interface to its ports' lowest MTU, which EndpointMTU must
// not count (docs/traffic.md, "Jumbo underlay").
func TestEndpointMTUStable(t *testing.T) {
	e := newEnv(t)
	d := e.driver(t, nil)
	ensureBridge(t, e, d, ovsdriver.VxlanBridge)
	var first int
	for i := range 3 {
		p, err := d.CreateEndpoint(e.ctx, ovsdriver.EndpointSpec{EndpointID: fmt.Sprintf("ep%d", i), Bridge: ovsdriver.VxlanBridge, Tag: 10})
		if err != nil {
			t.Fatal(err)
		}
		var mtus [2]int
		for j, name := range []string{p.IntfName, p.PortName} {
			l, err := e.nl.LinkByName(name)
			if err != nil {
				t.Fatal(err)
			}
			mtus[j] = l.Attrs().MTU
		}
		if mtus[0] != mtus[1] {
			t.Errorf("endpoint %d: container side MTU %d, OVS side %d", i, mtus[0], mtus[1])
		}
		if i == 0 {
			first = mtus[0]
		} else if mtus[0] != first {
			t.Errorf("endpoint %d got MTU %d, the first %d", i, mtus[0], first)
		}
	}
	// Once ovs-vswitchd has lowered its bridge's own interface to the
	// ports' MTU (bounded wait), the next endpoint still gets the same MTU.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if l, err := e.nl.LinkByName(ovsdriver.VxlanBridge[:15]); err == nil && l.Attrs().MTU == first {
			t.Logf("%s lowered to %d", l.Attrs().Name, first)
			break
		}
	}
	if got, err := ovsdriver.EndpointMTU(e.nl, true); err != nil || got != first {
		t.Errorf("EndpointMTU after 3 endpoints = %d, %v; want %d", got, err, first)
	}
}

// A veth destroyed while netplugin is down (its container's namespace went
// away) leaves a dead OVS port: it is reported with OFPort 0 and can be
// deleted.
func TestExistingEndpointDead(t *testing.T) {
	e := newEnv(t)
	d1 := e.driver(t, nil)
	ensureBridge(t, e, d1, ovsdriver.VlanBridge)
	live, err := d1.CreateEndpoint(e.ctx, ovsdriver.EndpointSpec{EndpointID: "live", Bridge: ovsdriver.VlanBridge, Tag: 9})
	if err != nil {
		t.Fatal(err)
	}
	dead, err := d1.CreateEndpoint(e.ctx, ovsdriver.EndpointSpec{EndpointID: "dead", Bridge: ovsdriver.VlanBridge, Tag: 9})
	if err != nil {
		t.Fatal(err)
	}
	d1.Close()
	link, err := e.nl.LinkByName(dead.IntfName)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.nl.LinkDel(link); err != nil {
		t.Fatal(err)
	}

	d2 := e.driver(t, nil)
	eps, err := d2.ExistingEndpoints(e.ctx, ovsdriver.VlanBridge)
	if err != nil {
		t.Fatal(err)
	}
	dead.OFPort = 0
	live.MTU, dead.MTU = 0, 0 // known to the creator only
	if len(eps) != 2 || eps[0] != live || eps[1] != dead {
		t.Fatalf("ExistingEndpoints = %+v, want [%+v %+v]", eps, live, dead)
	}
	if err := d2.DeleteEndpoint(e.ctx, ovsdriver.VlanBridge, dead.PortName); err != nil {
		t.Fatal(err)
	}
	if ports := e.vsctl(t, "list-ports", ovsdriver.VlanBridge); ports != live.PortName {
		t.Errorf("ports = %q", ports)
	}
}

// With a namespace in the spec the container side is created there under
// the given name, with MAC, MTU and TX checksum offload off, and goes with
// the port's deletion (or a failed create's rollback).
func TestEndpointInNetNS(t *testing.T) {
	e := newEnv(t)
	d := e.driver(t, nil)
	ensureBridge(t, e, d, ovsdriver.VxlanBridge)
	nsh, nsPath := newNamedNetNS(t)
	pod, err := netlink.NewHandleAt(nsh)
	if err != nil {
		t.Fatal(err)
	}
	defer pod.Close()
	mac := mustMAC(t, "02:02:c6:12:00:07")
	p, err := d.CreateEndpoint(e.ctx, ovsdriver.EndpointSpec{EndpointID: "ep-ns", Bridge: ovsdriver.VxlanBridge, Tag: 10, MAC: mac,
		NetNS: nsPath, NetNSIfName: "eth0"})
	if err != nil {
		t.Fatal(err)
	}
	if p.PortName != "vvport1" || p.IntfName != "vport1" || p.OFPort == 0 || p.MTU == 0 {
		t.Fatalf("port = %+v", p)
	}
	if e.linkExists(t, "vport1") || e.linkExists(t, "eth0") {
		t.Error("the container side is in the driver's namespace")
	}
	cont, err := pod.LinkByName("eth0")
	if err != nil {
		t.Fatalf("container side in the pod namespace: %v", err)
	}
	if cont.Attrs().HardwareAddr.String() != mac.String() || cont.Attrs().MTU != p.MTU {
		t.Errorf("eth0 MAC %s MTU %d, want %s %d", cont.Attrs().HardwareAddr, cont.Attrs().MTU, mac, p.MTU)
	}
	if out, err := exec.Command("ip", "netns", "exec", strings.TrimPrefix(nsPath, "/var/run/netns/"),
		"ethtool", "-k", "eth0").CombinedOutput(); err == nil && !strings.Contains(string(out), "tx-checksumming: off") {
		t.Errorf("eth0 keeps TX checksum offload on the netdev datapath:\n%s", out)
	}
	// A second endpoint of the same name in that namespace fails and
	// leaves nothing behind.
	if _, err := d.CreateEndpoint(e.ctx, ovsdriver.EndpointSpec{EndpointID: "ep-ns2", Bridge: ovsdriver.VxlanBridge, Tag: 10,
		NetNS: nsPath, NetNSIfName: "eth0"}); err == nil {
		t.Error("a second eth0 in the pod namespace was created")
	}
	if ports := strings.Fields(e.vsctl(t, "list-ports", ovsdriver.VxlanBridge)); len(ports) != 1 {
		t.Errorf("ports after the failed create: %v, want only %s", ports, p.PortName)
	}
	if err := d.DeleteEndpoint(e.ctx, ovsdriver.VxlanBridge, p.PortName); err != nil {
		t.Fatal(err)
	}
	if _, err := pod.LinkByName("eth0"); err == nil {
		t.Error("eth0 left in the pod namespace after the delete")
	}
}
