package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	types020 "github.com/containernetworking/cni/pkg/types/020"

	"github.com/contiv/netplugin/api/attach"
	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/test/testbed"
)

// mesosCtr is a container namespace attached through netcontiv, with the
// network configuration Mesos wrote for it.
type mesosCtr struct {
	*ctr
	confDir string
}

// mesosNetConf is a network configuration as Mesos' CNI isolator writes
// it for one container (and passes on stdin): the operator's file from
// --network_cni_config_dir with the container's NetworkInfo, in
// protobuf JSON, added under args["org.apache.mesos"]["network_info"].
func mesosNetConf(h *testbed.Host, labels ...string) []byte {
	var ls []string
	for i := 0; i+1 < len(labels); i += 2 {
		ls = append(ls, fmt.Sprintf(`{"key":%q,"value":%q}`, labels[i], labels[i+1]))
	}
	return fmt.Appendf(nil, `{"args":{"org.apache.mesos":{"network_info":{"labels":{"labels":[%s]},"name":"contiv"}}},`+
		`"cniVersion":"0.2.0","logFile":%q,"name":"contiv","socket":%q,"type":"netcontiv"}`,
		strings.Join(ls, ","), filepath.Join(h.Dir, "netcontiv.log"), h.MesosSocket())
}

// cnitool runs "cnitool verb contiv <netns>" with the container's
// configuration folder (where Mesos keeps network.conf), CNI_IFNAME eth0
// and no CNI_ARGS, as Mesos runs the plugin.
func (m *mesosCtr) cnitool(t *testing.T, tool, plugin, verb string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, tool, verb, "contiv", m.NSPath())
	env := []string{"NETCONFPATH=" + m.confDir, "CNI_PATH=" + filepath.Dir(plugin), "CNI_IFNAME=eth0"}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "CNI_ARGS=") {
			env = append(env, e)
		}
	}
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func addMesos(t *testing.T, tool, plugin string, h *testbed.Host, name string, labels ...string) (*mesosCtr, string) {
	t.Helper()
	c := h.NewContainerNS(t, name)
	dir := filepath.Join(h.Dir, "mesos-isolator", name, "contiv")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "network.conf"), mesosNetConf(h, labels...), 0o644); err != nil {
		t.Fatal(err)
	}
	m := &mesosCtr{ctr: &ctr{Container: c, host: h}, confDir: dir}
	out, err := m.cnitool(t, tool, plugin, "add")
	if err != nil {
		t.Fatalf("cnitool add %s on %s: %v\n%s", name, h.Name, err, out)
	}
	res, err := types020.NewResult([]byte(out))
	if err != nil {
		t.Fatalf("ADD result of %s: %v\n%s", name, err, out)
	}
	r := res.(*types020.Result)
	if r.IP4 == nil {
		t.Fatalf("ADD result of %s has no ip4: %s", name, out)
	}
	c.IP = r.IP4.IP.IP.String()
	m.res = attach.Result{IPAddress: r.IP4.IP.String()}
	return m, out
}

