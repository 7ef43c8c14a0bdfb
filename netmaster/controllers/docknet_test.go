package controllers_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/contiv/netplugin/api/dockernets"
	"github.com/contiv/netplugin/api/dockernets/dockernetstest"
	"github.com/contiv/netplugin/netmaster/master/mastertest"
	"github.com/contiv/netplugin/state"
)

// dockEnv is a docker-mode netmaster whose plugin name is a fake plugin
// served to the local engine.
type dockEnv struct {
	*env
	c *dockernets.Client
	p *dockernetstest.Plugin
}

func newDockEnv(t *testing.T) *dockEnv {
	c := dockernetstest.RequireEngine(t)
	p := dockernetstest.Start(t)
	cfg := mastertest.DefaultConfig()
	cfg.ClusterMode, cfg.PluginName = "docker", p.Name
	return &dockEnv{env: newEnvCfg(t, cfg), c: c, p: p}
}

// docker finds a docker network by name (ok false when absent).
func (d *dockEnv) docker(name string) (dockernets.Network, bool) {
	d.T.Helper()
	nw, err := d.c.FindNetwork(mastertest.Ctx(d.T, 30*time.Second), name)
	if errors.Is(err, dockernets.ErrNotFound) {
		return nw, false
	}
	if err != nil {
		d.T.Fatalf("find docker network %q: %v", name, err)
	}
	return nw, true
}

// mapping reads oper/docknet/<tenant>.<net>.<group>.
func (d *dockEnv) mapping(tenant, network, group string) (state.Docknet, bool) {
	d.T.Helper()
	raw, ok := d.Dump()["oper/docknet/"+dockernets.StateID(tenant, network, group)]
	var dn state.Docknet
	if ok {
		if err := json.Unmarshal([]byte(raw), &dn); err != nil {
			d.T.Fatalf("decode docknet state: %v", err)
		}
	}
	return dn, ok
}

// requireDocker checks the docker network of (tenant, network, group), its
// mapping, and the options the plugin was sent when it was created.
func (d *dockEnv) requireDocker(tenant, network, group string, opts, ipamOpts map[string]string, v6 bool) {
	d.T.Helper()
	name := dockernets.Name(tenant, network, group)
	nw, ok := d.docker(name)
	if !ok {
		d.T.Fatalf("no docker network %q", name)
	}
	if nw.Driver != d.p.Name || nw.IPAM.Driver != d.p.Name || !nw.Attachable || nw.EnableIPv6 != v6 || len(nw.Labels) != 0 {
		d.T.Fatalf("docker network %q: %+v", name, nw)
	}
	if !reflect.DeepEqual(nw.Options, opts) || !reflect.DeepEqual(nw.IPAM.Options, ipamOpts) {
		d.T.Fatalf("docker network %q options %v / ipam %v, want %v / %v", name, nw.Options, nw.IPAM.Options, opts, ipamOpts)
	}
	dn, ok := d.mapping(tenant, network, group)
	want := state.Docknet{Common: state.Common{ID: dockernets.StateID(tenant, network, group)},
		TenantName: tenant, NetworkName: network, ServiceName: group, DocknetUUID: nw.ID}
	if !ok || dn != want {
		d.T.Fatalf("docknet state %+v (present %v), want %+v", dn, ok, want)
	}
	// What the plugin itself was told by the engine.
	var sawDriver, sawPool bool
	for _, c := range d.p.Calls("/NetworkDriver.CreateNetwork") {
		var req struct{ NetworkID string }
		_ = json.Unmarshal(c.Body, &req)
		if req.NetworkID != nw.ID {
			continue
		}
		got, err := dockernetstest.Options(c)
		if err != nil {
			d.T.Fatal(err)
		}
		sawDriver = reflect.DeepEqual(got, opts)
	}
	pools, err := d.p.PoolRequests()
	if err != nil {
		d.T.Fatal(err)
	}
	for _, pr := range pools {
		if !pr.V6 && reflect.DeepEqual(pr.Options, ipamOpts) {
			sawPool = true
		}
	}
	if !sawDriver || !sawPool {
		d.T.Fatalf("plugin calls for %q: driver options seen %v, ipam options seen %v", name, sawDriver, sawPool)
	}
}

func (d *dockEnv) requireGone(tenant, network, group string) {
	d.T.Helper()
	name := dockernets.Name(tenant, network, group)
	if _, ok := d.docker(name); ok {
		d.T.Fatalf("docker network %q still exists", name)
	}
	if _, ok := d.mapping(tenant, network, group); ok {
		d.T.Fatalf("docknet state of %q still exists", name)
	}
}

