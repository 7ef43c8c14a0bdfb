package e2e

import (
	"context"
	"crypto/sha512"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/contiv/netplugin/api/attach"
	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/test/testbed"
)

// cniNet is the CNI network name of the tests' configurations.
const cniNet = "contiv-net"

// cniHost is one host's CNI setup: a configuration folder whose
// conflist points contivk8s at the host's netplugin.
type cniHost struct {
	h       *testbed.Host
	confDir string
	conf    []byte
}

func newCNIHost(t *testing.T, h *testbed.Host, ver string) *cniHost {
	t.Helper()
	dir := filepath.Join(h.Dir, "net.d")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Appendf(nil, `{"cniVersion":%q,"name":%q,"plugins":[{"type":"contivk8s","socket":%q,"logFile":%q}]}`,
		ver, cniNet, h.CNISocket(), filepath.Join(h.Dir, "contivk8s.log"))
	if err := os.WriteFile(filepath.Join(dir, "10-contiv.conflist"), conf, 0o644); err != nil {
		t.Fatal(err)
	}
	return &cniHost{h: h, confDir: dir, conf: conf}
}

// cnitool runs "cnitool verb contiv-net <netns>" against the host.
func (ch *cniHost) cnitool(t *testing.T, tool, plugin, verb, netns, cniArgs string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, tool, verb, cniNet, netns)
	cmd.Env = append(os.Environ(), "NETCONFPATH="+ch.confDir, "CNI_PATH="+filepath.Dir(plugin))
	if cniArgs != "" {
		cmd.Env = append(cmd.Env, "CNI_ARGS="+cniArgs)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// pod is a container namespace attached through CNI.
type pod struct {
	*ctr
	ch   *cniHost
	args string
}

func addPod(t *testing.T, tool, plugin string, ch *cniHost, name string) *pod {
	t.Helper()
	c := ch.h.NewContainerNS(t, name)
	args := "K8S_POD_NAMESPACE=default;K8S_POD_NAME=" + name
	out, err := ch.cnitool(t, tool, plugin, "add", c.NSPath(), args)
	if err != nil {
		t.Fatalf("cnitool add %s on %s: %v\n%s", name, ch.h.Name, err, out)
	}
	res, err := current.NewResult([]byte(out))
	if err != nil {
		t.Fatalf("ADD result of %s: %v\n%s", name, err, out)
	}
	r, _ := current.GetResult(res)
	if len(r.IPs) != 1 {
		t.Fatalf("ADD result of %s has %d addresses: %s", name, len(r.IPs), out)
	}
	c.IP = r.IPs[0].Address.IP.String()
	return &pod{ctr: &ctr{Container: c, host: ch.h, tenant: "default", network: "default-net",
		res: attach.Result{IPAddress: r.IPs[0].Address.String()}}, ch: ch, args: args}
}

func (p *pod) tool(t *testing.T, tool, plugin, verb string) (string, error) {
	return p.ch.cnitool(t, tool, plugin, verb, p.NSPath(), p.args)
}

func networkOper(t *testing.T, tb *testbed.Testbed) contivmodel.NetworkOper {
	t.Helper()
	var v struct{ Oper contivmodel.NetworkOper }
	getJSON(t, tb.HTTPClient(), tb.MasterURL()+"/api/v1/inspect/networks/default:default-net/", &v)
	return v.Oper
}

func records(t *testing.T, h *testbed.Host) []string {
	t.Helper()
	entries, err := os.ReadDir(h.CNIStateDir())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func endpointPorts(t *testing.T, h *testbed.Host) []string {
	t.Helper()
	out, err := h.Vsctl("list-ports", "contivVxlanBridge")
	if err != nil {
		t.Fatalf("list ports on %s: %v", h.Name, err)
	}
	var ports []string
	for _, p := range strings.Fields(out) {
		if strings.HasPrefix(p, "vvport") {
			ports = append(ports, p)
		}
	}
	return ports
}

// TestKubernetesCNI drives contivk8s with cnitool (and libcni, the
// library cnitool and the runtimes use) against netplugins in kubernetes
// mode on two hosts: addresses come from netmaster and carry ping, TCP and
// UDP across hosts; CHECK notices an interface removed behind netplugin's
// back; GC removes what is not in the valid list; STATUS follows
// netplugin; DEL twice releases everything; bad input gets CNI errors.
func TestKubernetesCNI(t *testing.T) {
	tool := testbed.FindCnitool(t)
	plugin, err := testbed.BuildCNIPlugin()
	if err != nil {
		t.Fatal(err)
	}
	tb := testbed.New(t, testbed.Config{Hosts: 2, NetpluginArgs: []string{"--mode", "kubernetes"}})
	netctl(t, tb, "net", "create", "--encap", "vxlan", "--subnet", "198.19.20.0/24", "--gateway", "198.19.20.254", "default-net")
	start := networkOper(t, tb)
	h0, h1 := newCNIHost(t, tb.Hosts[0], "1.1.0"), newCNIHost(t, tb.Hosts[1], "1.1.0")

	// ADD on two hosts: addresses from netmaster, traffic across hosts.
	a := addPod(t, tool, plugin, h0, "pod-a")
	b := addPod(t, tool, plugin, h1, "pod-b")
	_, subnet, _ := net.ParseCIDR("198.19.20.0/24")
	for _, p := range []*pod{a, b} {
		if !subnet.Contains(net.ParseIP(p.ip())) {
			t.Fatalf("%s got %s, outside default-net", p.Name, p.ip())
		}
	}
	if op := networkOper(t, tb); op.NumEndpoints != 2 {
		t.Fatalf("netmaster has %d endpoints in default-net, want 2", op.NumEndpoints)
	}
	a.ServeTraffic(t)
	b.ServeTraffic(t)
	if err := trafficOK(a.ctr, b.ctr, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := trafficOK(b.ctr, a.ctr, 30*time.Second); err != nil {
		t.Fatal(err)
	}

	// CHECK passes, then fails once the interface is removed behind
	// netplugin's back.
	if out, err := a.tool(t, tool, plugin, "check"); err != nil {
		t.Fatalf("CHECK of a healthy pod: %v\n%s", err, out)
	}
	if out, err := a.Exec("ip", "link", "del", "eth0"); err != nil {
		t.Fatalf("remove eth0: %v\n%s", err, out)
	}
	if out, err := a.tool(t, tool, plugin, "check"); err == nil || !strings.Contains(out, "Attachment is broken") {
		t.Fatalf("CHECK after eth0 was removed: %v\n%s", err, out)
	}

	// GC with the valid list [c]: a and d go, c and b (other host) stay.
	// libcni with an empty result cache sends only the plugin's GC.
	c := addPod(t, tool, plugin, h0, "pod-c")
	d := addPod(t, tool, plugin, h0, "pod-d")
	cninet := libcni.NewCNIConfigWithCacheDir([]string{filepath.Dir(plugin)}, t.TempDir(), nil)
	list, err := libcni.ConfListFromBytes(h0.conf)
	if err != nil {
		t.Fatal(err)
	}
	cID := cnitoolContainerID(c.NSPath())
	gctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cninet.GCNetworkList(gctx, list, &libcni.GCArgs{ValidAttachments: []types.GCAttachment{{ContainerID: cID, IfName: "eth0"}}}); err != nil {
		t.Fatalf("GC: %v", err)
	}
	if got := records(t, h0.h); len(got) != 1 || !strings.HasPrefix(got[0], cID+"@") {
		t.Fatalf("records on %s after GC: %v, want only %s's", h0.h.Name, got, cID)
	}
	if op := networkOper(t, tb); op.NumEndpoints != 2 {
		t.Fatalf("netmaster has %d endpoints after GC, want 2 (b, c)", op.NumEndpoints)
	}
	if ports := endpointPorts(t, h0.h); len(ports) != 1 {
		t.Fatalf("OVS ports on %s after GC: %v, want c's only", h0.h.Name, ports)
	}
	// The runtime's DEL of what GC removed succeeds (and clears cnitool's cache).
	for _, p := range []*pod{a, d} {
		if out, err := p.tool(t, tool, plugin, "del"); err != nil {
			t.Fatalf("DEL of %s after GC: %v\n%s", p.Name, err, out)
		}
	}

	// STATUS: an error while netplugin is down, success once it is back.
	if out, err := c.tool(t, tool, plugin, "status"); err != nil {
		t.Fatalf("STATUS: %v\n%s", err, out)
	}
	h0.h.KillNetplugin(t)
	if out, err := c.tool(t, tool, plugin, "status"); err == nil || !strings.Contains(out, "not reachable") {
		t.Fatalf("STATUS with netplugin down: %v\n%s", err, out)
	}
	h0.h.StartNetplugin(t)
	var out string
	deadline := time.Now().Add(60 * time.Second)
	for {
		if out, err = c.tool(t, tool, plugin, "status"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("STATUS after netplugin came back: %v\n%s", err, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if out, err := c.tool(t, tool, plugin, "check"); err != nil {
		t.Fatalf("CHECK of c after the restart: %v\n%s", err, out)
	}
	c.ServeTraffic(t)
	if err := trafficOK(b.ctr, c.ctr, 30*time.Second); err != nil {
		t.Fatal(err)
	}

	// A pod's labels (here from CNI_ARGS) put it in its group.
	netctl(t, tb, "group", "create", "default-net", "web")
	g := h1.h.NewContainerNS(t, "pod-g")
	gp := &pod{ctr: &ctr{Container: g, host: h1.h}, ch: h1,
		args: "K8S_POD_NAMESPACE=default;K8S_POD_NAME=pod-g;CONTIV_NETWORK=default-net;CONTIV_NET_GROUP=web"}
	if out, err := gp.tool(t, tool, plugin, "add"); err != nil {
		t.Fatalf("ADD of pod-g into group web: %v\n%s", err, out)
	}
	var gi struct{ Oper contivmodel.EndpointGroupOper }
	getJSON(t, tb.HTTPClient(), tb.MasterURL()+"/api/v1/inspect/endpointGroups/default:web/", &gi)
	if gi.Oper.NumEndpoints != 1 || len(gi.Oper.Endpoints) != 1 || gi.Oper.Endpoints[0].EndpointID != cnitoolContainerID(g.NSPath()) {
		t.Fatalf("group web after ADD of pod-g: %+v", gi.Oper)
	}

	// DEL twice releases everything.
	for _, p := range []*pod{b, c, gp} {
		for i := 0; i < 2; i++ {
			if out, err := p.tool(t, tool, plugin, "del"); err != nil {
				t.Fatalf("DEL %d of %s: %v\n%s", i+1, p.Name, err, out)
			}
		}
	}
	end := networkOper(t, tb)
	if end.NumEndpoints != 0 || end.AllocatedAddressesCount != start.AllocatedAddressesCount {
		t.Fatalf("after DEL: %d endpoints, %d addresses allocated (%s); want 0 and %d", end.NumEndpoints,
			end.AllocatedAddressesCount, end.AllocatedIPAddresses, start.AllocatedAddressesCount)
	}
	for _, ch := range []*cniHost{h0, h1} {
		if r := records(t, ch.h); len(r) != 0 {
			t.Errorf("records left on %s: %v", ch.h.Name, r)
		}
		if p := endpointPorts(t, ch.h); len(p) != 0 {
			t.Errorf("OVS ports left on %s: %v", ch.h.Name, p)
		}
	}

	// Bad input: CNI errors with the right codes, nothing attached.
	e := h0.h.NewContainerNS(t, "pod-e")
	badConf := func(ver, socket string) []byte {
		return fmt.Appendf(nil, `{"cniVersion":%q,"name":%q,"plugins":[{"type":"contivk8s","socket":%q,"logFile":"-"}]}`, ver, cniNet, socket)
	}
	cases := []struct {
		name string
		conf []byte
		args [][2]string
		code uint
	}{
		{"old version", badConf("0.2.0", h0.h.CNISocket()), nil, types.ErrIncompatibleCNIVersion},
		{"unknown version", badConf("7.0.0", h0.h.CNISocket()), nil, types.ErrIncompatibleCNIVersion},
		{"unknown CNI_ARGS key", badConf("1.0.0", h0.h.CNISocket()), [][2]string{{"COLOR", "red"}}, types.ErrInvalidEnvironmentVariables},
		{"bad pod name", badConf("1.0.0", h0.h.CNISocket()), [][2]string{{"K8S_POD_NAME", "a/b"}}, types.ErrInvalidEnvironmentVariables},
		{"bad tenant", badConf("1.0.0", h0.h.CNISocket()), [][2]string{{"CONTIV_TENANT", "a b"}}, types.ErrInvalidNetworkConfig},
		{"unknown network", badConf("1.0.0", h0.h.CNISocket()), [][2]string{{"CONTIV_NETWORK", "nosuchnet"}}, types.ErrInternal},
		{"relative socket", badConf("1.0.0", "run/cni.sock"), nil, types.ErrInvalidNetworkConfig},
	}
	for _, tc := range cases {
		l, err := libcni.ConfListFromBytes(tc.conf)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		_, err = cninet.AddNetworkList(ctx, l, &libcni.RuntimeConf{ContainerID: "bad-" + strings.ReplaceAll(tc.name, " ", "-"),
			NetNS: e.NSPath(), IfName: "eth0", Args: tc.args})
		cancel()
		var ce *types.Error
		if !errors.As(err, &ce) || ce.Code != tc.code {
			t.Errorf("%s: got %v, want CNI error code %d", tc.name, err, tc.code)
		}
	}
	// A malformed configuration straight to the plugin (libcni would not
	// load it): decoding failure.
	ctx, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel2()
	_, err = invoke.ExecPluginWithResult(ctx, plugin, []byte(`{"cniVersion":"1.0.0","name":"x","socket":`),
		&invoke.Args{Command: "ADD", ContainerID: "bad-json", NetNS: e.NSPath(), IfName: "eth0", Path: filepath.Dir(plugin)}, nil)
	var ce *types.Error
	if !errors.As(err, &ce) || ce.Code != types.ErrDecodingFailure {
		t.Errorf("malformed configuration: got %v, want code %d", err, types.ErrDecodingFailure)
	}
	if op := networkOper(t, tb); op.NumEndpoints != 0 || op.AllocatedAddressesCount != start.AllocatedAddressesCount {
		t.Fatalf("bad input changed netmaster: %d endpoints, %d addresses", op.NumEndpoints, op.AllocatedAddressesCount)
	}
	if r := records(t, h0.h); len(r) != 0 {
		t.Fatalf("bad input left records: %v", r)
	}

	// Malformed requests straight to netplugin's CNI socket change
	// nothing: the live pod's record, netmaster's endpoints and OVS stay.
	f := addPod(t, tool, plugin, h0, "pod-f")
	recBefore := readRecords(t, h0.h)
	portsBefore := endpointPorts(t, h0.h)
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", h0.h.CNISocket())
		}}}
	fid := cnitoolContainerID(f.NSPath())
	for _, m := range []struct{ method, path, body string }{
		{"POST", "/ContivCNI.AddPod", `{"K8S_POD_INFRA_CONTAINER_ID":`},
		{"POST", "/ContivCNI.DelPod", `{"K8S_POD_INFRA_CONTAINER_ID":"` + fid + `","CNI_IFNAME":"eth0","bogus":1}`},
		{"POST", "/ContivCNI.DelPod", `{"K8S_POD_INFRA_CONTAINER_ID":"` + fid + `","CNI_IFNAME":"eth0"}{}`},
		{"POST", "/ContivCNI.DelPod", `{"K8S_POD_INFRA_CONTAINER_ID":"../` + fid + `","CNI_IFNAME":"eth0"}`},
		{"POST", "/ContivCNI.GC", `{"validAttachments":[]}`},
		{"POST", "/ContivCNI.AddPod", `{"K8S_POD_INFRA_CONTAINER_ID":"x1","CNI_IFNAME":"eth0","CNI_NETNS":"rel/path"}`},
		{"GET", "/ContivCNI.DelPod", ``},
		{"POST", "/ContivCNI.Frob", `{}`},
	} {
		req, err := http.NewRequest(m.method, "http://netplugin"+m.path, strings.NewReader(m.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", m.method, m.path, err)
		}
		resp.Body.Close()
		if resp.StatusCode < 400 || resp.StatusCode >= 500 {
			t.Errorf("%s %s %s: status %d, want a 4xx", m.method, m.path, m.body, resp.StatusCode)
		}
	}
	if after := readRecords(t, h0.h); fmt.Sprint(after) != fmt.Sprint(recBefore) {
		t.Fatalf("malformed requests changed the records:\n%v\n%v", recBefore, after)
	}
	if op := networkOper(t, tb); op.NumEndpoints != 1 {
		t.Fatalf("malformed requests changed netmaster: %d endpoints, want 1", op.NumEndpoints)
	}
	if p := endpointPorts(t, h0.h); fmt.Sprint(p) != fmt.Sprint(portsBefore) {
		t.Fatalf("malformed requests changed OVS ports: %v, was %v", p, portsBefore)
	}
	if out, err := f.tool(t, tool, plugin, "check"); err != nil {
		t.Fatalf("CHECK of f after malformed requests: %v\n%s", err, out)
	}
	if out, err := f.tool(t, tool, plugin, "del"); err != nil {
		t.Fatalf("DEL of f: %v\n%s", err, out)
	}
}

// readRecords returns the host's attachment record files with contents.
func readRecords(t *testing.T, h *testbed.Host) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range records(t, h) {
		b, err := os.ReadFile(filepath.Join(h.CNIStateDir(), name))
		if err != nil {
			t.Fatal(err)
		}
		out[name] = string(b)
	}
	return out
}

// cnitoolContainerID is the container id cnitool derives from a netns
// path: "cnitool-" and the hex of the first 10 bytes of its SHA-512.
func cnitoolContainerID(netns string) string {
	sum := sha512.Sum512([]byte(netns))
	return fmt.Sprintf("cnitool-%x", sum[:10])
}
