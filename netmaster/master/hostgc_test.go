package master_test

import (
	"slices"
	"testing"
	"time"

	"github.com/contiv/netplugin/netmaster/master/mastertest"
	"github.com/contiv/netplugin/ofnet/ofrpc"
	"github.com/contiv/netplugin/state"
)

// Host garbage collection (docs/daemons.md §4.10.3): a host whose netplugin
// comes back within the delay keeps everything; one that stays away loses
// its endpoints (addresses and counts given back, IPv6 included), their
// oper/eps entries and its endpoints in the ofnet master; other hosts keep
// theirs.
func TestHostGC(t *testing.T) {
	const delay = time.Second
	e := newEnvCfg(t, ofnetCfg(delay))
	self := e.masterNode()
	a := startOfAgent(t, "127.0.0.2")
	b := startOfAgent(t, "127.0.0.3")
	aInfo := e.RegisterNetplugin("127.0.0.2", a.id.HostPort, "hosta")
	e.RegisterNetplugin("127.0.0.3", b.id.HostPort, "hostb")
	for _, ag := range []*ofAgent{a, b} {
		ag.waitCall(ofrpc.AgentAddMaster, 1)
	}

	e.CreateDualNet("default", "n", "198.18.60.0/24", "198.18.60.254", "2001:db8:60::/120", "2001:db8:60::fe")
	e.CreateEPG("default", "g", "n", `"ipPool":"198.18.60.10-198.18.60.19"`)
	e.CreateEndpoint(mastertest.EPBody("default", "n", "g", "a1", "hosta", "", ""))
	e.CreateEndpoint(mastertest.EPBody("default", "n", "", "a2", "hosta", "", ""))
	e.CreateEndpoint(mastertest.EPBody("default", "n", "", "b1", "hostb", "", ""))
	st := state.New(e.St)
	ctx := mastertest.Ctx(t, 30*time.Second)
	for _, op := range []state.EndpointOper{
		{Common: state.Common{ID: "n.default-a1"}, HomingHost: "hosta"},
		{Common: state.Common{ID: "n.default-a9"}, HomingHost: "hosta"}, // no config record
		{Common: state.Common{ID: "n.default-b1"}, HomingHost: "hostb"},
	} {
		if _, err := st.EndpointOper.Write(ctx, op); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"hosta", "hostb"} {
		if _, err := st.Nodes.Write(ctx, state.Node{Common: state.Common{ID: n}, Hostname: n}); err != nil {
			t.Fatal(err)
		}
	}
	epA := testEndpoint("198.18.60.10", "127.0.0.2")
	a.push(self, ofrpc.MasterEndpointAdd, epA)
	b.waitCall(ofrpc.AgentEndpointAdd+" "+epA.EndpointID, 1)
	all := e.Dump()

	// Away and back within the delay: nothing deleted.
	e.Deregister(aInfo)
	waitUntil(t, "host A dropped", func() bool { return len(e.ofnetState().AgentDb) == 1 }, func() string { return "" })
	e.Register(aInfo)
	time.Sleep(2 * delay)
	if d := mastertest.DiffDumps(all, e.Dump()); d != "" {
		t.Fatalf("a host back in time lost state:\n%s", d)
	}

	// Away for good.
	e.Deregister(aInfo)
	// The oper entry without a config record goes last.
	waitUntil(t, "host A's endpoints deleted", func() bool {
		_, ok := e.Dump()["oper/eps/n.default-a9"]
		return !ok
	}, func() string { return "" })
	b.waitCall(ofrpc.AgentEndpointDel+" "+epA.EndpointID, 1)
	if got := e.EpKeys(); !slices.Equal(got, []string{"n.default-b1"}) {
		t.Fatalf("endpoints left %v", got)
	}
	opers, _, err := st.EndpointOper.ReadAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(opers) != 1 || opers[0].ID != "n.default-b1" {
		t.Fatalf("oper/eps left: %+v", opers)
	}
	// The host left the cluster: its node record goes (peers drop their
	// tunnel to it, docs/architecture.md "Headless dataplane").
	if nodes, _, err := st.Nodes.ReadAll(ctx); err != nil || len(nodes) != 1 || nodes[0].ID != "hostb" {
		t.Fatalf("node records left: %+v (%v)", nodes, err)
	}
	ni := e.NetOper("default", "n")
	if ni.Oper.NumEndpoints != 1 || ni.Oper.AllocatedAddressesCount != 1 ||
		ni.Oper.AllocatedIPAddresses != "198.18.60.2, 198.18.60.10-198.18.60.19, 198.18.60.254" {
		t.Fatalf("network after host GC: %+v", ni.Oper)
	}
	if gs, _ := e.GroupState("default", "g"); gs.EpCount != 0 {
		t.Fatalf("group epCount %d", gs.EpCount)
	}
	var gi struct {
		Oper struct{ AllocatedIPAddresses string }
	}
	e.Inspect("endpointGroups/default:g/", &gi)
	if gi.Oper.AllocatedIPAddresses != "" {
		t.Fatalf("group pool after host GC: %q", gi.Oper.AllocatedIPAddresses)
	}
	// b1 was created last: its IPv6 address is ::3.
	if got, want := e.V6Taken("n.default"), []string{"2001:db8:60::3", "2001:db8:60::fe"}; !slices.Equal(got, want) {
		t.Fatalf("ipv6 after host GC: %v, want %v", got, want)
	}
}

// A host that left before the leadership term began (its netplugin is not
// registered when the term starts) is collected after the delay too.
func TestHostGCOfHostGoneBeforeTerm(t *testing.T) {
	const delay = time.Second
	e := newEnvCfg(t, ofnetCfg(delay))
	e.masterNode()
	b := startOfAgent(t, "127.0.0.3")
	e.RegisterNetplugin("127.0.0.3", b.id.HostPort, "hostb")
	b.waitCall(ofrpc.AgentAddMaster, 1)
	e.CreateNet("default", "n", "vxlan", "198.18.61.0/24", "", 0)
	e.CreateEndpoint(mastertest.EPBody("default", "n", "", "gone1", "hostgone", "", ""))
	e.CreateEndpoint(mastertest.EPBody("default", "n", "", "b1", "hostb", "", ""))
	// A member that left only its node record behind is collected too.
	st := state.New(e.St)
	ctx := mastertest.Ctx(t, 30*time.Second)
	for _, n := range []string{"hostb", "hostnode"} {
		if _, err := st.Nodes.Write(ctx, state.Node{Common: state.Common{ID: n}, Hostname: n}); err != nil {
			t.Fatal(err)
		}
	}

	e.Restart()
	e.masterNode()
	waitUntil(t, "the endpoint of the departed host deleted", func() bool {
		return len(e.EpKeys()) == 1 && e.NetOper("default", "n").Oper.NumEndpoints == 1
	}, func() string { return "" })
	if got := e.EpKeys(); !slices.Equal(got, []string{"n.default-b1"}) {
		t.Fatalf("endpoints left %v", got)
	}
	if ni := e.NetOper("default", "n"); ni.Oper.AllocatedAddressesCount != 1 || ni.Oper.AllocatedIPAddresses != "198.18.61.2" {
		t.Fatalf("network after host GC: %+v", ni.Oper)
	}
	waitUntil(t, "the node record of the departed member deleted", func() bool {
		nodes, _, err := st.Nodes.ReadAll(ctx)
		return err == nil && len(nodes) == 1 && nodes[0].ID == "hostb"
	}, func() string { return "" })
}
