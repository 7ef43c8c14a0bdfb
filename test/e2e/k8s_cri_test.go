package e2e

import (
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/contiv/netplugin/api/attach"
	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/mgmtfn/k8splugin"
	"github.com/contiv/netplugin/test/testbed"
)

// criPod is a pod created in the API server and run by a host's
// containerd with "crictl runp".
type criPod struct {
	*ctr
	p *testbed.Pod
}

// runCRIPod creates the pod in the API server (with labels), then runs its
// sandbox with the same name, namespace, UID and labels, as a kubelet
// would.
func runCRIPod(t *testing.T, cs kubernetes.Interface, c *testbed.CRI, name string, labels map[string]string) *criPod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kp, err := cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.PodSpec{NodeName: c.Host.Name, Containers: []corev1.Container{{Name: "c", Image: testbed.PauseImage}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
	p := c.RunPod(t, testbed.PodConfig{Name: name, Namespace: "default", UID: string(kp.UID), Labels: labels})
	return &criPod{ctr: &ctr{Container: p.Container, host: c.Host, tenant: "default", network: "default-net", id: p.ID,
		res: attach.Result{IPAddress: p.IP + "/32"}}, p: p}
}

func groupOper(t *testing.T, tb *testbed.Testbed, name string) contivmodel.EndpointGroupOper {
	t.Helper()
	var v struct{ Oper contivmodel.EndpointGroupOper }
	getJSON(t, tb.HTTPClient(), tb.MasterURL()+"/api/v1/inspect/endpointGroups/default:"+name+"/", &v)
	return v.Oper
}

// checkNothingLeft asserts that no sandbox, attachment record, OVS
// endpoint port, netmaster endpoint or address is left.
func checkNothingLeft(t *testing.T, tb *testbed.Testbed, start contivmodel.NetworkOper, cris ...*testbed.CRI) {
	t.Helper()
	for _, c := range cris {
		if ids, err := c.Sandboxes(); err != nil || len(ids) != 0 {
			t.Errorf("sandboxes left on %s: %v %v", c.Host.Name, ids, err)
		}
		if r := records(t, c.Host); len(r) != 0 {
			t.Errorf("attachment records left on %s: %v", c.Host.Name, r)
		}
		if p := endpointPorts(t, c.Host); len(p) != 0 {
			t.Errorf("OVS ports left on %s: %v", c.Host.Name, p)
		}
	}
	end := networkOper(t, tb)
	if end.NumEndpoints != 0 || end.AllocatedAddressesCount != start.AllocatedAddressesCount {
		t.Errorf("netmaster after the pods went: %d endpoints, %d addresses allocated (%s); want 0 and %d",
			end.NumEndpoints, end.AllocatedAddressesCount, end.AllocatedIPAddresses, start.AllocatedAddressesCount)
	}
}

// removePod stops the sandbox and removes it: the runtime sends DEL
// twice.
func removePod(t *testing.T, p *criPod) {
	t.Helper()
	if err := p.p.Stop(); err != nil {
		t.Fatalf("stopp %s: %v", p.Name, err)
	}
	if err := p.p.Remove(); err != nil {
		t.Fatalf("rmp %s: %v", p.Name, err)
	}
}

// TestKubernetesCRI runs pods the way a kubelet does: created in the real
// API server, then run by containerd's CRI plugin inside each simulated
// host ("crictl runp"), which calls contivk8s for the CNI ADD. The pods
// get addresses of default-net from netmaster, exchange ping, TCP and UDP
// across hosts, land in the group their API server labels name, and
// stopping and removing the sandboxes (two DELs each) releases the
// endpoints, OVS ports, attachment records and addresses.
func TestKubernetesCRI(t *testing.T) {
	tb, k := testbed.StartKube(t, 2)
	netctl(t, tb, "net", "create", "--encap", "vxlan", "--subnet", "198.19.23.0/24", "--gateway", "198.19.23.254", "default-net")
	netctl(t, tb, "group", "create", "default-net", "web")
	start := networkOper(t, tb)
	c0, c1 := tb.Hosts[0].StartCRI(t, testbed.CRIOptions{}), tb.Hosts[1].StartCRI(t, testbed.CRIOptions{})
	cs := k.Client(t)

	web := runCRIPod(t, cs, c0, "web-0", map[string]string{k8splugin.LabelNetwork: "default-net", k8splugin.LabelGroup: "web", "app": "web"})
	plain := runCRIPod(t, cs, c1, "plain-1", map[string]string{"app": "plain"})
	_, subnet, _ := net.ParseCIDR("198.19.23.0/24")
	for _, p := range []*criPod{web, plain} {
		if !subnet.Contains(net.ParseIP(p.ip())) {
			t.Fatalf("%s got %s, outside default-net", p.Name, p.ip())
		}
		if out, err := p.Exec("ip", "-o", "addr", "show", "eth0"); err != nil || !strings.Contains(out, p.ip()+"/24") {
			t.Fatalf("eth0 of %s: %v\n%s", p.Name, err, out)
		}
	}
	if op := networkOper(t, tb); op.NumEndpoints != 2 {
		t.Fatalf("netmaster has %d endpoints in default-net, want 2", op.NumEndpoints)
	}
	if g := groupOper(t, tb, "web"); g.NumEndpoints != 1 || len(g.Endpoints) != 1 ||
		len(g.Endpoints[0].IpAddress) == 0 || g.Endpoints[0].IpAddress[0] != web.ip() {
		t.Fatalf("group web: %+v, want web-0 (%s) only", g, web.ip())
	}

	srvs := []*testbed.Server{web.ServeTraffic(t), plain.ServeTraffic(t)}
	if err := trafficOK(web.ctr, plain.ctr, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := trafficOK(plain.ctr, web.ctr, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, s := range srvs {
		s.Stop()
	}

	for _, p := range []*criPod{web, plain} {
		removePod(t, p)
	}
	checkNothingLeft(t, tb, start, c0, c1)
	if g := groupOper(t, tb, "web"); g.NumEndpoints != 0 {
		t.Errorf("group web after the pods went: %+v", g)
	}
}

// TestKubernetesNetpluginRestart restarts the netplugin of one host while
// pods run on both: continuous ping and TCP exchanges between pods across
// the hosts lose nothing, the restarted netplugin attaches a new pod, and
// once every sandbox is removed nothing is left.
func TestKubernetesNetpluginRestart(t *testing.T) {
	tb, k := testbed.StartKube(t, 2)
	netctl(t, tb, "net", "create", "--encap", "vxlan", "--subnet", "198.19.24.0/24", "--gateway", "198.19.24.254", "default-net")
	start := networkOper(t, tb)
	h0 := tb.Hosts[0]
	c0, c1 := h0.StartCRI(t, testbed.CRIOptions{}), tb.Hosts[1].StartCRI(t, testbed.CRIOptions{})
	cs := k.Client(t)
	a := runCRIPod(t, cs, c0, "a", nil)
	b := runCRIPod(t, cs, c1, "b", nil)
	c := runCRIPod(t, cs, c1, "c", nil)
	pods := []*criPod{a, b, c}
	var srvs []*testbed.Server
	for _, p := range pods {
		srvs = append(srvs, p.ServeTraffic(t))
	}
	if err := trafficOK(b.ctr, a.ctr, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := trafficOK(a.ctr, c.ctr, 30*time.Second); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pingBA := b.StartPinger(ctx, a.ip())
	pingAC := a.StartPinger(ctx, c.ip())
	// TCP request/response from c to a, back to back.
	var tcpOK, tcpFail atomic.Int64
	var firstErr atomic.Value
	tcpCtx, stopTCP := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for tcpCtx.Err() == nil {
			if err := c.TCPEcho(a.ip(), testbed.TrafficPort, 64, trafficTimeout); err != nil {
				tcpFail.Add(1)
				firstErr.CompareAndSwap(nil, err)
			} else {
				tcpOK.Add(1)
			}
			select {
			case <-tcpCtx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	})
	time.Sleep(3 * time.Second)

	h0.RestartNetplugin(t)
	// The restarted netplugin is back when it attaches a new pod.
	var d *criPod
	deadline := time.Now().Add(90 * time.Second)
	for d == nil {
		kp, err := cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "d"},
			Spec: corev1.PodSpec{NodeName: h0.Name, Containers: []corev1.Container{{Name: "c", Image: testbed.PauseImage}}}}, metav1.CreateOptions{})
		if err != nil && !strings.Contains(err.Error(), "already exists") {
			t.Fatalf("create pod d: %v", err)
		}
		uid := ""
		if kp != nil {
			uid = string(kp.UID)
		} else if got, err := cs.CoreV1().Pods("default").Get(ctx, "d", metav1.GetOptions{}); err == nil {
			uid = string(got.UID)
		}
		p, err := c0.TryRunPod(testbed.PodConfig{Name: "d", Namespace: "default", UID: uid})
		if err == nil {
			d = &criPod{ctr: &ctr{Container: p.Container, host: h0, tenant: "default", network: "default-net", id: p.ID,
				res: attach.Result{IPAddress: p.IP + "/32"}}, p: p}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pod attached on %s after the restart: %v\n%s", h0.Name, err, h0.Logs())
		}
		time.Sleep(time.Second)
	}
	// Sandboxes of d whose ADD failed while netplugin was down could not
	// be stopped then (their DEL failed too); the kubelet removes them
	// once the plugin answers, and so does the test.
	out, err := c0.Crictl("pods", "-q", "--name", "^d$")
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, id := range strings.Fields(out) {
		if id == d.id {
			continue
		}
		failed++
		if _, err := c0.Crictl("stopp", id); err != nil {
			t.Fatalf("stopp of a failed sandbox: %v", err)
		}
		if _, err := c0.Crictl("rmp", id); err != nil {
			t.Fatalf("rmp of a failed sandbox: %v", err)
		}
	}
	t.Logf("%d runp of d failed while netplugin restarted; their sandboxes removed", failed)
	time.Sleep(3 * time.Second)
	stopTCP()
	wg.Wait()
	for name, p := range map[string]*testbed.Pinger{"b→a": pingBA, "a→c": pingAC} {
		st := p.Stop()
		t.Logf("ping %s across the restart: %d sent, %d received, longest run lost %d", name, st.Sent, st.Received, st.MaxLost)
		if st.Err != nil || st.Sent < 10 || st.MaxLost != 0 {
			t.Errorf("ping %s lost packets across the netplugin restart: %+v\n%s", name, st, st.Output)
		}
	}
	t.Logf("TCP c→a across the restart: %d exchanges, %d failed", tcpOK.Load(), tcpFail.Load())
	if tcpFail.Load() != 0 || tcpOK.Load() < 5 {
		t.Errorf("TCP c→a across the netplugin restart: %d ok, %d failed (first: %v)", tcpOK.Load(), tcpFail.Load(), firstErr.Load())
	}
	srvs = append(srvs, d.ServeTraffic(t))
	if err := trafficOK(b.ctr, d.ctr, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := trafficOK(d.ctr, a.ctr, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, s := range srvs {
		s.Stop()
	}
	for _, p := range append(pods, d) {
		removePod(t, p)
	}
	checkNothingLeft(t, tb, start, c0, c1)
}
