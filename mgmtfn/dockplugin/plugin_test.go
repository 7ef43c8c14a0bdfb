package dockplugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"go.uber.org/goleak"

	"github.com/contiv/netplugin/api/attach"
	"github.com/contiv/netplugin/api/dockernets"
	"github.com/contiv/netplugin/state"
	"github.com/contiv/netplugin/utils/runtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeBackend records every call that changes something.
type fakeBackend struct {
	mu       sync.Mutex
	changes  []string
	attached map[string]attach.Result // "<net>.<tenant>-<id>"
	nets     map[string]state.Network
	groups   map[string]state.EndpointGroup
	docknets []state.Docknet
	next     int
	failWith error
}

func newFakeBackend() *fakeBackend {
	return &fakeBackend{attached: map[string]attach.Result{},
		nets: map[string]state.Network{
			"net1.default": {Tenant: "default", NetworkName: "net1", SubnetIP: "198.19.1.0", SubnetLen: 24, Gateway: "198.19.1.1",
				PktTagType: "vxlan", IPv6Subnet: "2001:db8::", IPv6SubnetLen: 64, NetworkTag: "nt"},
			"net2.blue": {Tenant: "blue", NetworkName: "net2", SubnetIP: "198.19.2.0", SubnetLen: 24},
		},
		groups:   map[string]state.EndpointGroup{"web:default": {GroupName: "web", TenantName: "default", NetworkName: "net1", GroupTag: "gt"}},
		docknets: []state.Docknet{{TenantName: "default", NetworkName: "net1", DocknetUUID: "dn1"}, {TenantName: "default", NetworkName: "net1", ServiceName: "web", DocknetUUID: "dn2"}},
		next:     10,
	}
}

func (f *fakeBackend) record(s string) {
	f.changes = append(f.changes, s)
}

func (f *fakeBackend) calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.changes...)
}

func (f *fakeBackend) AttachHost(_ context.Context, req attach.HostRequest) (attach.Result, error) {
	if err := req.Validate(); err != nil {
		return attach.Result{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	id := req.Network + "." + req.Tenant + "-" + req.ContainerID
	if _, ok := f.attached[id]; ok {
		return attach.Result{}, attach.ErrAlreadyAttached
	}
	if f.failWith != nil {
		return attach.Result{}, f.failWith
	}
	f.record(fmt.Sprintf("attach %s/%s/%s %s ip=%s", req.Tenant, req.Network, req.Group, req.ContainerID, req.IPAddress))
	res := attach.Result{EndpointID: id, IPAddress: req.IPAddress + "/24", MacAddress: "02:02:c6:13:01:0a", Gateway: "198.19.1.1",
		MTU: 1450, PortName: "vvport1", IfName: "vport1"}
	f.attached[id] = res
	return res, nil
}

func (f *fakeBackend) Detach(_ context.Context, req attach.DetachRequest) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record(fmt.Sprintf("detach %s/%s %s", req.Tenant, req.Network, req.ContainerID))
	delete(f.attached, req.Network+"."+req.Tenant+"-"+req.ContainerID)
	return nil
}

func (f *fakeBackend) Attached(tenant, network, id string) (attach.Result, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.attached[network+"."+tenant+"-"+id]
	return r, ok
}

func (f *fakeBackend) AllocAddress(_ context.Context, networkID, pool, preferred string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record(fmt.Sprintf("alloc %s %s %s", networkID, pool, preferred))
	if preferred != "" {
		return preferred + "/24", nil
	}
	f.next++
	return fmt.Sprintf("198.19.1.%d/24", f.next), nil
}

func (f *fakeBackend) ReleaseAddress(_ context.Context, networkID, addr string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record(fmt.Sprintf("release %s %s", networkID, addr))
	return nil
}

func (f *fakeBackend) Network(_ context.Context, id string) (state.Network, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.nets[id]
	if !ok {
		return n, fmt.Errorf("network %s: %w", id, ErrNotFound)
	}
	return n, nil
}

func (f *fakeBackend) Group(_ context.Context, id string) (state.EndpointGroup, error) {
	g, ok := f.groups[id]
	if !ok {
		return g, fmt.Errorf("group %s: %w", id, ErrNotFound)
	}
	return g, nil
}

func (f *fakeBackend) Networks(context.Context) ([]state.Network, error) {
	var out []state.Network
	for _, n := range f.nets {
		out = append(out, n)
	}
	return out, nil
}

func (f *fakeBackend) Groups(context.Context) ([]state.EndpointGroup, error) {
	var out []state.EndpointGroup
	for _, g := range f.groups {
		out = append(out, g)
	}
	return out, nil
}

func (f *fakeBackend) Docknets(context.Context) ([]state.Docknet, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]state.Docknet(nil), f.docknets...), nil
}