func TestDocknetCreateDelete(t *testing.T) {
	d := newDockEnv(t)
	tenant := dockernetstest.UniqueName("dt")
	plain := dockernetstest.UniqueName("dn") // a network in the default tenant
	for _, n := range []string{"web/" + tenant, "db/" + tenant, "infra/" + tenant, plain} {
		dockernetstest.RemoveAtCleanup(t, d.c, n)
	}
	d.OK("POST", "/api/v1/tenants/"+tenant+"/", fmt.Sprintf(`{"tenantName":%q}`, tenant))

	d.OK("POST", "/api/v1/networks/"+tenant+":web/", fmt.Sprintf(`{"tenantName":%q,"networkName":"web","encap":"vxlan","pktTag":5005,`+
		`"subnet":"198.18.20.0/24","gateway":"198.18.20.254","ipv6Subnet":"2001:db8:20::/64","ipv6Gateway":"2001:db8:20::1"}`, tenant))
	vni := strconv.Itoa(d.NetOper(tenant, "web").Oper.ExternalPktTag)
	d.requireDocker(tenant, "web", "",
		map[string]string{"tenant": tenant, "encap": "vxlan", "pkt-tag": vni},
		map[string]string{"tenant": tenant, "network": "web"}, true)

	d.CreateNet("default", plain, "vlan", "198.18.21.0/24", "", 0)
	vlan := strconv.Itoa(d.NetOper("default", plain).Oper.PktTag)
	d.requireDocker("default", plain, "",
		map[string]string{"tenant": "default", "encap": "vlan", "pkt-tag": vlan},
		map[string]string{"tenant": "default", "network": plain}, false)

	d.CreateEPG(tenant, "db", "web", "")
	d.requireDocker(tenant, "web", "db",
		map[string]string{"tenant": tenant, "encap": "vxlan", "pkt-tag": vni},
		map[string]string{"tenant": tenant, "network": "web", "group": "db"}, true)

	// Infra networks get no docker network.
	d.OK("POST", "/api/v1/networks/"+tenant+":infra/", fmt.Sprintf(`{"tenantName":%q,"networkName":"infra","encap":"vlan",`+
		`"subnet":"198.18.22.0/24","nwType":"infra"}`, tenant))
	d.requireGone(tenant, "infra", "")

	d.OK("DELETE", "/api/v1/endpointGroups/"+tenant+":db/", "")
	d.requireGone(tenant, "web", "db")
	d.DeleteNet(tenant, "web")
	d.requireGone(tenant, "web", "")

	// A docker network removed behind netmaster's back does not block the delete.
	nw, _ := d.docker(plain)
	if err := d.c.RemoveNetwork(mastertest.Ctx(t, 30*time.Second), nw.ID); err != nil {
		t.Fatal(err)
	}
	d.DeleteNet("default", plain)
	d.requireGone("default", plain, "")
	if n := len(d.p.Calls("/NetworkDriver.DeleteNetwork")); n != 3 {
		t.Fatalf("plugin saw %d DeleteNetwork calls, want 3", n)
	}
}

// TestDocknetConflicts: a docker network of another driver refuses the
// create and leaves the store as it was; a network of our driver is reused;
// a create failing after the docker network was made removes it again.
func TestDocknetConflicts(t *testing.T) {
	d := newDockEnv(t)
	ctx := mastertest.Ctx(t, 60*time.Second)
	taken := dockernetstest.UniqueName("dn")
	group := dockernetstest.UniqueName("dg")
	reused := dockernetstest.UniqueName("dr")
	for _, n := range []string{taken, group, reused} {
		dockernetstest.RemoveAtCleanup(t, d.c, n)
	}
	if _, err := d.c.CreateNetwork(ctx, dockernets.CreateRequest{Name: taken, CheckDuplicate: true, Driver: "bridge",
		IPAM: dockernets.IPAM{Config: []dockernets.IPAMConfig{{Subnet: "198.18.30.0/24"}}}}); err != nil {
		t.Fatalf("create bridge network: %v", err)
	}
	before := len(d.p.Calls(""))
	d.Fail("POST", "/api/v1/networks/default:"+taken+"/", mastertest.NetBody("default", taken, "vlan", "198.18.31.0/24", "", 0),
		"network name used by another driver")
	if n := len(d.p.Calls("")); n != before {
		t.Fatalf("refused create still reached the plugin (%d calls)", n-before)
	}

	// A group whose name is taken by another driver.
	d.CreateNet("default", reused, "vlan", "198.18.32.0/24", "", 0)
	if _, err := d.c.CreateNetwork(ctx, dockernets.CreateRequest{Name: group, CheckDuplicate: true, Driver: "bridge",
		IPAM: dockernets.IPAM{Config: []dockernets.IPAMConfig{{Subnet: "198.18.33.0/24"}}}}); err != nil {
		t.Fatalf("create bridge network: %v", err)
	}
	d.Fail("POST", "/api/v1/endpointGroups/default:"+group+"/", mastertest.EPGBody("default", group, reused, ""),
		"network name used by another driver")

	// A group create failing after its docker network was created.
	other := dockernetstest.UniqueName("dg")
	dockernetstest.RemoveAtCleanup(t, d.c, other)
	d.Fail("POST", "/api/v1/endpointGroups/default:"+other+"/", mastertest.EPGBody("default", other, reused, `"policies":["nope"]`),
		"Policy default:nope not found")
	if _, ok := d.docker(other); ok {
		t.Fatalf("docker network %q left behind by a refused group create", other)
	}
	if len(d.p.Calls("/NetworkDriver.DeleteNetwork")) != 1 {
		t.Fatalf("rollback did not delete the docker network through the plugin")
	}
	d.DeleteNet("default", reused)

	// An existing network of our driver is adopted.
	id, created, err := dockernets.Create(ctx, d.c, d.p.Name, dockernets.Spec{Tenant: "default", Network: reused,
		Encap: "vlan", PktTag: 1, Subnet: "198.18.34.0/24"})
	if err != nil || !created {
		t.Fatalf("pre-create: %v %v", created, err)
	}
	d.CreateNet("default", reused, "vlan", "198.18.34.0/24", "", 0)
	if dn, ok := d.mapping("default", reused, ""); !ok || dn.DocknetUUID != id {
		t.Fatalf("mapping %+v (present %v), want docker network %s", dn, ok, id)
	}
	d.DeleteNet("default", reused)
	d.requireGone("default", reused, "")
}

