package agent

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/ofnet/pipeline"
)

// learnedFlows returns the flows the switch learned for session affinity: those of
// the affinity table with a learned-flow cookie.
func (h *host) learnedFlows(t testing.TB) []string {
	t.Helper()
	out, err := h.ovs.Ofctl("-O", "OpenFlow13", "--no-stats", "dump-flows", h.bridge,
		fmt.Sprintf("table=%d", pipeline.SrvAffinityTable))
	if err != nil {
		t.Fatalf("dump-flows: %v: %s", err, out)
	}
	var learned []string
	for _, l := range pipeline.NormalizeDump(out, true) {
		if strings.HasPrefix(l, fmt.Sprintf("cookie=%#x", uint64(pipeline.CatSvcAffinity))) {
			learned = append(learned, l)
		}
	}
	return learned
}

// countVIP opens n TCP connections from c to addr and counts who answered each.
func countVIP(t *testing.T, h *host, c *container, addr string, n int) map[string]int {
	t.Helper()
	got := map[string]int{}
	for i := 0; i < n; i++ {
		who, err := c.dial(addr, 3*time.Second)
		if err != nil {
			t.Fatalf("connection %d of %d to %s: %v\n%s\nlearned:\n%s", i, n, addr, err, h.dumpOnFail(t),
				strings.Join(h.learnedFlows(t), "\n"))
		}
		got[who]++
	}
	return got
}

// only returns the single key of m, or "" when m has another number of keys.
func only(m map[string]int) string {
	if len(m) != 1 {
		return ""
	}
	for k := range m {
		return k
	}
	return ""
}

// regHex is how ovs-ofctl prints a provider address loaded into a register.
func regHex(ip string) string { return fmt.Sprintf("%#x", ipUint(net.ParseIP(ip))) }