func (f *fakeBackend) MapNetwork(_ context.Context, id, tenant, network, group string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record(fmt.Sprintf("map %s %s/%s/%s", id, tenant, network, group))
	f.docknets = append(f.docknets, state.Docknet{TenantName: tenant, NetworkName: network, ServiceName: group, DocknetUUID: id})
	return nil
}

func (f *fakeBackend) UnmapNetwork(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, d := range f.docknets {
		if d.DocknetUUID == id {
			f.record("unmap " + id)
			f.docknets = append(f.docknets[:i], f.docknets[i+1:]...)
			return nil
		}
	}
	return ErrNotFound
}

func (f *fakeBackend) CreateNetwork(_ context.Context, s SwarmNetwork) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record(fmt.Sprintf("create network %+v", s))
	f.nets[s.Name+"."+s.Tenant] = state.Network{Tenant: s.Tenant, NetworkName: s.Name}
	return nil
}

func (f *fakeBackend) DeleteNetwork(_ context.Context, tenant, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("delete network " + name + "." + tenant)
	delete(f.nets, name+"."+tenant)
	return nil
}

// fakeEngine knows docker networks by ID.
type fakeEngine map[string]dockernets.Network

func (e fakeEngine) InspectNetwork(_ context.Context, id string) (dockernets.Network, error) {
	n, ok := e[id]
	if !ok {
		return n, dockernets.ErrNotFound
	}
	return n, nil
}

func quietLog() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// serve runs a plugin on a socket in a temporary directory until the test
// ends and returns a client of it.
func serve(t *testing.T, cfg Config) *client {
	t.Helper()
	cfg.Dir = filepath.Join(t.TempDir(), "plugins")
	cfg.Log = quietLog()
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := attach.Listen(p.SocketPath())
	if err != nil {
		t.Fatal(err)
	}
	runtest.Go(t, "serve", func(ctx context.Context) error { return p.ServeListener(ctx, ln) })
	var d net.Dialer
	return &client{t: t, hc: &http.Client{Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", p.SocketPath())
		}}}}
}

type client struct {
	t  *testing.T
	hc *http.Client
}

// raw posts body to path and returns status and answer.
func (c *client) raw(method, path string, body []byte) (int, map[string]any) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, "http://plugin"+path, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/vnd.docker.plugins.v1.2+json")
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s: %v", path, err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != contentType {
		c.t.Errorf("%s: content type %q", path, ct)
	}
	var out map[string]any
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &out); err != nil {
		c.t.Fatalf("%s: answer %q is not a JSON object: %v", path, b, err)
	}
	return resp.StatusCode, out
}

// ok posts v and requires a 200 answer.
func (c *client) ok(path string, v any) map[string]any {
	c.t.Helper()
	b, _ := json.Marshal(v)
	code, out := c.raw(http.MethodPost, path, b)
	if code != http.StatusOK {
		c.t.Fatalf("%s %s: %d %v", path, b, code, out)
	}
	return out
}

// fail posts body and requires a refusal with status code whose Err
// contains msg.
func (c *client) fail(path string, body []byte, code int, msg string) {
	c.t.Helper()
	got, out := c.raw(http.MethodPost, path, body)
	e, _ := out["Err"].(string)
	if got != code || !strings.Contains(e, msg) {
		c.t.Errorf("%s %.80s: got %d %v; want %d with Err containing %q", path, body, got, out, code, msg)
	}
	if strings.HasPrefix(path, "/IpamDriver.") && out["Error"] != out["Err"] {
		c.t.Errorf("%s: IPAM refusal %v lacks \"Error\"", path, out)
	}
}

