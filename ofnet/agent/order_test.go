package agent

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/ofnet/ofrpc"
	"github.com/contiv/netplugin/ofnet/pipeline"
)

// offlineAgent is an agent that never runs: its state and desired flows only.
func offlineAgent(t *testing.T, datapath string) *Agent {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	a, err := New(Config{Datapath: datapath, LocalIP: net.ParseIP("198.18.0.1"), OFListener: ln, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.pool.Close() })
	return a
}

func permutations(n int) [][]int {
	if n == 1 {
		return [][]int{{0}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := append(append(append([]int(nil), p[:i]...), n-1), p[i:]...)
			out = append(out, q)
		}
	}
	return out
}

// TestEventOrderConverges applies the same five events (network, local endpoint,
// VTEP, remote endpoint, rule) in all 120 orders, in each datapath, and requires the
// same flows and groups every time; then removes them in all orders and requires the
// fixed flows only.
func TestEventOrderConverges(t *testing.T) {
	ctx := context.Background()
	for _, dp := range []string{DatapathVxlan, DatapathVrouter, DatapathVlan} {
		t.Run(dp, func(t *testing.T) {
			var vni uint32 = 5000
			if dp == DatapathVlan {
				vni = 0
			}
			ep := EndpointInfo{PortNo: 3, MacAddr: macFor(net.ParseIP("10.1.1.5")), IpAddr: net.ParseIP("10.1.1.5"),
				Vlan: 1, EndpointGroup: 5, Dscp: 10}
			rep := ofrpc.OfnetEndpoint{EndpointID: "10.1.1.9:t1", IpAddr: net.ParseIP("10.1.1.9"), Vrf: "t1",
				MacAddrStr: "02:02:0a:01:01:09", Vlan: 1, Vni: vni, EndpointGroup: 6,
				OriginatorIp: net.ParseIP("198.18.0.2"), Timestamp: time.Now()}
			rule := ofrpc.OfnetPolicyRule{RuleId: "r1", Priority: 5, SrcEndpointGroup: 5, Action: "deny"}
			adds := []func(a *Agent) error{
				func(a *Agent) error { return a.AddNetwork(ctx, 1, vni, "", "t1") },
				func(a *Agent) error { return a.AddLocalEndpoint(ctx, ep) },
				func(a *Agent) error {
					if dp == DatapathVlan {
						return a.AddUplink(ctx, 7, "eth2")
					}
					return a.AddVtepPort(ctx, 7, net.ParseIP("198.18.0.2"))
				},
				func(a *Agent) error { return a.AddRemoteEndpoint(ctx, rep) },
				func(a *Agent) error { return a.AddRule(ctx, rule) },
			}
			dels := []func(a *Agent) error{
				func(a *Agent) error { return a.RemoveNetwork(ctx, 1, vni, "", "t1") },
				func(a *Agent) error { return a.RemoveLocalEndpoint(ctx, 3) },
				func(a *Agent) error {
					if dp == DatapathVlan {
						return a.RemoveUplink(ctx, 7)
					}
					return a.RemoveVtepPort(ctx, 7, net.ParseIP("198.18.0.2"))
				},
				func(a *Agent) error { return a.RemoveRemoteEndpoint(ctx, rep) },
				func(a *Agent) error { return a.DelRule(ctx, rule) },
			}
			base := offlineAgent(t, dp)
			fixed, fixedGroups, err := base.desiredFlows()
			if err != nil {
				t.Fatal(err)
			}
			var want, wantGroups string
			for i, p := range permutations(len(adds)) {
				a := offlineAgent(t, dp)
				for _, e := range p {
					if err := adds[e](a); err != nil {
						t.Fatal(err)
					}
				}
				fl, gr, err := a.desiredFlows()
				if err != nil {
					t.Fatal(err)
				}
				got, gotGroups := strings.Join(fl, "\n"), strings.Join(gr, "\n")
				if i == 0 {
					want, wantGroups = got, gotGroups
					if len(fl) <= len(fixed) {
						t.Fatalf("the events added no flows:\n%s", got)
					}
				} else if got != want || gotGroups != wantGroups {
					t.Fatalf("order %v gives other flows:\n%s\n%s\nwant\n%s\n%s", p, got, gotGroups, want, wantGroups)
				}
				rp := permutations(len(dels))[i]
				for _, e := range rp {
					if err := dels[e](a); err != nil {
						t.Fatal(err)
					}
				}
				fl, gr, _ = a.desiredFlows()
				if strings.Join(fl, "\n") != strings.Join(fixed, "\n") || strings.Join(gr, "\n") != strings.Join(fixedGroups, "\n") {
					t.Fatalf("removal order %v leaves flows:\n%s\n%s", rp, strings.Join(fl, "\n"), strings.Join(gr, "\n"))
				}
				if n := len(a.vrfs); n != 0 {
					t.Fatalf("removal order %v leaks %d VRF ids", rp, n)
				}
			}
		})
	}
}

// TestBadInputChangesNothing: invalid endpoints, rules and EPG ids beyond 15 bits are
// refused (quirk A6) and leave the flows as they were.
func TestBadInputChangesNothing(t *testing.T) {
	ctx := context.Background()
	a := offlineAgent(t, DatapathVxlan)
	if err := a.AddNetwork(ctx, 1, 5000, "", "t1"); err != nil {
		t.Fatal(err)
	}
	before, _, _ := a.desiredFlows()
	bad := []error{
		a.AddLocalEndpoint(ctx, EndpointInfo{PortNo: 3, MacAddr: macFor(net.ParseIP("10.1.1.5")),
			IpAddr: net.ParseIP("10.1.1.5"), Vlan: 1, EndpointGroup: 40000}),
		a.AddLocalEndpoint(ctx, EndpointInfo{PortNo: 3, IpAddr: net.ParseIP("10.1.1.5"), Vlan: 1}),
		a.AddRule(ctx, ofrpc.OfnetPolicyRule{RuleId: "x", Priority: 5, DstEndpointGroup: 40000, Action: "deny"}),
		a.AddRule(ctx, ofrpc.OfnetPolicyRule{RuleId: "x", Priority: 5, TcpFlags: "fin", IpProtocol: 6, Action: "deny"}),
		a.AddRule(ctx, ofrpc.OfnetPolicyRule{RuleId: "x", Priority: 5, Action: "reject"}),
		a.AddRule(ctx, ofrpc.OfnetPolicyRule{RuleId: "x", Priority: 500, Action: "deny"}),
		a.AddRemoteEndpoint(ctx, ofrpc.OfnetEndpoint{EndpointID: "10.1.1.9:t1", IpAddr: net.ParseIP("10.1.1.9"),
			Vrf: "t1", MacAddrStr: "02:02:0a:01:01:09", Vni: 5000, EndpointGroup: 32768}),
		a.AddNetwork(ctx, 1, 6000, "", "t1"),
		a.AddNetwork(ctx, 2, 5000, "", "t1"),
	}
	for i, err := range bad {
		if err == nil {
			t.Errorf("bad input %d accepted", i)
		}
	}
	if err := a.AddRule(ctx, ofrpc.OfnetPolicyRule{RuleId: "x", Priority: 5, DstEndpointGroup: 40000, Action: "deny"}); !errors.Is(err, pipeline.ErrValueTooLarge) {
		t.Errorf("EPG 40000 in a rule: %v, want ErrValueTooLarge", err)
	}
	after, _, _ := a.desiredFlows()
	if strings.Join(before, "\n") != strings.Join(after, "\n") {
		t.Errorf("bad input changed the flows:\n%s", strings.Join(after, "\n"))
	}
}
