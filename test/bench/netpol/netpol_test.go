// Package netpol benchmarks Kubernetes NetworkPolicy enforcement
// (docs/k8s.md, "NetworkPolicy") on the simulated cluster: two hosts whose
// netplugins run in kubernetes mode against a real kube-apiserver, a
// client pod on host 0 and a server pod on host 1 (both created in the API
// server and attached with cnitool, their addresses written into their
// status as a kubelet would).
//
//   - time to enforcement: from the Create call of a NetworkPolicy to the
//     first TCP connection from the client that shows its effect, p50/p99
//     over 100 policies of each kind: one isolating the server (ingress
//     only from a label the client lacks: connections start to fail), then
//     one allowing the client in (they succeed again);
//
//   - flows per policy: netpol flows (cookie category 11) on the server
//     host's bridge with 100 policies in place, less those with none,
//     divided by 100.
//
//     go test -c -o /tmp/npb.test ./test/bench/netpol
//     flock /tmp/contiv-nettest.lock env CI=true /tmp/npb.test -test.run '^$' -test.bench . -test.benchtime 1x -test.timeout 15m -test.v
package netpol

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	current "github.com/containernetworking/cni/pkg/types/100"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/contiv/netplugin/mgmtfn/k8splugin"
	"github.com/contiv/netplugin/ofnet/pipeline"
	"github.com/contiv/netplugin/test/bench/benchstat"
	"github.com/contiv/netplugin/test/ovstest"
	"github.com/contiv/netplugin/test/testbed"
)

const (
	// policies is the number of measured creations of each kind and of
	// policies in place for the flow count.
	policies = 100
	// pollEvery is the interval between two connection attempts while
	// waiting for a change; probeTimeout bounds one attempt's connect.
	pollEvery    = 10 * time.Millisecond
	probeTimeout = 100 * time.Millisecond
	// maxInFlight bounds the attempts waitOpen has in flight at once.
	maxInFlight = 32
	// confirmTimeout bounds the connect that confirms a connection is
	// blocked (a slow answer on the loaded machine is no verdict).
	confirmTimeout = 500 * time.Millisecond
	// changeWithin bounds the wait for one change, benchWithin the whole
	// measurement.
	changeWithin = 30 * time.Second
	benchWithin  = 8 * time.Minute
	bridge       = "contivVxlanBridge"
	network      = "default-net"
	cniNet       = "contiv-net"
	// markerPort is a second port the server listens on: the last of the
	// policies in place for the flow count allows it, so reaching it tells
	// that the whole set is installed.
	markerPort = testbed.TrafficPort + 1
)

// pod is a container namespace attached through contivk8s.
type pod struct {
	c    *testbed.Container
	ip   string
	args string // CNI_ARGS
}

// cni runs "cnitool verb contiv-net <netns>" against the host's netplugin
// (the configuration in confDir).
func cni(tool, plugin, confDir, verb string, p *pod) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, tool, verb, cniNet, p.c.NSPath())
	cmd.Env = append(os.Environ(), "NETCONFPATH="+confDir, "CNI_PATH="+filepath.Dir(plugin), "CNI_ARGS="+p.args)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// newPod creates a pod in the API server (app label, the contiv network,