func TestHandshake(t *testing.T) {
	c := serve(t, Config{Backend: newFakeBackend()})
	if out := c.ok("/Plugin.Activate", nil); fmt.Sprint(out["Implements"]) != "[NetworkDriver IpamDriver]" {
		t.Errorf("activate: %v", out)
	}
	if out := c.ok("/NetworkDriver.GetCapabilities", nil); out["Scope"] != "local" {
		t.Errorf("capabilities: %v", out)
	}
	if out := c.ok("/IpamDriver.GetCapabilities", nil); out["RequiresMACAddress"] != false {
		t.Errorf("ipam capabilities: %v", out)
	}
	if out := c.ok("/IpamDriver.GetDefaultAddressSpaces", nil); out["LocalDefaultAddressSpace"] != "" {
		t.Errorf("address spaces: %v", out)
	}
	c2 := serve(t, Config{Backend: newFakeBackend(), Scope: ScopeGlobal})
	if out := c2.ok("/NetworkDriver.GetCapabilities", nil); out["Scope"] != "global" {
		t.Errorf("global capabilities: %v", out)
	}
}

// The engine's calls for network create, docker run, docker stop and
// network rm, in its order (docs/docker.md).
func TestContainerLifecycle(t *testing.T) {
	f := newFakeBackend()
	c := serve(t, Config{Backend: f, Engine: fakeEngine{}})
	pool := c.ok("/IpamDriver.RequestPool", RequestPoolRequest{Pool: "198.19.1.0/24",
		Options: map[string]string{"tenant": "default", "network": "net1"}})
	if pool["PoolID"] != "net1.default|198.19.1.0/24" || pool["Pool"] != "198.19.1.0/24" {
		t.Fatalf("pool %v", pool)
	}
	gw := c.ok("/IpamDriver.RequestAddress", RequestAddressRequest{PoolID: "net1.default|198.19.1.0/24", Address: "198.19.1.1",
		Options: map[string]string{"RequestAddressType": "com.docker.network.gateway"}})
	if gw["Address"] != "198.19.1.1/24" {
		t.Fatalf("gateway %v", gw)
	}
	c.ok("/NetworkDriver.CreateNetwork", CreateNetworkRequest{NetworkID: "dn1"})
	if got := f.calls(); len(got) != 0 {
		t.Fatalf("network create changed %v", got)
	}

	addr := c.ok("/IpamDriver.RequestAddress", RequestAddressRequest{PoolID: "net1.default|198.19.1.0/24"})
	if addr["Address"] != "198.19.1.11/24" {
		t.Fatalf("address %v", addr)
	}
	ep := c.ok("/NetworkDriver.CreateEndpoint", CreateEndpointRequest{NetworkID: "dn1", EndpointID: "e1",
		Interface: &EndpointInterface{Address: "198.19.1.11/24"}})
	iface, _ := ep["Interface"].(map[string]any)
	if iface["MacAddress"] != "02:02:c6:13:01:0a" || iface["Address"] != "" {
		t.Errorf("create endpoint answered %v", ep)
	}
	join := c.ok("/NetworkDriver.Join", JoinRequest{NetworkID: "dn1", EndpointID: "e1", SandboxKey: "/var/run/docker/netns/x"})
	if in, _ := join["InterfaceName"].(map[string]any); in["SrcName"] != "vport1" || in["DstPrefix"] != "eth" || join["Gateway"] != "198.19.1.1" {
		t.Errorf("join answered %v", join)
	}
	c.ok("/NetworkDriver.ProgramExternalConnectivity", EndpointRequest{NetworkID: "dn1", EndpointID: "e1"})
	c.ok("/NetworkDriver.EndpointOperInfo", EndpointRequest{NetworkID: "dn1", EndpointID: "e1"})

	c.ok("/NetworkDriver.RevokeExternalConnectivity", EndpointRequest{NetworkID: "dn1", EndpointID: "e1"})
	c.ok("/NetworkDriver.Leave", EndpointRequest{NetworkID: "dn1", EndpointID: "e1"})
	c.ok("/NetworkDriver.DeleteEndpoint", EndpointRequest{NetworkID: "dn1", EndpointID: "e1"})
	// netmaster freed the address with the endpoint: not released twice.
	c.ok("/IpamDriver.ReleaseAddress", ReleaseAddressRequest{PoolID: "net1.default|198.19.1.0/24", Address: "198.19.1.11"})
	// An address whose endpoint never came is given back.
	c.ok("/IpamDriver.ReleaseAddress", ReleaseAddressRequest{PoolID: "net1.default|198.19.1.0/24", Address: "198.19.1.12"})
	// network rm: the gateway is netmaster's, not released; nor is the
	// stand-in gateway of a network without one (the pool's base).
	c.ok("/IpamDriver.ReleaseAddress", ReleaseAddressRequest{PoolID: "net1.default|198.19.1.0/24", Address: "198.19.1.1"})
	c.ok("/IpamDriver.ReleaseAddress", ReleaseAddressRequest{PoolID: "net1.default|198.19.1.0/24", Address: "198.19.1.0"})
	c.ok("/IpamDriver.ReleasePool", PoolRequest{PoolID: "net1.default|198.19.1.0/24"})
	c.ok("/NetworkDriver.DeleteNetwork", NetworkRequest{NetworkID: "dn1"})

	want := []string{
		"alloc net1.default 198.19.1.0/24 ",
		"attach default/net1/ e1 ip=198.19.1.11",
		"detach default/net1 e1",
		"release net1.default|198.19.1.0/24 198.19.1.12",
	}
	if got := f.calls(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("backend calls\n got %q\nwant %q", got, want)
	}
}