// TestDocknetSwarmRefusals: swarm-mode refuses deleting networks and groups
// mapped to docker networks (netplugin writes the mapping) and never talks
// to Docker itself.
func TestDocknetSwarmRefusals(t *testing.T) {
	cfg := mastertest.DefaultConfig()
	cfg.ClusterMode = "swarm-mode"
	cfg.DockerSocket = t.TempDir() + "/no-docker.sock"
	e := newEnvCfg(t, cfg)
	st := state.New(e.St)
	ctx := mastertest.Ctx(t, 30*time.Second)
	e.CreateNet("default", "web", "vlan", "198.18.40.0/24", "", 0)
	e.CreateNet("default", "app", "vlan", "198.18.41.0/24", "", 0)
	e.CreateEPG("default", "db", "web", "")
	for _, dn := range []state.Docknet{
		{Common: state.Common{ID: "default.app."}, TenantName: "default", NetworkName: "app", DocknetUUID: "uuid-app"},
		{Common: state.Common{ID: "default.web.db"}, TenantName: "default", NetworkName: "web", ServiceName: "db", DocknetUUID: "uuid-db"},
	} {
		if _, err := st.Docknets.Write(ctx, dn); err != nil {
			t.Fatal(err)
		}
	}
	e.Fail("DELETE", "/api/v1/networks/default:app/", "", "cannot delete network app mapped to docker network uuid-app")
	e.Fail("DELETE", "/api/v1/endpointGroups/default:db/", "", "cannot delete group db mapped to docker network uuid-db")
	if err := st.Docknets.Clear(ctx, "default.web.db"); err != nil {
		t.Fatal(err)
	}
	e.OK("DELETE", "/api/v1/endpointGroups/default:db/", "")
	e.OK("DELETE", "/api/v1/networks/default:web/", "")
}

// TestDocknetOtherModes: test and kubernetes modes never talk to Docker
// (the socket given does not exist, so any call would fail the request).
func TestDocknetOtherModes(t *testing.T) {
	for _, mode := range []string{"test", "kubernetes"} {
		t.Run(mode, func(t *testing.T) {
			cfg := mastertest.DefaultConfig()
			cfg.ClusterMode = mode
			cfg.DockerSocket = t.TempDir() + "/no-docker.sock"
			e := newEnvCfg(t, cfg)
			e.CreateNet("default", "web", "vlan", "198.18.42.0/24", "", 0)
			e.CreateEPG("default", "db", "web", "")
			for k := range e.Dump() {
				if len(k) >= len(state.PrefixDocknets) && k[:len(state.PrefixDocknets)] == state.PrefixDocknets {
					t.Fatalf("%s mode wrote %s", mode, k)
				}
			}
			e.OK("DELETE", "/api/v1/endpointGroups/default:db/", "")
			e.OK("DELETE", "/api/v1/networks/default:web/", "")
		})
	}
}

// TestDocknetNoEngine: in docker mode an unreachable engine fails the
// create and leaves nothing behind.
func TestDocknetNoEngine(t *testing.T) {
	cfg := mastertest.DefaultConfig()
	cfg.ClusterMode = "docker"
	cfg.DockerSocket = t.TempDir() + "/no-docker.sock"
	e := newEnvCfg(t, cfg)
	e.FailStatus("POST", "/api/v1/networks/default:web/", mastertest.NetBody("default", "web", "vlan", "198.18.43.0/24", "", 0), 500, "")
}
