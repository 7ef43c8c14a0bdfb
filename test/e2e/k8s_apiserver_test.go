package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/mgmtfn/k8splugin"
	"github.com/contiv/netplugin/test/testbed"
)

// TestKubernetesAPIServerLabels runs a real kube-apiserver next to
// netmaster and two netplugins in kubernetes mode that watch it
// (--k8s-config): pods created in the API server with contiv labels and
// attached through cnitool land in the group their API server labels name,
// not the one their CNI_ARGS name, and reach each other across hosts.
func TestKubernetesAPIServerLabels(t *testing.T) {
	tool := testbed.FindCnitool(t)
	plugin, err := testbed.BuildCNIPlugin()
	if err != nil {
		t.Fatal(err)
	}
	tb, k := testbed.StartKube(t, 2)

	netctl(t, tb, "net", "create", "--encap", "vxlan", "--subnet", "198.19.21.0/24", "--gateway", "198.19.21.254", "default-net")
	netctl(t, tb, "group", "create", "default-net", "web")
	netctl(t, tb, "group", "create", "default-net", "decoy")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := k.Client(t)
	var pods []*pod
	for i, ch := range []*cniHost{newCNIHost(t, tb.Hosts[0], "1.0.0"), newCNIHost(t, tb.Hosts[1], "1.0.0")} {
		name := []string{"web-0", "web-1"}[i]
		kp, err := cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
				k8splugin.LabelNetwork: "default-net", k8splugin.LabelGroup: "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create pod %s: %v", name, err)
		}
		c := ch.h.NewContainerNS(t, name)
		p := &pod{ctr: &ctr{Container: c, host: ch.h, tenant: "default", network: "default-net"}, ch: ch,
			args: "K8S_POD_NAMESPACE=default;K8S_POD_NAME=" + name + ";K8S_POD_UID=" + string(kp.UID) + ";CONTIV_NET_GROUP=decoy"}
		out, err := p.tool(t, tool, plugin, "add")
		if err != nil {
			t.Fatalf("ADD of %s on %s: %v\n%s", name, ch.h.Name, err, out)
		}
		p.res.IPAddress = resultAddress(t, out)
		p.IP = p.ip()
		pods = append(pods, p)
	}

	group := func(name string) contivmodel.EndpointGroupOper {
		var v struct{ Oper contivmodel.EndpointGroupOper }
		getJSON(t, tb.HTTPClient(), tb.MasterURL()+"/api/v1/inspect/endpointGroups/default:"+name+"/", &v)
		return v.Oper
	}
	if g := group("web"); g.NumEndpoints != 2 {
		t.Fatalf("group web (the API server's label) has %+v, want both pods", g)
	}
	if g := group("decoy"); g.NumEndpoints != 0 {
		t.Fatalf("group decoy (CNI_ARGS) has %+v, want none", g)
	}

	a, b := pods[0], pods[1]
	a.ServeTraffic(t)
	b.ServeTraffic(t)
	if err := trafficOK(a.ctr, b.ctr, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := trafficOK(b.ctr, a.ctr, 30*time.Second); err != nil {
		t.Fatal(err)
	}

	for _, p := range pods {
		if out, err := p.tool(t, tool, plugin, "del"); err != nil {
			t.Fatalf("DEL of %s: %v\n%s", p.Name, err, out)
		}
	}
	if op := networkOper(t, tb); op.NumEndpoints != 0 {
		t.Fatalf("%d endpoints left in default-net after DEL", op.NumEndpoints)
	}
}

// resultAddress is the single address/prefix of a CNI ADD result.
func resultAddress(t *testing.T, out string) string {
	t.Helper()
	res, err := current.NewResult([]byte(out))
	if err != nil {
		t.Fatalf("ADD result: %v\n%s", err, out)
	}
	r, err := current.GetResult(res)
	if err != nil || len(r.IPs) != 1 {
		t.Fatalf("ADD result: %v, want one address:\n%s", err, out)
	}
	return r.IPs[0].Address.String()
}