func TestPreferredAddressAndGroups(t *testing.T) {
	f := newFakeBackend()
	c := serve(t, Config{Backend: f})
	pool := c.ok("/IpamDriver.RequestPool", RequestPoolRequest{Options: map[string]string{"network": "net1", "group": "web"}})
	if pool["PoolID"] != "net1:web.default|198.19.1.0/24" || pool["Pool"] != "198.19.1.0/24" {
		t.Fatalf("group pool %v", pool)
	}
	if p := c.ok("/IpamDriver.RequestPool", RequestPoolRequest{Options: map[string]string{"contiv-tag": "gt"}}); p["PoolID"] != "net1:web.default|198.19.1.0/24" {
		t.Errorf("group tag pool %v", p)
	}
	if p := c.ok("/IpamDriver.RequestPool", RequestPoolRequest{Options: map[string]string{"contiv-tag": "nt"}}); p["PoolID"] != "net1.default|198.19.1.0/24" {
		t.Errorf("network tag pool %v", p)
	}
	if p := c.ok("/IpamDriver.RequestPool", RequestPoolRequest{Pool: "198.19.9.0/24"}); p["PoolID"] != "198.19.9.0/24" {
		t.Errorf("legacy pool %v", p)
	}
	if p := c.ok("/IpamDriver.RequestPool", RequestPoolRequest{V6: true, Options: map[string]string{"network": "net1"}}); p["PoolID"] != "net1.default|2001:db8::/64" {
		t.Errorf("v6 pool %v", p)
	}
	a := c.ok("/IpamDriver.RequestAddress", RequestAddressRequest{PoolID: "net1:web.default|198.19.1.0/24", Address: "198.19.1.77"})
	if a["Address"] != "198.19.1.77/24" {
		t.Errorf("preferred address %v", a)
	}
	c.ok("/IpamDriver.RequestAddress", RequestAddressRequest{PoolID: "net1.default|2001:db8::/64"})
	// The group network resolves through its mapping.
	c.ok("/NetworkDriver.CreateEndpoint", CreateEndpointRequest{NetworkID: "dn2", EndpointID: "e2",
		Interface: &EndpointInterface{Address: "198.19.1.77/24", MacAddress: "02:02:c6:13:01:4d"}})
	want := []string{
		"alloc net1:web.default 198.19.1.0/24 198.19.1.77",
		"alloc  2001:db8::/64:default ",
		"attach default/net1/web e2 ip=198.19.1.77",
	}
	if got := f.calls(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("backend calls\n got %q\nwant %q", got, want)
	}
}

