package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/api/attach"
	"github.com/contiv/netplugin/netplugin/masterclient"
	"github.com/contiv/netplugin/ofnet/pipeline"
	"github.com/contiv/netplugin/state"
	"github.com/contiv/netplugin/test/testbed"
)

// hostTrace is what an endpoint leaves on a host and in the store.
type hostTrace struct {
	records   []string // endpoint records homed on the host
	opers     []string // endpoint oper records
	ports     []string // OVS ports of the VXLAN bridge
	links     []string // vport/vvport links in the host's namespace
	flows     []string // normalized flows of the VXLAN bridge
	groups    string   // group dump of the VXLAN bridge
	epCount   int      // the network's endpoint counter
	addrCount int      // the network's address counter
}

func traceOf(t *testing.T, st *state.Store, h *testbed.Host, netID string) hostTrace {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var tr hostTrace
	eps, _, err := st.Endpoints.ReadAll(ctx)
	if err != nil {
		t.Fatalf("read endpoints: %v", err)
	}
	for _, ep := range eps {
		if ep.HomingHost == h.Name {
			tr.records = append(tr.records, ep.ID+" "+ep.IPAddress)
		}
	}
	opers, _, err := st.EndpointOper.ReadAll(ctx)
	if err != nil {
		t.Fatalf("read endpoint oper records: %v", err)
	}
	for _, o := range opers {
		tr.opers = append(tr.opers, o.ID)
	}
	out, err := h.Vsctl("list-ports", "contivVxlanBridge")
	if err != nil {
		t.Fatalf("list ports: %v: %s", err, out)
	}
	tr.ports = strings.Fields(out)
	out, err = h.Exec("ip", "-o", "link", "show")
	if err != nil {
		t.Fatalf("list links: %v: %s", err, out)
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && (strings.HasPrefix(f[1], "vport") || strings.HasPrefix(f[1], "vvport")) {
			tr.links = append(tr.links, strings.SplitN(f[1], "@", 2)[0])
		}
	}
	if tr.flows, err = h.DumpFlows("contivVxlanBridge"); err != nil {
		t.Fatal(err)
	}
	if tr.groups, err = h.Ofctl("dump-groups", "contivVxlanBridge"); err != nil {
		t.Fatalf("dump groups: %v", err)
	}
	nw, err := st.Networks.Read(ctx, netID)
	if err != nil {
		t.Fatalf("read network %s: %v", netID, err)
	}
	tr.epCount, tr.addrCount = nw.EpCount, nw.EpAddrCount
	for _, s := range [][]string{tr.records, tr.opers, tr.ports, tr.links} {
		slices.Sort(s)
	}
	return tr
}

func (a hostTrace) diff(b hostTrace) string {
	var d []string
	cmp := func(what string, x, y []string) {
		if !slices.Equal(x, y) {
			d = append(d, fmt.Sprintf("%s: %q → %q", what, x, y))
		}
	}
	cmp("endpoint records", a.records, b.records)
	cmp("oper records", a.opers, b.opers)
	cmp("OVS ports", a.ports, b.ports)
	cmp("links", a.links, b.links)
	cmp("flows", a.flows, b.flows)
	if a.groups != b.groups {
		d = append(d, fmt.Sprintf("groups:\n%s\n→\n%s", a.groups, b.groups))
	}
	if a.epCount != b.epCount || a.addrCount != b.addrCount {
		d = append(d, fmt.Sprintf("network counters: %d endpoints %d addresses → %d, %d", a.epCount, a.addrCount, b.epCount, b.addrCount))
	}
	return strings.Join(d, "\n")
}

