package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/contiv/netplugin/mgmtfn/k8splugin"
	"github.com/contiv/netplugin/test/testbed"
)

// TestNetworkPolicyFirstPacket (issue 23; docs/k8s.md "NetworkPolicy"): a
// new pod selected by a default-deny ingress policy is isolated from the
// first packet. Its echo listens before its ADD; the moment its interface
// is up with its address (and its status.podIP is still unwritten: there is
// no kubelet here, the test writes statuses), TCP and UDP probes from a
// client pod on the same host and one on the other host are refused. Its
// own connections out still work (the interface is usable).
func TestNetworkPolicyFirstPacket(t *testing.T) {
	tool := testbed.FindCnitool(t)
	plugin, err := testbed.BuildCNIPlugin()
	if err != nil {
		t.Fatal(err)
	}
	tb, k := testbed.StartKube(t, 2)
	netctl(t, tb, "net", "create", "--encap", "vxlan", "--subnet", "198.19.32.0/24", "--gateway", "198.19.32.254", "default-net")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cs := k.Client(t)
	hosts := []*cniHost{newCNIHost(t, tb.Hosts[0], "1.0.0"), newCNIHost(t, tb.Hosts[1], "1.0.0")}
	clients := []*pod{
		netpolPod(ctx, t, cs, tool, plugin, hosts[0], "default", "client-0", "client"),
		netpolPod(ctx, t, cs, tool, plugin, hosts[1], "default", "client-1", "client"),
	}
	for _, c := range clients {
		c.ServeTraffic(t)
	}
	// A server pod on each host with its status: once both are refused,
	// both hosts' controllers have the policy.
	olds := []*pod{
		netpolPod(ctx, t, cs, tool, plugin, hosts[0], "default", "server-old-0", "server"),
		netpolPod(ctx, t, cs, tool, plugin, hosts[1], "default", "server-old-1", "server"),
	}
	for _, o := range olds {
		o.ServeTraffic(t)
	}
	if _, err := cs.NetworkingV1().NetworkPolicies("default").Create(ctx, &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-server"},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "server"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, o := range olds {
		deadline := time.Now().Add(30 * time.Second)
		for clients[0].TCPEcho(o.ip(), testbed.TrafficPort, 64, 1500*time.Millisecond) == nil {
			if time.Now().After(deadline) {
				t.Fatalf("default deny never reached %s", o.Name)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	for i, ch := range hosts {
		name := fmt.Sprintf("server-new-%d", i)
		kp, err := cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "server", k8splugin.LabelNetwork: "default-net"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c := ch.h.NewContainerNS(t, name)
		c.ServeTraffic(t) // listening before the interface exists
		p := &pod{ctr: &ctr{Container: c, host: ch.h, tenant: "default", network: "default-net"}, ch: ch,
			args: fmt.Sprintf("K8S_POD_NAMESPACE=default;K8S_POD_NAME=%s;K8S_POD_UID=%s", name, kp.UID)}
		t.Cleanup(func() { _, _ = p.tool(t, tool, plugin, "del") })

		// Watch the namespace for the interface while the ADD runs.
		ifAddr := func() string {
			out, err := exec.Command("ip", "-n", c.NS, "-o", "-4", "addr", "show", "dev", "eth0", "up").Output()
			if f := strings.Fields(string(out)); err == nil && len(f) >= 4 && f[2] == "inet" {
				return strings.Split(f[3], "/")[0]
			}
			return ""
		}
		seen := make(chan string, 1)
		wctx, wcancel := context.WithCancel(ctx)
		go func() {
			for wctx.Err() == nil {
				if a := ifAddr(); a != "" {
					seen <- a
					return
				}
				time.Sleep(2 * time.Millisecond)
			}
		}()
		addDone := make(chan error, 1)
		var addOut string
		go func() {
			out, err := p.tool(t, tool, plugin, "add")
			addOut = out
			addDone <- err
		}()
		var ip string
		select {
		case ip = <-seen:
		case err := <-addDone:
			// The ADD won the race with the watch: the interface is up now
			// and the status still unwritten, so probe at once all the same.
			wcancel()
			if ip = ifAddr(); err != nil || ip == "" {
				t.Fatalf("ADD of %s ended (%v) without its interface up:\n%s", name, err, addOut)
			}
			addDone <- nil
		case <-ctx.Done():
			t.Fatal("interface never appeared")
		}
		wcancel()
		at := time.Now()
		type verdict struct {
			what string
			err  error
			sent time.Duration
		}
		var mu sync.Mutex
		var got []verdict
		var wg sync.WaitGroup
		for _, cl := range clients {
			for _, proto := range []string{"TCP", "UDP"} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					sent := time.Since(at)
					var err error
					if proto == "TCP" {
						err = cl.TCPEcho(ip, testbed.TrafficPort, 64, 1500*time.Millisecond)
					} else {
						_, err = cl.UDPEcho(ip, testbed.TrafficPort, 1500*time.Millisecond)
					}
					mu.Lock()
					got = append(got, verdict{fmt.Sprintf("%s %s (%s) → %s (%s, %s)", proto, cl.Name, cl.host.Name, name, ip, ch.h.Name), err, sent})
					mu.Unlock()
				}()
			}
		}
		// The status is not written yet when the probes go out.
		cur, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cur.Status.PodIP != "" {
			t.Fatalf("%s has status.podIP %q during the first probes", name, cur.Status.PodIP)
		}
		wg.Wait()
		for _, v := range got {
			if v.err == nil {
				t.Errorf("first packet: %s reached the new pod (probe sent %v after its interface was up); want refused by the default deny", v.what, v.sent.Round(time.Millisecond))
			} else {
				t.Logf("first packet refused: %s (sent %v after the interface was up)", v.what, v.sent.Round(time.Millisecond))
			}
		}
		if err := <-addDone; err != nil {
			t.Fatalf("ADD of %s: %v\n%s", name, err, addOut)
		}
		p.res.IPAddress = resultAddress(t, addOut)
		p.IP = p.ip()
		if p.ip() != ip {
			t.Fatalf("ADD answered %s, the interface had %s", p.ip(), ip)
		}
		// The pod's own connections out work: its interface is usable.
		for _, cl := range clients {
			if err := p.TCPEcho(cl.ip(), testbed.TrafficPort, 64, trafficTimeout); err != nil {
				t.Errorf("%s → %s: %v", name, cl.Name, err)
			}
			if _, err := p.UDPEcho(cl.ip(), testbed.TrafficPort, trafficTimeout); err != nil {
				t.Errorf("%s → %s UDP: %v", name, cl.Name, err)
			}
		}
		// And stay refused once the status is written.
		kp.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}}
		if _, err := cs.CoreV1().Pods("default").UpdateStatus(ctx, kp, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		for _, cl := range clients {
			if cl.TCPEcho(ip, testbed.TrafficPort, 64, 1500*time.Millisecond) == nil {
				t.Errorf("%s reached %s after its status was written", cl.Name, name)
			}
		}
	}
}