func TestResolve(t *testing.T) {
	eng := fakeEngine{
		"opts":  {ID: "opts", Name: "whatever", IPAM: dockernets.IPAM{Options: map[string]string{"tenant": "blue", "network": "net2"}}},
		"named": {ID: "named", Name: "web.net1/blue"},
	}
	p, err := New(Config{Backend: newFakeBackend(), Engine: eng, Log: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for id, want := range map[string]contivNames{
		"dn2":   {"default", "net1", "web"},
		"opts":  {"blue", "net2", ""},
		"named": {"blue", "net1", "web"},
	} {
		if got, err := p.resolve(ctx, id); err != nil || got != want {
			t.Errorf("resolve %s = %+v, %v; want %+v", id, got, err, want)
		}
	}
	if _, err := p.resolve(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown network: %v", err)
	}
	swarm, _ := New(Config{Backend: newFakeBackend(), Engine: eng, SwarmMode: true, Log: quietLog()})
	if _, err := swarm.resolve(ctx, "opts"); !errors.Is(err, ErrNotFound) {
		t.Errorf("swarm mode resolved an unmapped network: %v", err)
	}
}

// Every refused request gets {"Err": ...} naming what is wrong and
// changes nothing.
func TestRefusals(t *testing.T) {
	f := newFakeBackend()
	c := serve(t, Config{Backend: f, Engine: fakeEngine{}})
	c.ok("/NetworkDriver.CreateEndpoint", CreateEndpointRequest{NetworkID: "dn1", EndpointID: "dup",
		Interface: &EndpointInterface{Address: "198.19.1.20/24"}})
	before := f.calls()
	huge := []byte(`{"NetworkID":"dn1","EndpointID":"` + strings.Repeat("x", MaxBodyBytes) + `"}`)
	cases := []struct {
		path string
		body string
		code int
		msg  string
	}{
		{"/NetworkDriver.CreateEndpoint", `{"NetworkID":"dn1","EndpointID":"x","Interface":{}`, 400, "decode JSON"},
		{"/NetworkDriver.CreateEndpoint", `[]`, 400, "not a JSON object"},
		{"/NetworkDriver.CreateEndpoint", `null`, 400, "not a JSON object"},
		{"/NetworkDriver.CreateEndpoint", `{} {}`, 400, "trailing data"},
		{"/NetworkDriver.CreateEndpoint", `{"EndpointID":"x","Interface":{}}`, 400, `"NetworkID" is missing`},
		{"/NetworkDriver.CreateEndpoint", `{"NetworkID":"dn1","Interface":{}}`, 400, `"EndpointID" is missing`},
		{"/NetworkDriver.CreateEndpoint", `{"NetworkID":"dn1","EndpointID":"x"}`, 400, `"Interface" is missing`},
		{"/NetworkDriver.CreateEndpoint", `{"NetworkID":"dn1","EndpointID":"x","Interface":{"Address":"198.19.1.5"}}`, 400, `"Interface.Address"`},
		{"/NetworkDriver.CreateEndpoint", `{"NetworkID":"dn1","EndpointID":"x","Interface":{"Address":"198.19.1.5/24","MacAddress":"02:42:ac:11:00:02"}}`, 400, "MAC derived"},
		{"/NetworkDriver.CreateEndpoint", `{"NetworkID":"nope","EndpointID":"x","Interface":{}}`, 404, "docker network nope"},
		{"/NetworkDriver.CreateEndpoint", `{"NetworkID":"dn1","EndpointID":"dup","Interface":{"Address":"198.19.1.21/24"}}`, 500, "already attached"},
		{"/NetworkDriver.CreateEndpoint", string(huge), 413, "larger than"},
		{"/NetworkDriver.Join", `{"NetworkID":"dn1","EndpointID":"other"}`, 404, "not attached on this host"},
		{"/NetworkDriver.DeleteEndpoint", `{"NetworkID":"dn1","EndpointID":"a b"}`, 400, "white space"},
		{"/NetworkDriver.DeleteEndpoint", `{"NetworkID":"dn1","EndpointID":"unknown"}`, 404, "not attached on this host"},
		{"/NetworkDriver.Bogus", `{}`, 404, "no such call"},
		{"/IpamDriver.RequestPool", `{"Options":{"network":"nonet"}}`, 404, "nonet.default"},
		{"/IpamDriver.RequestPool", `{}`, 400, `no "Pool"`},
		{"/IpamDriver.RequestPool", `{"Pool":"198.19.3.0/24","Options":{"network":"net1"}}`, 400, "not the subnet"},
		{"/IpamDriver.RequestPool", `{"Pool":"2001:db8::/64"}`, 400, `does not match "V6"`},
		{"/IpamDriver.RequestPool", `{"Options":{"contiv-tag":"none"}}`, 404, `tag "none"`},
		{"/IpamDriver.RequestAddress", `{"PoolID":"net1.default|198.19.1.0"}`, 400, "prefix length"},
		{"/IpamDriver.RequestAddress", `{"PoolID":"net1|198.19.1.0/24"}`, 400, "<network>.<tenant>"},
		{"/IpamDriver.RequestAddress", `{"PoolID":"net1.default|198.19.1.0/24","Address":"198.19.2.1"}`, 400, "not in pool"},
		{"/IpamDriver.RequestAddress", `{"Address":"198.19.2.1"}`, 400, `"PoolID" is missing`},
		{"/IpamDriver.ReleaseAddress", `{"PoolID":"net1.default|198.19.1.0/24"}`, 400, `"Address" is missing`},
		{"/IpamDriver.ReleaseAddress", `{"PoolID":"net1.default|198.19.1.0/24","Address":"x"}`, 400, "not an IP address"},
	}
	for _, tc := range cases {
		body := []byte(tc.body)
		c.fail(tc.path, body, tc.code, tc.msg)
	}
	code, out := c.raw(http.MethodGet, "/Plugin.Activate", nil)
	if code != http.StatusMethodNotAllowed || out["Err"] == nil {
		t.Errorf("GET: %d %v", code, out)
	}
	if got := f.calls(); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Errorf("refused requests changed something: %q", got[len(before):])
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{Backend: newFakeBackend(), Name: "a/b"},
		{Backend: newFakeBackend(), Dir: "relative"},
		{Backend: newFakeBackend(), Scope: "swarm"},
		{},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

// Swarm: AllocateNetwork maps by tag or creates a contiv network named
// after the docker network; FreeNetwork undoes it; only mapped networks
// resolve.
func TestSwarmAllocateFree(t *testing.T) {
	f := newFakeBackend()
	c := serve(t, Config{Backend: f, Scope: ScopeGlobal, SwarmMode: true})
	out := c.ok("/NetworkDriver.AllocateNetwork", AllocateNetworkRequest{NetworkID: "sw1", Options: map[string]string{"contiv-tag": "gt"}})
	if o, _ := out["Options"].(map[string]any); o["contiv-tag"] != "gt" {
		t.Errorf("options not echoed: %v", out)
	}
	c.ok("/NetworkDriver.AllocateNetwork", AllocateNetworkRequest{NetworkID: "sw2",
		IPv4Data: []IPAMData{{Pool: "198.19.40.0/24", Gateway: "198.19.40.1/24"}}})
	c.fail("/NetworkDriver.AllocateNetwork", []byte(`{"NetworkID":"sw3"}`), 400, "no option")
	if a := c.ok("/IpamDriver.RequestAddress", RequestAddressRequest{PoolID: "198.19.40.0/24"}); a["Address"] != "198.19.1.11/24" {
		t.Errorf("swarm address %v", a)
	}
	// The node asks again for the address the manager allocated.
	if a := c.ok("/IpamDriver.RequestAddress", RequestAddressRequest{PoolID: "198.19.40.0/24", Address: "198.19.40.5"}); a["Address"] != "198.19.40.5/24" {
		t.Errorf("swarm node address %v", a)
	}
	c.ok("/NetworkDriver.CreateEndpoint", CreateEndpointRequest{NetworkID: "sw2", EndpointID: "e1",
		Interface: &EndpointInterface{Address: "198.19.40.5/24"}})
	c.fail("/NetworkDriver.CreateEndpoint", []byte(`{"NetworkID":"unmapped","EndpointID":"e2","Interface":{}}`), 404, "mapped to no contiv network")
	// Bare pool ids: the gateway and an unknown pool are not passed on,
	// another address is released in the network of that subnet.
	c.ok("/IpamDriver.ReleaseAddress", ReleaseAddressRequest{PoolID: "198.19.1.0/24", Address: "198.19.1.1"})
	c.ok("/IpamDriver.ReleaseAddress", ReleaseAddressRequest{PoolID: "198.19.77.0/24", Address: "198.19.77.3"})
	c.ok("/IpamDriver.ReleaseAddress", ReleaseAddressRequest{PoolID: "198.19.1.0/24", Address: "198.19.1.9"})
	c.ok("/NetworkDriver.FreeNetwork", NetworkRequest{NetworkID: "sw2"})
	c.ok("/NetworkDriver.FreeNetwork", NetworkRequest{NetworkID: "sw1"})
	want := []string{
		"map sw1 default/net1/web",
		"create network {Tenant:default Name:sw2 Subnet:198.19.40.0/24 Gateway:198.19.40.1 IPv6Subnet: IPv6Gateway:}",
		"map sw2 default/sw2/",
		"alloc  198.19.40.0/24 ",
		"attach default/sw2/ e1 ip=198.19.40.5",
		"release net1.default 198.19.1.9",
		"unmap sw2",
		"delete network sw2.default",
		"unmap sw1",
	}
	if got := f.calls(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("backend calls\n got %q\nwant %q", got, want)
	}
}
