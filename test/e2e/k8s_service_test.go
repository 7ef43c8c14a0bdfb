package e2e

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/contiv/netplugin/test/ovstest"
	"github.com/contiv/netplugin/test/testbed"
)

// serveUDPIdentity answers every datagram to port in the container with its
// name, until the test ends.
func serveUDPIdentity(t *testing.T, c *ctr, port int) {
	t.Helper()
	var pc net.PacketConn
	if err := ovstest.DoInNetNS(c.NS, func() (err error) {
		pc, err = net.ListenPacket("udp", fmt.Sprintf(":%d", port))
		return err
	}); err != nil {
		t.Fatalf("listen in %s: %v", c.Name, err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			_, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = pc.WriteTo([]byte(c.Name), from)
		}
	}()
}

// askUDPIdentity sends one datagram from c to addr (three tries, 1 s each)
// and returns the name in the answer.
func askUDPIdentity(c *ctr, addr string) (string, error) {
	var conn net.Conn
	if err := ovstest.DoInNetNS(c.NS, func() (err error) {
		conn, err = net.Dial("udp", addr)
		return err
	}); err != nil {
		return "", err
	}
	defer conn.Close()
	buf := make([]byte, 512)
	var err error
	for try := 0; try < 3; try++ {
		if _, err = conn.Write([]byte("who")); err != nil {
			continue
		}
		_ = conn.SetReadDeadline(time.Now().Add(time.Second))
		var n int
		if n, err = conn.Read(buf); err == nil {
			return string(buf[:n]), nil
		}
	}
	return "", err
}

// TestKubernetesService is the Service acceptance of issue 17 (docs/k8s.md,
// "Services"): a Service created in a real API server, with an
// EndpointSlice naming two backend pods on two hosts, spreads TCP
// connections to its ClusterIP over both and answers UDP; a backend
// removed from the slice gets no new connections; deleting the Service
// removes its flows and groups.
func TestKubernetesService(t *testing.T) {
	tool := testbed.FindCnitool(t)
	plugin, err := testbed.BuildCNIPlugin()
	if err != nil {
		t.Fatal(err)
	}
	tb, k := testbed.StartKube(t, 2)
	defer tb.DumpOnFailure(t)
	netctl(t, tb, "net", "create", "--encap", "vxlan", "--subnet", "198.19.23.0/24", "--gateway", "198.19.23.254", "default-net")

	h0, h1 := tb.Hosts[0], tb.Hosts[1]
	ch0, ch1 := newCNIHost(t, h0, "1.0.0"), newCNIHost(t, h1, "1.0.0")
	client := addPod(t, tool, plugin, ch0, "client")
	backends := map[string]*pod{"web-0": addPod(t, tool, plugin, ch0, "web-0"), "web-1": addPod(t, tool, plugin, ch1, "web-1")}
	for _, b := range backends {
		serveIdentity(t, b.ctr, 8080)
		serveUDPIdentity(t, b.ctr, 5353)
	}

	const vip = "198.19.200.50" // in testbed.KubeServiceRange
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cs := k.Client(t)
	// The TCP port's targetPort is named (the slice resolves it), the UDP
	// port's is a number.
	_, err = cs.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{ClusterIP: vip, Ports: []corev1.ServicePort{
			{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromString("http")},
			{Name: "echo", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt32(5353)},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create service: %v", err)
	}
	// There is no controller-manager: the test writes the EndpointSlice
	// the endpoint-slice controller would.
	slice := func(names ...string) *discoveryv1.EndpointSlice {
		http, echo := "http", "echo"
		tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
		p8080, p5353 := int32(8080), int32(5353)
		s := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: "web-abcde", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports: []discoveryv1.EndpointPort{{Name: &http, Protocol: &tcp, Port: &p8080},
				{Name: &echo, Protocol: &udp, Port: &p5353}},
		}
		yes := true
		for _, n := range names {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{backends[n].ip()},
				Conditions: discoveryv1.EndpointConditions{Ready: &yes}})
		}
		return s
	}
	if _, err := cs.DiscoveryV1().EndpointSlices("default").Create(ctx, slice("web-0", "web-1"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create endpoint slice: %v", err)
	}

	target := vip + ":80"
	waitUntil(t, 60*time.Second, "the ClusterIP answers", func() (bool, string) {
		who, err := askIdentity(client.ctr, target)
		return err == nil && who != "", fmt.Sprint(who, err)
	})

	t.Run("100 TCP connections reach both backends", func(t *testing.T) {
		got := spread(t, client.ctr, target, 100)
		t.Logf("100 connections to %s: %v", target, got)
		for name := range backends {
			if got[name] < 20 {
				t.Errorf("backend %s got %d of 100 connections (%v), want ≥ 20", name, got[name], got)
			}
		}
	})

	t.Run("UDP to the ClusterIP", func(t *testing.T) {
		who, err := askUDPIdentity(client.ctr, vip+":53")
		if err != nil || backends[who] == nil {
			t.Fatalf("UDP to %s:53 answered %q, %v; want a backend's name", vip, who, err)
		}
	})

	t.Run("a backend removed from the EndpointSlice gets no new connections", func(t *testing.T) {
		if _, err := cs.DiscoveryV1().EndpointSlices("default").Update(ctx, slice("web-1"), metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update endpoint slice: %v", err)
		}
		gone := backends["web-0"].ip()
		waitUntil(t, 30*time.Second, "web-0 out of the client host's datapath", func() (bool, string) {
			groups, _ := h0.Ofctl("dump-groups", "contivVxlanBridge")
			dp, _ := h0.OVS.Appctl("ovs-vswitchd", "dpctl/dump-flows")
			return !strings.Contains(groups, gone+":") && !strings.Contains(dp, "nat(dst="+gone+":"), groups
		})
		got := spread(t, client.ctr, target, 50)
		if got["web-0"] != 0 || got["web-1"] != 50 {
			t.Errorf("after web-0 left the slice, 50 connections went %v", got)
		}
	})

	t.Run("deleting the Service removes its flows and groups", func(t *testing.T) {
		if err := cs.CoreV1().Services("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete service: %v", err)
		}
		for _, h := range []*testbed.Host{h0, h1} {
			waitUntil(t, 30*time.Second, "service flows gone on "+h.Name, func() (bool, string) {
				flows, _ := h.Ofctl("dump-flows", "contivVxlanBridge")
				groups, _ := h.Ofctl("dump-groups", "contivVxlanBridge")
				left := strings.Contains(flows, vip) || strings.Contains(groups, "type=select")
				for _, l := range strings.Split(flows, "\n") {
					// NetworkPolicy's conntrack (zone 0x4001 = 16385) stays
					// while an API server is configured (docs/k8s.md).
					if strings.Contains(l, "ct(") && !strings.Contains(l, "zone=16385") {
						left = true
					}
				}
				return !left, flows + groups
			})
		}
		if who, err := askIdentity(client.ctr, target); err == nil {
			t.Errorf("the ClusterIP still answers (%q) after the Service was deleted", who)
		}
	})
}