// TestMesosCNI drives netcontiv with cnitool and configurations shaped as
// Mesos writes them on two hosts: the io.contiv.* labels of the
// container's NetworkInfo put it in its tenant, network and group;
// containers on both hosts exchange ping, TCP and UDP; a repeated ADD
// prints the same result; a Mesos container id on eth1 (through libcni)
// works alike; DEL twice succeeds and releases everything.
func TestMesosCNI(t *testing.T) {
	tool := testbed.FindCnitool(t)
	plugin, err := testbed.BuildMesosPlugin()
	if err != nil {
		t.Fatal(err)
	}
	tb := testbed.New(t, testbed.Config{Hosts: 2})
	netctl(t, tb, "tenant", "create", "mesos")
	netctl(t, tb, "net", "create", "-t", "mesos", "--encap", "vxlan", "--subnet", "198.19.30.0/24", "--gateway", "198.19.30.254", "web")
	netctl(t, tb, "group", "create", "-t", "mesos", "web", "front")
	netOper := func() contivmodel.NetworkOper {
		var v struct{ Oper contivmodel.NetworkOper }
		getJSON(t, tb.HTTPClient(), tb.MasterURL()+"/api/v1/inspect/networks/mesos:web/", &v)
		return v.Oper
	}
	start := netOper()
	h0, h1 := tb.Hosts[0], tb.Hosts[1]

	labels := []string{"io.contiv.tenant", "mesos", "io.contiv.network", "web", "io.contiv.net-group", "front", "DCOS_SPACE", "/app"}
	a, aOut := addMesos(t, tool, plugin, h0, "mesos-a", labels...)
	b, _ := addMesos(t, tool, plugin, h1, "mesos-b", labels...)
	c, _ := addMesos(t, tool, plugin, h0, "mesos-c", "io.contiv.tenant", "mesos", "io.contiv.network", "web")
	_, subnet, _ := net.ParseCIDR("198.19.30.0/24")
	for _, m := range []*mesosCtr{a, b, c} {
		if !subnet.Contains(net.ParseIP(m.ip())) {
			t.Fatalf("%s got %s, outside mesos/web", m.Name, m.ip())
		}
	}

	// Right tenant, network and group.
	if op := netOper(); op.NumEndpoints != 3 {
		t.Fatalf("netmaster has %d endpoints in mesos/web, want 3", op.NumEndpoints)
	}
	var gi struct{ Oper contivmodel.EndpointGroupOper }
	getJSON(t, tb.HTTPClient(), tb.MasterURL()+"/api/v1/inspect/endpointGroups/mesos:front/", &gi)
	var inGroup []string
	for _, ep := range gi.Oper.Endpoints {
		inGroup = append(inGroup, ep.EndpointID)
	}
	sort.Strings(inGroup)
	want := []string{cnitoolContainerID(a.NSPath()), cnitoolContainerID(b.NSPath())}
	sort.Strings(want)
	if strings.Join(inGroup, ",") != strings.Join(want, ",") {
		t.Fatalf("group mesos/front holds %v, want a and b %v", inGroup, want)
	}

	// Traffic across hosts and on one host.
	for _, m := range []*mesosCtr{a, b, c} {
		m.ServeTraffic(t)
	}
	for _, p := range [][2]*mesosCtr{{a, b}, {b, a}, {c, b}, {a, c}} {
		if err := trafficOK(p[0].ctr, p[1].ctr, 30*time.Second); err != nil {
			t.Fatal(err)
		}
	}

	// A repeated ADD prints the same result and changes nothing.
	out, err := a.cnitool(t, tool, plugin, "add")
	if err != nil || out != aOut {
		t.Fatalf("repeated ADD of a: %v\n%s\nfirst:\n%s", err, out, aOut)
	}
	if op := netOper(); op.NumEndpoints != 3 {
		t.Fatalf("after a repeated ADD: %d endpoints, want 3", op.NumEndpoints)
	}

	// A Mesos container id (a UUID) on the interface eth1, through libcni
	// as Mesos' isolator would call the plugin: endpoint <id>-eth1.
	e := h1.NewContainerNS(t, "mesos-e")
	cninet := libcni.NewCNIConfigWithCacheDir([]string{filepath.Dir(plugin)}, t.TempDir(), nil)
	econf, err := libcni.ConfFromBytes(mesosNetConf(h1, labels...))
	if err != nil {
		t.Fatal(err)
	}
	rt := &libcni.RuntimeConf{ContainerID: "5f2b9c1e-8d4a-4e7b-9a61-0c3d2e1f4a5b", NetNS: e.NSPath(), IfName: "eth1"}
	lctx, lcancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer lcancel()
	eres, err := cninet.AddNetwork(lctx, econf, rt)
	if err != nil {
		t.Fatalf("libcni ADD of a Mesos container on eth1: %v", err)
	}
	er, err := types020.GetResult(eres)
	if err != nil || er.IP4 == nil {
		t.Fatalf("libcni ADD result %v: %v", eres, err)
	}
	e.IP = er.IP4.IP.IP.String()
	em := &mesosCtr{ctr: &ctr{Container: e, host: h1, res: attach.Result{IPAddress: er.IP4.IP.String()}}}
	getJSON(t, tb.HTTPClient(), tb.MasterURL()+"/api/v1/inspect/endpointGroups/mesos:front/", &gi)
	found := false
	for _, ep := range gi.Oper.Endpoints {
		found = found || ep.EndpointID == rt.ContainerID+"-eth1"
	}
	if !found {
		t.Fatalf("group mesos/front after the eth1 ADD: %+v", gi.Oper.Endpoints)
	}
	em.ServeTraffic(t)
	if err := trafficOK(em.ctr, a.ctr, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := cninet.DelNetwork(lctx, econf, rt); err != nil {
			t.Fatalf("libcni DEL %d of the eth1 container: %v", i+1, err)
		}
	}

	// DEL twice releases everything.
	for _, m := range []*mesosCtr{a, b, c} {
		for i := 0; i < 2; i++ {
			if out, err := m.cnitool(t, tool, plugin, "del"); err != nil {
				t.Fatalf("DEL %d of %s: %v\n%s", i+1, m.Name, err, out)
			}
		}
	}
	end := netOper()
	if end.NumEndpoints != 0 || end.AllocatedAddressesCount != start.AllocatedAddressesCount {
		t.Fatalf("after DEL: %d endpoints, %d addresses allocated (%s); want 0 and %d", end.NumEndpoints,
			end.AllocatedAddressesCount, end.AllocatedIPAddresses, start.AllocatedAddressesCount)
	}
	for _, h := range []*testbed.Host{h0, h1} {
		if recs, _ := os.ReadDir(h.MesosStateDir()); len(recs) != 0 {
			t.Errorf("attachment records left on %s: %d", h.Name, len(recs))
		}
		if p := endpointPorts(t, h); len(p) != 0 {
			t.Errorf("OVS ports left on %s: %v", h.Name, p)
		}
	}

	// A label naming a network that does not exist: a CNI error, nothing attached.
	d := h1.NewContainerNS(t, "mesos-d")
	dir := filepath.Join(h1.Dir, "mesos-isolator", "mesos-d", "contiv")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "network.conf"), mesosNetConf(h1, "io.contiv.tenant", "mesos", "io.contiv.network", "nosuch"), 0o644); err != nil {
		t.Fatal(err)
	}
	dm := &mesosCtr{ctr: &ctr{Container: d, host: h1}, confDir: dir}
	if out, err := dm.cnitool(t, tool, plugin, "add"); err == nil || !strings.Contains(out, "Contiv:") || !strings.Contains(out, "nosuch") {
		t.Fatalf("ADD into a missing network: %v\n%s", err, out)
	}
	if op := netOper(); op.NumEndpoints != 0 {
		t.Fatalf("a refused ADD left %d endpoints", op.NumEndpoints)
	}
}