// testServiceAffinity: with ClientIP session affinity every new TCP connection and
// UDP exchange of one client reaches the same provider, the switch holds one
// learned flow per (client, VIP, port) and the counters count the connections; an
// agent resync keeps the learned flows; a bound provider that leaves is replaced;
// turning affinity off removes the learned flows and spreads connections again;
// deleting the service removes the learned flows.
func testServiceAffinity(t *testing.T, datapath string) {
	h, client, _, _ := servingTrio(t, datapath)
	ctx := testCtx(t)
	const vip, tcpAddr, udpAddr = "198.18.10.100", "198.18.10.100:80", "198.18.10.100:5300"
	provs := []string{"198.18.10.2", "198.18.10.3"}
	spec := ServiceSpec{Vrf: "t1", IpAddress: vip, Ports: []ServicePort{{"TCP", 80, 8080}, {"UDP", 5300, 5301}},
		AffinityTimeout: 10800}
	if err := h.agent.AddSvcSpec(ctx, "web:t1", spec); err != nil {
		t.Fatal(err)
	}
	if err := h.agent.SvcProviderUpdate(ctx, "web:t1", provs); err != nil {
		t.Fatal(err)
	}

	// 1. Affinity holds, for TCP and UDP.
	got := countVIP(t, h, client, tcpAddr, 20)
	bound := only(got)
	if bound == "" {
		t.Fatalf("20 connections with ClientIP affinity reached %v, want one provider", got)
	}
	udp := map[string]int{}
	for i := 0; i < 10; i++ {
		who, err := client.askUDP(udpAddr, 3*time.Second)
		if err != nil {
			t.Fatalf("UDP exchange %d: %v\n%s", i, err, h.dumpOnFail(t))
		}
		udp[who]++
	}
	udpBound := only(udp)
	if udpBound == "" {
		t.Fatalf("10 UDP exchanges with ClientIP affinity reached %v, want one provider", udp)
	}
	learned := h.learnedFlows(t)
	if len(learned) != 2 || !strings.Contains(strings.Join(learned, "\n"), "hard_timeout=10800") ||
		!strings.Contains(strings.Join(learned, "\n"), "nw_src=198.18.10.1") {
		t.Fatalf("learned flows:\n%s\nwant one TCP and one UDP flow of client 198.18.10.1, hard_timeout=10800", strings.Join(learned, "\n"))
	}
	for _, l := range learned {
		want := bound
		if strings.Contains(l, "udp") {
			want = udpBound
		}
		if !strings.Contains(l, "load:"+regHex(want)+"->NXM_NX_REG0[]") {
			t.Errorf("learned flow %s does not bind to %s", l, want)
		}
	}
	var st []ServiceStats
	waitFor(t, "service counters", func() bool {
		var err error
		if st, err = h.agent.ServiceStats(ctx); err != nil {
			t.Fatal(err)
		}
		return len(st) == 1 && len(st[0].Ports) == 2 && st[0].Ports[0].Connections == 20 &&
			st[0].Ports[0].Providers[bound].Connections == 20 && st[0].Ports[0].PacketsOut > 0
	}, func() string { return fmt.Sprintf("%+v", st) })

	// Traces name the learned flows' cookie and the tables.
	if cat, obj := h.agent.DescribeCookie(affinityCookie("web:t1")); cat != "service-affinity" || obj != "web:t1" {
		t.Errorf("DescribeCookie(learned) = %q %q", cat, obj)
	}
	if n := pipeline.SrvAffinityDNATTable.String(); n != "SrvAffinityDNAT" {
		t.Errorf("table 15 is named %q", n)
	}

	// 2. A resync of the agent (the restart clean-up) leaves the learned flows.
	if err := h.agent.FinishRestart(ctx); err != nil {
		t.Fatal(err)
	}
	if after := h.learnedFlows(t); len(after) != 2 {
		t.Fatalf("learned flows after the resync:\n%s", strings.Join(after, "\n"))
	}
	if got := countVIP(t, h, client, tcpAddr, 10); only(got) != bound {
		t.Errorf("after the resync: %v, want all on %s", got, bound)
	}

	// 3. The bound provider leaves: the client is bound to the other one.
	other := provs[0]
	if other == bound {
		other = provs[1]
	}
	if err := h.agent.SvcProviderUpdate(ctx, "web:t1", []string{other}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "datapath flows without the removed provider", func() bool {
		out, err := h.ovs.Appctl("ovs-vswitchd", "dpctl/dump-flows")
		return err == nil && !strings.Contains(out, "nat(dst="+bound+":8080")
	}, func() string { out, _ := h.ovs.Appctl("ovs-vswitchd", "dpctl/dump-flows"); return out })
	if got := countVIP(t, h, client, tcpAddr, 10); only(got) != other {
		t.Errorf("after %s left: %v, want all on %s", bound, got, other)
	}
	if err := h.agent.SvcProviderUpdate(ctx, "web:t1", provs); err != nil {
		t.Fatal(err)
	}
	if got := countVIP(t, h, client, tcpAddr, 10); only(got) != other {
		t.Errorf("after %s came back: %v, want all still on %s", bound, got, other)
	}

	// 4. Affinity off: no learned flow is left and connections spread again
	// (once OVS revalidated its cached datapath flows).
	spec.AffinityTimeout = 0
	if err := h.agent.AddSvcSpec(ctx, "web:t1", spec); err != nil {
		t.Fatal(err)
	}
	if l := h.learnedFlows(t); len(l) != 0 {
		t.Errorf("learned flows left after affinity was turned off:\n%s", strings.Join(l, "\n"))
	}
	for _, f := range h.flows(t) {
		if strings.Contains(f, fmt.Sprintf("table=%d,", pipeline.SrvAffinityDNATTable)) ||
			strings.Contains(f, fmt.Sprintf("table=%d,", pipeline.SrvAffinityTable)) {
			t.Errorf("affinity flow left after affinity was turned off: %s", f)
		}
	}
	waitFor(t, "connections reaching both providers", func() bool {
		return len(countVIP(t, h, client, tcpAddr, 6)) == 2
	}, func() string { return "" })
	if got := countVIP(t, h, client, tcpAddr, 40); got[provs[0]] < 8 || got[provs[1]] < 8 {
		t.Errorf("without affinity 40 connections spread as %v, want each provider ≥ 20 %%", got)
	}

	// 5. Affinity on again, then the service is deleted: its learned flows go.
	spec.AffinityTimeout = 10800
	if err := h.agent.AddSvcSpec(ctx, "web:t1", spec); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "affinity holding again", func() bool {
		return only(countVIP(t, h, client, tcpAddr, 10)) != ""
	}, func() string { return strings.Join(h.learnedFlows(t), "\n") })
	if l := h.learnedFlows(t); len(l) != 1 {
		t.Errorf("learned flows with affinity back on:\n%s", strings.Join(l, "\n"))
	}
	if err := h.agent.DelSvcSpec(ctx, "web:t1"); err != nil {
		t.Fatal(err)
	}
	if l := h.learnedFlows(t); len(l) != 0 {
		t.Errorf("learned flows left after the service was deleted:\n%s", strings.Join(l, "\n"))
	}
	for _, f := range append(h.flows(t), h.groups(t)...) {
		if strings.Contains(f, vip) || strings.Contains(f, "type=select") || strings.Contains(f, "learn(") {
			t.Errorf("after DelSvcSpec: %s", f)
		}
	}
	if _, err := client.dial(tcpAddr, time.Second); err == nil {
		t.Errorf("the VIP still answers after the service was deleted")
	}
}