// a container port on TrafficPort), attaches a namespace on h with cnitool
// and writes the address into the pod's status as the kubelet would.
func newPod(ctx context.Context, b *testing.B, cs kubernetes.Interface, tool, plugin string, h *testbed.Host, name, app string) *pod {
	b.Helper()
	confDir := filepath.Join(h.Dir, "net.d")
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(confDir, "10-contiv.conflist"), testbed.ContivConfList(h, "1.0.0"), 0o644); err != nil {
		b.Fatal(err)
	}
	kp, err := cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": app, k8splugin.LabelNetwork: network}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause",
			Ports: []corev1.ContainerPort{{Name: "echo", ContainerPort: int32(testbed.TrafficPort)}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		b.Fatalf("create pod %s: %v", name, err)
	}
	p := &pod{c: h.NewContainerNS(b, name), args: fmt.Sprintf("K8S_POD_NAMESPACE=default;K8S_POD_NAME=%s;K8S_POD_UID=%s", name, kp.UID)}
	out, err := cni(tool, plugin, confDir, "add", p)
	if err != nil {
		b.Fatalf("cnitool add %s on %s: %v\n%s", name, h.Name, err, out)
	}
	b.Cleanup(func() { _, _ = cni(tool, plugin, confDir, "del", p) })
	res, err := current.NewResult([]byte(out))
	if err != nil {
		b.Fatalf("ADD result of %s: %v\n%s", name, err, out)
	}
	r, err := current.GetResult(res)
	if err != nil || len(r.IPs) != 1 {
		b.Fatalf("ADD result of %s: %v, want one address:\n%s", name, err, out)
	}
	p.ip = r.IPs[0].Address.IP.String()
	p.c.IP = p.ip
	kp.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: p.ip, PodIPs: []corev1.PodIP{{IP: p.ip}}}
	if _, err := cs.CoreV1().Pods("default").UpdateStatus(ctx, kp, metav1.UpdateOptions{}); err != nil {
		b.Fatalf("pod %s status: %v", name, err)
	}
	return p
}

// connect opens one TCP connection from the client's namespace to addr
// within timeout and closes it.
func connect(ns, addr string, timeout time.Duration) error {
	return ovstest.DoInNetNS(ns, func() error {
		c, err := (&net.Dialer{Timeout: timeout}).Dial("tcp", addr)
		if err != nil {
			return err
		}
		return c.Close()
	})
}

// waitOpen starts a connection attempt to addr every pollEvery, without
// waiting for the earlier ones (a SYN the datapath dropped is not sent
// again within probeTimeout, so one attempt at a time would see a change
// only after the attempt in flight timed out), and returns when the
// earliest attempt that succeeded started.
func waitOpen(ctx context.Context, ns, addr string) (time.Time, error) {
	type result struct {
		start time.Time
		err   error
	}
	results := make(chan result, probeTimeout/pollEvery+2)
	inFlight := 0
	var first time.Time
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			for ; inFlight > 0; inFlight-- {
				<-results
			}
			return time.Time{}, fmt.Errorf("%s never became reachable: %w", addr, ctx.Err())
		case r := <-results:
			inFlight--
			if r.err == nil && (first.IsZero() || r.start.Before(first)) {
				first = r.start
			}
		case <-tick.C:
			if first.IsZero() && inFlight < maxInFlight {
				inFlight++
				go func(start time.Time) {
					results <- result{start, connect(ns, addr, probeTimeout)}
				}(time.Now())
			}
		}
		// Once one succeeded, the attempts still in flight all started
		// earlier: wait for them, one of them may have succeeded too.
		if !first.IsZero() && inFlight == 0 {
			return first, nil
		}
	}
}

// waitBlocked polls until connections to addr fail (two short attempts in
// a row, then a long one) and returns when the first of those failing
// attempts started: its SYN was already dropped.
func waitBlocked(ctx context.Context, ns, addr string) (time.Time, error) {
	var first time.Time
	fails := 0
	for {
		start := time.Now()
		if err := connect(ns, addr, probeTimeout); err == nil {
			first, fails = time.Time{}, 0
		} else {
			if fails == 0 {
				first = start
			}
			fails++
			if fails >= 2 {
				if connect(ns, addr, confirmTimeout) != nil {
					return first, nil
				}
				first, fails = time.Time{}, 0
			}
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("%s never became blocked: %w", addr, ctx.Err())
		case <-time.After(pollEvery):
		}
	}
}

