package ovsdb_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contiv/netplugin/ofnet/ovsdb"
	"github.com/contiv/netplugin/test/ovstest"
)

func startOVS(t *testing.T) (*ovstest.OVS, *ovsdb.Client, context.Context) {
	t.Helper()
	o := ovstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	c, err := ovsdb.Dial(ctx, "unix:"+o.DBSock, ovsdb.WithLogf(t.Logf))
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return o, c, ctx
}

func vsctl(t *testing.T, o *ovstest.OVS, args ...string) string {
	t.Helper()
	out, err := o.Vsctl(args...)
	if err != nil {
		t.Fatalf("ovs-vsctl %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(out)
}

func TestBridgeWithController(t *testing.T) {
	o, c, ctx := startOVS(t)

	l := o.ListenTCP(t)
	target := "tcp:" + l.Addr().String()
	spec := ovsdb.BridgeSpec{
		Name:         "contivVxlanBridge",
		DatapathType: "netdev",
		FailMode:     "secure",
		Protocols:    []string{"OpenFlow13"},
		Controllers:  []string{target},
		ExternalIDs:  map[string]string{"owner": "netplugin"},
	}
	if err := c.CreateBridge(ctx, spec); err != nil {
		t.Fatal(err)
	}
	checks := map[string]string{
		"datapath_type":      "netdev",
		"fail_mode":          "secure",
		"protocols":          "[OpenFlow13]",
		"external_ids:owner": "netplugin",
	}
	for col, want := range checks {
		if got := vsctl(t, o, "get", "bridge", spec.Name, col); strings.Trim(got, `"`) != want {
			t.Errorf("bridge %s = %s, want %s", col, got, want)
		}
	}
	if got := vsctl(t, o, "get-controller", spec.Name); got != target {
		t.Errorf("controller = %q, want %q", got, target)
	}
	if got := vsctl(t, o, "list-br"); got != spec.Name {
		t.Errorf("list-br = %q", got)
	}
	// ovs-vswitchd picked the bridge up: OpenFlow 1.3 works on it.
	if err := c.WaitApplied(ctx); err != nil {
		t.Fatal(err)
	}
	if out, err := o.Ofctl("-O", "OpenFlow13", "dump-flows", spec.Name); err != nil {
		t.Fatalf("dump-flows: %v: %s", err, out)
	}

	// Idempotent: the same spec changes nothing.
	gen := c.Cache().Generation()
	uuid := vsctl(t, o, "get", "bridge", spec.Name, "_uuid")
	if err := c.CreateBridge(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if g := c.Cache().Generation(); g != gen {
		t.Errorf("second CreateBridge changed the database (generation %d → %d)", gen, g)
	}

	// Different attributes are updated in place.
	spec.FailMode = "standalone"
	spec.Protocols = []string{"OpenFlow10", "OpenFlow13"}
	spec.Controllers = []string{"tcp:127.0.0.1:6633", "tcp:127.0.0.1:6634"}
	if err := c.CreateBridge(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if got := vsctl(t, o, "get", "bridge", spec.Name, "_uuid"); got != uuid {
		t.Errorf("bridge was recreated: %s → %s", uuid, got)
	}
	if got := vsctl(t, o, "get", "bridge", spec.Name, "fail_mode"); got != "standalone" {
		t.Errorf("fail_mode = %s", got)
	}
	if got := vsctl(t, o, "get-controller", spec.Name); got != "tcp:127.0.0.1:6633\ntcp:127.0.0.1:6634" {
		t.Errorf("controllers = %q", got)
	}
	info, err := c.GetBridge(ctx, spec.Name)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(info.Controllers, spec.Controllers) || info.FailMode != "standalone" || info.DatapathType != "netdev" {
		t.Errorf("GetBridge = %+v", info)
	}

	// A bridge deleted behind the client's back is created again.
	vsctl(t, o, "del-br", spec.Name)
	if err := c.CreateBridge(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if got := vsctl(t, o, "list-br"); got != spec.Name {
		t.Errorf("list-br after re-create = %q", got)
	}

	if err := c.DeleteBridge(ctx, spec.Name); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteBridge(ctx, spec.Name); err != nil {
		t.Fatalf("second delete: %v", err)
	}
	if got := vsctl(t, o, "list-br"); got != "" {
		t.Errorf("list-br after delete = %q", got)
	}
	if names, _ := c.ListBridges(ctx); len(names) != 0 {
		t.Errorf("ListBridges = %v", names)
	}
}

func TestBridgeValidation(t *testing.T) {
	_, c, ctx := startOVS(t)
	for _, spec := range []ovsdb.BridgeSpec{
		{},
		{Name: "b", FailMode: "open"},
		{Name: "b", Protocols: []string{"OpenFlow99"}},
	} {
		if err := c.CreateBridge(ctx, spec); !errors.Is(err, ovsdb.ErrInvalid) {
			t.Errorf("CreateBridge(%+v) = %v, want ErrInvalid", spec, err)
		}
	}
	if names, _ := c.ListBridges(ctx); len(names) != 0 {
		t.Errorf("invalid specs created bridges %v", names)
	}
}

func TestPorts(t *testing.T) {
	o, c, ctx := startOVS(t)
	const br = "br0"
	if err := c.CreateBridge(ctx, ovsdb.BridgeSpec{Name: br, DatapathType: "netdev", FailMode: "secure"}); err != nil {
		t.Fatal(err)
	}
	spec := ovsdb.PortSpec{
		Name: "vvport1", Type: "internal", Tag: 10,
		ExternalIDs:          map[string]string{"endpoint-id": "ep1"},
		InterfaceExternalIDs: map[string]string{"endpoint-id": "ep1"},
		IngressPolicingRate:  1000, IngressPolicingBurst: 100,
	}
	if err := c.CreatePort(ctx, br, spec); err != nil {
		t.Fatal(err)
	}
	for _, chk := range [][3]string{
		{"port", "tag", "10"},
		{"port", "vlan_mode", "access"},
		{"port", "external_ids:endpoint-id", "ep1"},
		{"interface", "external_ids:endpoint-id", "ep1"},
		{"interface", "type", "internal"},
		{"interface", "ingress_policing_rate", "1000"},
	} {
		if got := vsctl(t, o, "get", chk[0], spec.Name, chk[1]); got != chk[2] {
			t.Errorf("%s %s = %s, want %s", chk[0], chk[1], got, chk[2])
		}
	}
	ofport, err := c.GetOFPort(ctx, spec.Name)
	if err != nil {
		t.Fatal(err)
	}
	if got := vsctl(t, o, "get", "interface", spec.Name, "ofport"); got != fmt.Sprint(ofport) {
		t.Errorf("GetOFPort = %d, ovs-vsctl says %s", ofport, got)
	}

	// Idempotent, then an update of mutable attributes.
	gen := c.Cache().Generation()
	if err := c.CreatePort(ctx, br, spec); err != nil {
		t.Fatal(err)
	}
	if g := c.Cache().Generation(); g != gen {
		t.Errorf("second CreatePort changed the database")
	}
	spec.Tag = 0
	spec.IngressPolicingRate = 0
	if err := c.CreatePort(ctx, br, spec); err != nil {
		t.Fatal(err)
	}
	if got := vsctl(t, o, "get", "port", spec.Name, "tag"); got != "[]" {
		t.Errorf("tag after update = %s", got)
	}
	if got := vsctl(t, o, "get", "port", spec.Name, "vlan_mode"); got != "trunk" {
		t.Errorf("vlan_mode after update = %s", got)
	}

	// Mismatches are errors and change nothing.
	spec.Type = "vxlan"
	if err := c.CreatePort(ctx, br, spec); !errors.Is(err, ovsdb.ErrMismatch) || !strings.Contains(err.Error(), "already exists but is not") {
		t.Errorf("type mismatch: %v", err)
	}
	if err := c.CreateBridge(ctx, ovsdb.BridgeSpec{Name: "br1", DatapathType: "netdev"}); err != nil {
		t.Fatal(err)
	}
	spec.Type = "internal"
	if err := c.CreatePort(ctx, "br1", spec); !errors.Is(err, ovsdb.ErrMismatch) {
		t.Errorf("other bridge: %v", err)
	}
	if err := c.DeletePort(ctx, "br1", spec.Name); !errors.Is(err, ovsdb.ErrMismatch) {
		t.Errorf("delete from other bridge: %v", err)
	}
	if err := c.CreatePort(ctx, "nobridge", spec); !errors.Is(err, ovsdb.ErrNotFound) {
		t.Errorf("missing bridge: %v", err)
	}

	// VTEP.
	if err := c.CreateVTEPPort(ctx, br, ovsdb.VTEPSpec{RemoteIP: "198.18.0.2"}); err != nil {
		t.Fatal(err)
	}
	name := ovsdb.VTEPPortName("198.18.0.2")
	if got := vsctl(t, o, "get", "interface", name, "options"); got != `{dst_port="4789", key=flow, remote_ip="198.18.0.2", tos=inherit}` {
		t.Errorf("vtep options = %s", got)
	}
	if n, ok := c.FindVTEPPort(ctx, "198.18.0.2"); !ok || n != name {
		t.Errorf("FindVTEPPort = %q %v", n, ok)
	}
	if err := c.CreateVTEPPort(ctx, br, ovsdb.VTEPSpec{RemoteIP: "198.18.0.2", DstPort: 8472}); err != nil {
		t.Fatal(err)
	}
	if got := vsctl(t, o, "get", "interface", name, "options:dst_port"); got != `"8472"` {
		t.Errorf("dst_port after update = %s", got)
	}
	if err := c.CreateVTEPPort(ctx, br, ovsdb.VTEPSpec{RemoteIP: "not-an-ip"}); !errors.Is(err, ovsdb.ErrInvalid) {
		t.Errorf("bad remote ip: %v", err)
	}

	ports, err := c.GetPortList(ctx, br)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"vvport1", name}; !slices.Equal(ports, want) {
		t.Errorf("GetPortList = %v, want %v", ports, want)
	}
	for _, p := range ports {
		if err := c.DeletePort(ctx, br, p); err != nil {
			t.Fatal(err)
		}
		if err := c.DeletePort(ctx, br, p); err != nil {
			t.Fatalf("second delete: %v", err)
		}
	}
	if got := vsctl(t, o, "list-ports", br); got != "" {
		t.Errorf("ports left: %q", got)
	}
	if got := vsctl(t, o, "--columns=name", "list", "interface"); got != "" {
		t.Errorf("interfaces left: %q", got)
	}
	if _, err := c.GetOFPort(ctx, "vvport1"); !errors.Is(err, ovsdb.ErrNotFound) {
		t.Errorf("GetOFPort of deleted port: %v", err)
	}
}

func TestTxnErrors(t *testing.T) {
	_, c, ctx := startOVS(t)
	if err := c.CreateBridge(ctx, ovsdb.BridgeSpec{Name: "br0", DatapathType: "netdev"}); err != nil {
		t.Fatal(err)
	}
	var root ovsdb.UUID
	c.Cache().View(func(v ovsdb.View) { root = v.Rows("Open_vSwitch")[0].UUID() })

	// A duplicate bridge name violates the index at commit time.
	_, err := c.Transact(ctx,
		ovsdb.Insert("Bridge", ovsdb.Row{"name": "br0"}, "b"),
		ovsdb.Mutate("Open_vSwitch", []ovsdb.Condition{ovsdb.Eq("_uuid", root)}, ovsdb.MutateInsert("bridges", ovsdb.Set{ovsdb.NamedUUID("b")})))
	var te *ovsdb.TxnError
	if !errors.As(err, &te) || te.Err != "constraint violation" || te.Index != 2 || te.Temporary() {
		t.Errorf("duplicate name: %#v (%v)", te, err)
	}

	// A bad enum value fails the operation itself.
	_, err = c.Transact(ctx, ovsdb.Update("Bridge", ovsdb.Row{"fail_mode": "bogus"}, ovsdb.Eq("name", "br0")))
	if !errors.As(err, &te) || te.Index != 0 || te.Op != "update" || te.Table != "Bridge" || te.Temporary() {
		t.Errorf("bad enum: %#v (%v)", te, err)
	}

	// A wait that times out is temporary.
	_, err = c.Transact(ctx, ovsdb.Wait("Bridge", []ovsdb.Condition{ovsdb.Eq("name", "br0")}, []string{"name"}, "==", nil, 0))
	if !errors.As(err, &te) || te.Err != "timed out" || !te.Temporary() || !ovsdb.IsTemporary(err) {
		t.Errorf("wait: %#v (%v)", te, err)
	}

	// Unknown columns are rejected before anything is sent.
	_, err = c.Transact(ctx, ovsdb.Update("Bridge", ovsdb.Row{"nosuch": 1}, ovsdb.Eq("name", "br0")))
	if !errors.Is(err, ovsdb.ErrSchema) {
		t.Errorf("unknown column: %v", err)
	}

	// Select, comment, mutate of a map, delete.
	res, err := c.Transact(ctx,
		ovsdb.Comment("test"),
		ovsdb.Mutate("Bridge", []ovsdb.Condition{ovsdb.Eq("name", "br0")}, ovsdb.MutateInsert("external_ids", map[string]string{"a": "1", "b": "2"})),
		ovsdb.Mutate("Bridge", []ovsdb.Condition{ovsdb.Eq("name", "br0")}, ovsdb.MutateDelete("external_ids", ovsdb.Set{"a"})),
		ovsdb.Select("Bridge", []string{"name", "external_ids", "ports"}, ovsdb.Eq("name", "br0")),
	)
	if err != nil {
		t.Fatal(err)
	}
	if res[1].Count != 1 || len(res[3].Rows) != 1 {
		t.Fatalf("results %+v", res)
	}
	row := res[3].Rows[0]
	if ids := row.StringMap("external_ids"); len(ids) != 1 || ids["b"] != "2" {
		t.Errorf("external_ids = %v", ids)
	}
	if _, ok := row["ports"].(ovsdb.Set); !ok {
		t.Errorf("ports column is %T, want Set", row["ports"])
	}
}

// cacheView renders what the cache knows as "bridge port:iface:ofport".
func cacheView(c *ovsdb.Client) []string {
	var out []string
	c.Cache().View(func(v ovsdb.View) {
		for _, br := range v.Rows("Bridge") {
			for _, pid := range br.UUIDs("ports") {
				p, _ := v.Row("Port", pid)
				tag, _ := p.Int("tag")
				for _, iid := range p.UUIDs("interfaces") {
					i, _ := v.Row("Interface", iid)
					out = append(out, fmt.Sprintf("%s %s %d %s %s", br.String("name"), p.String("name"), tag, i.String("name"), i.String("type")))
				}
			}
		}
	})
	sort.Strings(out)
	return out
}

// serverView renders the same from ovs-vsctl.
func serverView(t *testing.T, o *ovstest.OVS) []string {
	t.Helper()
	var out []string
	for _, br := range strings.Fields(vsctl(t, o, "--no-wait", "list-br")) {
		// One call per bridge: name, tag and interface type of every port.
		rows := vsctl(t, o, "--no-wait", "--format=csv", "--no-headings", "--data=bare", "--columns=name,tag", "list", "port")
		types := map[string]string{}
		for _, line := range strings.Split(vsctl(t, o, "--no-wait", "--format=csv", "--no-headings", "--data=bare", "--columns=name,type", "list", "interface"), "\n") {
			if f := strings.Split(line, ","); len(f) == 2 {
				types[f[0]] = f[1]
			}
		}
		onBridge := map[string]bool{}
		for _, p := range strings.Fields(vsctl(t, o, "--no-wait", "list-ports", br)) {
			onBridge[p] = true
		}
		for _, line := range strings.Split(rows, "\n") {
			f := strings.Split(line, ",")
			if len(f) != 2 || !onBridge[f[0]] {
				continue
			}
			tag := f[1]
			if tag == "" {
				tag = "0"
			}
			out = append(out, fmt.Sprintf("%s %s %s %s %s", br, f[0], tag, f[0], types[f[0]]))
		}
	}
	sort.Strings(out)
	return out
}

// parallel runs f(0..n-1) on 8 goroutines and fails the test on errors.
func parallel(t *testing.T, n int, f func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errc := make(chan error, n)
	sem := make(chan struct{}, 8)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			errc <- f(i)
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestManyPortsAndOVSDBRestart(t *testing.T) {
	o, c, _ := startOVS(t)
	// 200 ports make ovs-vswitchd busy; allow for a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	const br = "br0"
	const n = 200
	if err := c.CreateBridge(ctx, ovsdb.BridgeSpec{Name: br, DatapathType: "netdev", FailMode: "secure", Protocols: []string{"OpenFlow13"}}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	parallel(t, n, func(i int) error {
		return c.CreatePort(ctx, br, ovsdb.PortSpec{Name: fmt.Sprintf("p%d", i), Type: "internal", Tag: 1 + i%4094})
	})
	t.Logf("created %d ports in %v", n, time.Since(start))
	ports, err := c.GetPortList(ctx, br)
	if err != nil || len(ports) != n {
		t.Fatalf("GetPortList: %d ports, %v", len(ports), err)
	}
	// Delete every other port.
	phase := time.Now()
	parallel(t, n/2, func(i int) error { return c.DeletePort(ctx, br, fmt.Sprintf("p%d", 2*i)) })
	t.Logf("deleted %d ports in %v", n/2, time.Since(phase))
	if got, want := cacheView(c), serverView(t, o); !slices.Equal(got, want) {
		t.Fatalf("cache differs from server before restart:\ncache  %v\nserver %v", got, want)
	}
	phase = time.Now()

	// Kill ovsdb-server, start it again and change the database right
	// away with ovs-vsctl, racing the client's reconnect: whether the
	// change lands before or after the new monitor, the cache must end up
	// equal to the server.
	syncs := c.Syncs()
	o.KillOVSDB(t)
	if _, err := c.GetPortList(ctx, br); err != nil {
		t.Errorf("cache not readable while disconnected: %v", err)
	}
	o.StartOVSDB(t)
	vsctl(t, o, "--no-wait", "del-port", br, "p1", "--", "add-port", br, "extra", "--", "set", "interface", "extra", "type=internal")
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := c.WaitConnected(wctx); err != nil {
		t.Fatal(err)
	}
	for c.Syncs() == syncs {
		if wctx.Err() != nil {
			t.Fatal("client did not reconnect")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The cache converges on the server's state.
	var got, want []string
	for {
		got, want = cacheView(c), serverView(t, o)
		if slices.Equal(got, want) {
			break
		}
		if wctx.Err() != nil {
			t.Fatalf("cache differs from server after restart:\ncache  %v\nserver %v", got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(got) != n/2 {
		t.Errorf("%d ports after restart, want %d", len(got), n/2)
	}
	t.Logf("restart, reconnect and cache check took %v", time.Since(phase))
	phase = time.Now()
	// The client works after the reconnect; ports read back from the
	// cache.
	if err := c.CreatePort(ctx, br, ovsdb.PortSpec{Name: "p1", Type: "internal", Tag: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetOFPort(ctx, "p1"); err != nil {
		t.Fatal(err)
	}
	parallel(t, n/2, func(i int) error { return c.DeletePort(ctx, br, fmt.Sprintf("p%d", 2*i+1)) })
	if err := c.DeletePort(ctx, br, "extra"); err != nil {
		t.Fatal(err)
	}
	t.Logf("deleted the other %d ports in %v", n/2, time.Since(phase))
	if got := vsctl(t, o, "list-ports", br); got != "" {
		t.Errorf("ports left: %q", got)
	}
}

func TestTCPEndpoint(t *testing.T) {
	o := ovstest.Start(t)
	remote := o.AddOVSDBRemote(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := ovsdb.Dial(ctx, remote, ovsdb.WithDialer(o.DialContext))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dbs, err := c.ListDBs(ctx)
	if err != nil || !slices.Contains(dbs, "Open_vSwitch") {
		t.Fatalf("ListDBs = %v, %v", dbs, err)
	}
	if err := c.CreateBridge(ctx, ovsdb.BridgeSpec{Name: "brtcp", DatapathType: "netdev"}); err != nil {
		t.Fatal(err)
	}
	if got := vsctl(t, o, "list-br"); got != "brtcp" {
		t.Errorf("list-br = %q", got)
	}
}

func TestCloseWhileDisconnected(t *testing.T) {
	o, c, ctx := startOVS(t)
	o.KillOVSDB(t)
	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err := c.Transact(tctx, ovsdb.Comment("x"))
	if !ovsdb.IsTemporary(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("transact while down: %v", err)
	}
	done := make(chan struct{})
	go func() { c.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hangs while reconnecting")
	}
	if _, err := c.Transact(ctx, ovsdb.Comment("x")); !errors.Is(err, ovsdb.ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}

// TestReadBackAfterRestart is what a restarted netplugin does (docs/dataplane.md §1.8):
// a new client finds bridges, controllers, ports, VTEPs and ofports that an
// earlier client created, after both OVS daemons were restarted.
func TestReadBackAfterRestart(t *testing.T) {
	o, c, ctx := startOVS(t)
	spec := ovsdb.BridgeSpec{Name: "contivVlanBridge", DatapathType: "netdev", FailMode: "secure",
		Protocols: []string{"OpenFlow13"}, Controllers: []string{"tcp:127.0.0.1:6634"}}
	if err := c.CreateBridge(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if err := c.CreatePort(ctx, spec.Name, ovsdb.PortSpec{Name: "contivh0", Type: "internal", Tag: 2,
		ExternalIDs: map[string]string{"endpoint-id": "hostcontivh0"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateVTEPPort(ctx, spec.Name, ovsdb.VTEPSpec{RemoteIP: "198.18.0.9"}); err != nil {
		t.Fatal(err)
	}
	ofport, err := c.GetOFPort(ctx, "contivh0")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()

	o.RestartVswitchd(t)
	o.RestartOVSDB(t)

	c2, err := ovsdb.Dial(ctx, "unix:"+o.DBSock, ovsdb.WithAllTables())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if err := c2.CreateBridge(ctx, spec); err != nil {
		t.Fatal(err)
	}
	info, err := c2.GetBridge(ctx, spec.Name)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(info.Controllers, spec.Controllers) || !slices.Equal(info.Ports, []string{"contivh0", "vxif1981809"}) {
		t.Errorf("bridge after restart: %+v", info)
	}
	if name, ok := c2.FindVTEPPort(ctx, "198.18.0.9"); !ok || name != "vxif1981809" {
		t.Errorf("FindVTEPPort after restart: %q", name)
	}
	if got, err := c2.GetOFPort(ctx, "contivh0"); err != nil || got != ofport {
		t.Errorf("ofport after restart = %d, %v; was %d", got, err, ofport)
	}
	if err := c2.CreatePort(ctx, spec.Name, ovsdb.PortSpec{Name: "contivh0", Type: "internal", Tag: 2,
		ExternalIDs: map[string]string{"endpoint-id": "hostcontivh0"}}); err != nil {
		t.Fatal(err)
	}
	// Interface statistics and status change on their own; compare only
	// the Bridge and Port tables, which nothing else writes.
	var bridgesAndPorts int
	c2.Cache().View(func(v ovsdb.View) { bridgesAndPorts = v.Len("Bridge") + v.Len("Port") })
	if bridgesAndPorts != 3 {
		t.Errorf("%d bridge and port rows", bridgesAndPorts)
	}
}

// TestConcurrentEnsure: two clients ensure the same bridge and ports at
// the same time. The losers of each race see a constraint violation on the
// unique name, re-read the cache and find the object there: all calls
// succeed and nothing is duplicated.
func TestConcurrentEnsure(t *testing.T) {
	o, c1, ctx := startOVS(t)
	c2, err := ovsdb.Dial(ctx, "unix:"+o.DBSock)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	clients := []*ovsdb.Client{c1, c2}
	spec := ovsdb.BridgeSpec{Name: "br0", DatapathType: "netdev", Controllers: []string{"tcp:127.0.0.1:6633"}}
	parallel(t, 4, func(i int) error { return clients[i%2].CreateBridge(ctx, spec) })
	const n = 20
	parallel(t, 2*n, func(i int) error {
		return clients[i%2].CreatePort(ctx, "br0", ovsdb.PortSpec{Name: fmt.Sprintf("p%d", i/2), Type: "internal", Tag: 7})
	})
	if got := strings.Fields(vsctl(t, o, "list-br")); len(got) != 1 {
		t.Errorf("bridges: %v", got)
	}
	if got := strings.Fields(vsctl(t, o, "list-ports", "br0")); len(got) != n {
		t.Errorf("%d ports, want %d", len(got), n)
	}
	if got := strings.Fields(vsctl(t, o, "--columns=_uuid", "--data=bare", "--no-headings", "list", "Controller")); len(got) != 1 {
		t.Errorf("controllers: %v", got)
	}
	parallel(t, 2*n, func(i int) error { return clients[i%2].DeletePort(ctx, "br0", fmt.Sprintf("p%d", i/2)) })
	if got := vsctl(t, o, "list-ports", "br0"); got != "" {
		t.Errorf("ports left: %q", got)
	}
}