func TestServiceAffinityVxlanBridge(t *testing.T)  { testServiceAffinity(t, DatapathVxlan) }
func TestServiceAffinityVxlanRouting(t *testing.T) { testServiceAffinity(t, DatapathVrouter) }
func TestServiceAffinityVlanBridge(t *testing.T)   { testServiceAffinity(t, DatapathVlan) }

// TestServiceAffinityTimeout: each new connection refreshes a binding; one the
// client does not use for the affinity timeout expires: the switch removes its
// learned flow.
func TestServiceAffinityTimeout(t *testing.T) {
	h, cs := serviceTrio(t, DatapathVxlan)
	ctx := testCtx(t)
	for _, p := range cs[1:] {
		p.serveIdentity(t, 8080)
	}
	if err := h.agent.AddSvcSpec(ctx, "web:t1", ServiceSpec{Vrf: "t1", IpAddress: "198.18.10.100",
		Ports: []ServicePort{{"TCP", 80, 8080}}, AffinityTimeout: 2}); err != nil {
		t.Fatal(err)
	}
	if err := h.agent.SvcProviderUpdate(ctx, "web:t1", []string{"198.18.10.2", "198.18.10.3"}); err != nil {
		t.Fatal(err)
	}
	if got := countVIP(t, h, cs[0], "198.18.10.100:80", 5); only(got) == "" {
		t.Fatalf("5 connections reached %v, want one provider", got)
	}
	if l := h.learnedFlows(t); len(l) != 1 || !strings.Contains(l[0], "hard_timeout=2") {
		t.Fatalf("learned flows:\n%s", strings.Join(l, "\n"))
	}
	// Each new connection refreshes the binding: one every 0.5 s for 4 s (twice
	// the timeout) keeps it, on the same provider.
	got := map[string]int{}
	for i := 0; i < 8; i++ {
		time.Sleep(500 * time.Millisecond)
		for k, n := range countVIP(t, h, cs[0], "198.18.10.100:80", 1) {
			got[k] += n
		}
	}
	if only(got) == "" || len(h.learnedFlows(t)) != 1 {
		t.Fatalf("connections refreshing the binding reached %v; learned flows:\n%s", got, strings.Join(h.learnedFlows(t), "\n"))
	}
	waitFor(t, "the learned flow to expire", func() bool { return len(h.learnedFlows(t)) == 0 },
		func() string { return strings.Join(h.learnedFlows(t), "\n") })
}