// netpolFlows counts the flows of cookie category 11 (netpol) on h's
// bridge.
func netpolFlows(h *testbed.Host) (int, error) {
	out, err := h.Ofctl("dump-flows", bridge)
	if err != nil {
		return 0, fmt.Errorf("dump flows on %s: %w", h.Name, err)
	}
	n := 0
	for _, line := range strings.Split(out, "\n") {
		field, _, _ := strings.Cut(strings.TrimSpace(line), ",")
		v, ok := strings.CutPrefix(field, "cookie=")
		if !ok {
			continue
		}
		cookie, err := strconv.ParseUint(strings.TrimPrefix(v, "0x"), 16, 64)
		if err != nil {
			return 0, fmt.Errorf("flow on %s: cookie %q: %w", h.Name, v, err)
		}
		if pipeline.CookieCategory(cookie) == pipeline.CatNetpol {
			n++
		}
	}
	return n, nil
}

func BenchmarkNetworkPolicyEnforcement(b *testing.B) {
	tool := testbed.FindCnitool(b)
	plugin, err := testbed.BuildCNIPlugin()
	if err != nil {
		b.Fatal(err)
	}
	tb, k := testbed.StartKube(b, 2)
	if out, err := tb.Netctl("net", "create", "--encap", "vxlan", "--subnet", "198.19.52.0/24", "--gateway", "198.19.52.254", network); err != nil {
		b.Fatalf("net create: %v\n%s", err, out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), benchWithin)
	defer cancel()
	// No client-side rate limit (client-go's default is 5 requests a
	// second): the creates go out when the benchmark makes them.
	rc := k.RESTConfig(b)
	rc.QPS, rc.Burst = 1000, 1000
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		b.Fatal(err)
	}
	client := newPod(ctx, b, cs, tool, plugin, tb.Hosts[0], "client", "client")
	server := newPod(ctx, b, cs, tool, plugin, tb.Hosts[1], "server", "server")
	server.c.ServeTraffic(b, testbed.TrafficPort, markerPort)
	addr := net.JoinHostPort(server.ip, strconv.Itoa(testbed.TrafficPort))
	marker := net.JoinHostPort(server.ip, strconv.Itoa(markerPort))
	// Before any policy: TCP and UDP reach the server.
	wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
	_, err = waitOpen(wctx, client.c.NS, addr)
	wcancel()
	if err != nil {
		b.Fatal(err)
	}
	if err := client.c.CheckTraffic(server.ip, testbed.TrafficPort, 10*time.Second); err != nil {
		b.Fatalf("no policy: %v", err)
	}

	pols := cs.NetworkingV1().NetworkPolicies("default")
	serverSel := metav1.LabelSelector{MatchLabels: map[string]string{"app": "server"}}
	ingress := func(name string, rule networkingv1.NetworkPolicyIngressRule) *networkingv1.NetworkPolicy {
		return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: networkingv1.NetworkPolicySpec{PodSelector: serverSel,
				Ingress:     []networkingv1.NetworkPolicyIngressRule{rule},
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}}}
	}
	fromClient := func(port int) networkingv1.NetworkPolicyIngressRule {
		p, proto := intstr.FromInt32(int32(port)), corev1.ProtocolTCP
		return networkingv1.NetworkPolicyIngressRule{
			From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "client"}}}},
			Ports: []networkingv1.NetworkPolicyPort{{Port: &p, Protocol: &proto}}}
	}
	create := func(p *networkingv1.NetworkPolicy) time.Time {
		b.Helper()
		start := time.Now()
		if _, err := pols.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			b.Fatalf("create policy %s: %v", p.Name, err)
		}
		return start
	}
	remove := func(name string) {
		b.Helper()
		if err := pols.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			b.Fatalf("delete policy %s: %v", name, err)
		}
	}
	wait := func(what string, f func(context.Context, string, string) (time.Time, error), target string) time.Time {
		b.Helper()
		wctx, wcancel := context.WithTimeout(ctx, changeWithin)
		defer wcancel()
		at, err := f(wctx, client.c.NS, target)
		if err != nil {
			b.Fatalf("%s: %v", what, err)
		}
		return at
	}

	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		var deny, allow, restore []time.Duration
		for i := 0; i < policies; i++ {
			// Isolate the server: ingress only from pods labelled
			// bench=<i>, which the client is not.
			dname, aname := fmt.Sprintf("deny-%d-%d", n, i), fmt.Sprintf("allow-%d-%d", n, i)
			start := create(ingress(dname, networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{
				{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"bench": strconv.Itoa(i)}}}}}))
			deny = append(deny, wait(dname, waitBlocked, addr).Sub(start))
			// Let the client in on the traffic port.
			start = create(ingress(aname, fromClient(testbed.TrafficPort)))
			allow = append(allow, wait(aname, waitOpen, addr).Sub(start))
			// Both gone (allow first, so the server stays isolated until
			// the last delete): open again before the next round.
			remove(aname)
			start = time.Now()
			remove(dname)
			restore = append(restore, wait("after deleting "+dname, waitOpen, addr).Sub(start))
		}

		// Flows per policy: 100 ingress policies on the server, each
		// allowing the client on its own TCP port; the last one's port is
		// the marker the server listens on.
		before, err := netpolFlows(tb.Hosts[1])
		if err != nil {
			b.Fatal(err)
		}
		clientBefore, err := netpolFlows(tb.Hosts[0])
		if err != nil {
			b.Fatal(err)
		}
		var names []string
		var batchStart time.Time
		for i := 0; i < policies; i++ {
			port := 20000 + i
			if i == policies-1 {
				port = markerPort
			}
			name := fmt.Sprintf("flows-%d-%d", n, i)
			names = append(names, name)
			at := create(ingress(name, fromClient(port)))
			if i == 0 {
				batchStart = at
			}
		}
		creates := time.Since(batchStart)
		batch := wait("the last of the flow policies", waitOpen, marker).Sub(batchStart)
		// The other ports stay shut: the set is what is enforced.
		if err := connect(client.c.NS, addr, confirmTimeout); err == nil {
			b.Fatalf("%s reachable with only the flow policies in place", addr)
		}
		after, err := netpolFlows(tb.Hosts[1])
		if err != nil {
			b.Fatal(err)
		}
		clientAfter, err := netpolFlows(tb.Hosts[0])
		if err != nil {
			b.Fatal(err)
		}
		for _, name := range names {
			remove(name)
		}
		wait("after deleting the flow policies", waitOpen, addr)

		b.ReportMetric(benchstat.PercentileMs(deny, 50), "ms-deny-p50")
		b.ReportMetric(benchstat.PercentileMs(deny, 99), "ms-deny-p99")
		b.ReportMetric(benchstat.PercentileMs(allow, 50), "ms-allow-p50")
		b.ReportMetric(benchstat.PercentileMs(allow, 99), "ms-allow-p99")
		b.ReportMetric(benchstat.PercentileMs(restore, 50), "ms-delete-p50")
		b.ReportMetric(benchstat.PercentileMs(restore, 99), "ms-delete-p99")
		b.ReportMetric(float64(batch.Microseconds())/1000, "ms-100-policies")
		b.ReportMetric(float64(after-before)/policies, "flows/policy")
		b.Logf("time to enforcement over %d policies each: isolate the server p50 %.1f ms p99 %.1f ms; "+
			"allow the client p50 %.1f ms p99 %.1f ms; delete both until open p50 %.1f ms p99 %.1f ms; "+
			"%d policies at once %.1f ms (their creates took %.1f ms)",
			policies, benchstat.PercentileMs(deny, 50), benchstat.PercentileMs(deny, 99),
			benchstat.PercentileMs(allow, 50), benchstat.PercentileMs(allow, 99),
			benchstat.PercentileMs(restore, 50), benchstat.PercentileMs(restore, 99),
			policies, float64(batch.Microseconds())/1000, float64(creates.Microseconds())/1000)
		b.Logf("netpol flows (cookie category %d) on the server host: %d with no policy, %d with %d policies: %.2f per policy; client host: %d and %d",
			uint8(pipeline.CatNetpol), before, after, policies, float64(after-before)/policies, clientBefore, clientAfter)
		if after <= before {
			b.Errorf("no netpol flows added by %d policies (%d before, %d after)", policies, before, after)
		}
	}
}