// waitSame polls (bounded) until the host's trace equals want: netmaster's
// counters are written after its answer.
func waitSame(t *testing.T, st *state.Store, h *testbed.Host, netID string, want hostTrace, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got := traceOf(t, st, h, netID)
		d := want.diff(got)
		if d == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("left behind after %v:\n%s", within, d)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// An attach that fails midway leaves no endpoint record, address, port,
// link, flow or group behind: when netmaster cannot be reached, when OVS
// refuses the endpoint's flows, and (caught by netplugin's sweep at start)
// when netplugin died between netmaster's endpoint and the port.
func TestFailedAttachLeavesNothing(t *testing.T) {
	tb := testbed.New(t, testbed.Config{Hosts: 1, NetMode: "vlan", FwdMode: "bridge"})
	netctl(t, tb, "net", "create", "--encap", "vxlan", "--subnet", "198.19.32.0/24", "--gateway", "198.19.32.254", "fail")
	const netID = "fail.default"
	h := tb.Hosts[0]
	st := state.New(tb.Store(t))
	first := attachNew(t, h, "first", "default", "fail", "")
	base := traceOf(t, st, h, netID)
	if len(base.records) != 1 || !slices.Contains(base.ports, first.res.PortName) {
		t.Fatalf("after one attach: %+v", base)
	}

	tryFail := func(t *testing.T, name string) {
		t.Helper()
		c := h.NewContainerNS(t, name)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		_, err := attach.NewClient(h.AttachSocket()).Attach(ctx, attach.Request{Tenant: "default", Network: "fail",
			ContainerID: "ctr-" + name, Name: name, NetNS: c.NSPath()})
		if err == nil {
			t.Fatalf("attach %s succeeded; the failure was not injected", name)
		}
		t.Logf("attach %s failed as planned: %v", name, err)
		if out, err := c.Exec("ip", "-o", "link", "show"); err != nil || strings.Count(out, "\n") != 1 {
			t.Errorf("container %s has links besides lo: %v\n%s", name, err, out)
		}
	}

	t.Run("netmaster unreachable", func(t *testing.T) {
		rule := []string{"OUTPUT", "-p", "tcp", "-d", tb.Masters[0].IP, "--dport", strconv.Itoa(testbed.NetmasterPort), "-j", "REJECT", "--reject-with", "tcp-reset"}
		if out, err := h.Exec(append([]string{"iptables", "-I"}, rule...)...); err != nil {
			t.Fatalf("block netmaster: %v: %s", err, out)
		}
		defer func() {
			if out, err := h.Exec(append([]string{"iptables", "-D"}, rule...)...); err != nil {
				t.Errorf("unblock netmaster: %v: %s", err, out)
			}
		}()
		tryFail(t, "nomaster")
		waitSame(t, st, h, netID, base, 10*time.Second)
	})

	t.Run("OVS refuses the flows", func(t *testing.T) {
		// Table 1 holds one flow per local port: full at its present size,
		// the new port's flow is refused after its port, veth, group
		// bucket and endpoint were made.
		out, err := h.Ofctl("dump-flows", "contivVxlanBridge", "table="+strconv.Itoa(int(pipeline.VlanTable)))
		if err != nil {
			t.Fatalf("dump table 1: %v", err)
		}
		n := len(testbed.NormalizeFlows(out))
		if out, err := h.Vsctl("--", "--id=@ft", "create", "Flow_Table", "flow_limit="+strconv.Itoa(n), "overflow_policy=refuse",
			"--", "set", "Bridge", "contivVxlanBridge", "flow_tables:1=@ft"); err != nil {
			t.Fatalf("limit table 1: %v: %s", err, out)
		}
		defer func() {
			if out, err := h.Vsctl("clear", "Bridge", "contivVxlanBridge", "flow_tables"); err != nil {
				t.Errorf("lift the limit: %v: %s", err, out)
			}
		}()
		tryFail(t, "noflow")
		waitSame(t, st, h, netID, base, 10*time.Second)
	})

	t.Run("sweep after a crash", func(t *testing.T) {
		// What a netplugin killed mid-attach leaves: netmaster's endpoint
		// (with its address) for this host, and an OVS port whose
		// endpoint is unknown.
		mc := masterclient.New(tb.Store(t), masterclient.WithHTTPClient(tb.HTTPClient()))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ep, err := mc.CreateEndpoint(ctx, masterclient.CreateEndpointRequest{TenantName: "default", NetworkName: "fail",
			EndpointID: "ctr-crashed", ConfigEP: masterclient.ConfigEP{Container: "ctr-crashed", Host: h.Name}})
		if err != nil {
			t.Fatalf("create the crashed attach's endpoint: %v", err)
		}
		if out, err := h.Vsctl("add-port", "contivVxlanBridge", "vvport999", "--", "set", "Interface", "vvport999", "type=internal",
			"external_ids:endpoint-id=ghost", "--", "set", "Port", "vvport999", "external_ids:endpoint-id=ghost"); err != nil {
			t.Fatalf("add a stale port: %v: %s", err, out)
		}
		h.KillNetplugin(t)
		h.StartNetplugin(t)
		waitSame(t, st, h, netID, base, 60*time.Second)
		t.Logf("endpoint %s (%s) and port vvport999 were removed", ep.ID, ep.IPAddress)
	})

	// The host still attaches.
	next := attachNew(t, h, "next", "default", "fail", "")
	if next.ip() == first.ip() {
		t.Fatalf("next got first's address %s", next.ip())
	}
}
