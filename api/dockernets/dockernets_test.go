package dockernets_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/contiv/netplugin/api/dockernets"
	"github.com/contiv/netplugin/api/dockernets/dockernetstest"
	"github.com/contiv/netplugin/state"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestNegotiateVersion(t *testing.T) {
	for min, want := range map[string]string{
		"1.12": "1.23", "1.23": "1.23", "1.24": "1.24", "1.44": "1.44", "2.0": "2.0",
		"": "1.23", "x.y": "1.23", "1": "1.23", "1.-3": "1.23",
	} {
		if got := dockernets.NegotiateVersion(min); got != want {
			t.Errorf("NegotiateVersion(%q) = %q, want %q", min, got, want)
		}
	}
}

func TestNames(t *testing.T) {
	cases := []struct{ tenant, network, group, name string }{
		{"default", "web", "", "web"},
		{"blue", "web", "", "web/blue"},
		{"default", "web", "db", "db"},
		{"blue", "web", "db", "db/blue"},
	}
	for _, c := range cases {
		if got := dockernets.Name(c.tenant, c.network, c.group); got != c.name {
			t.Errorf("Name(%q,%q,%q) = %q, want %q", c.tenant, c.network, c.group, got, c.name)
		}
	}
	if got := dockernets.StateID("blue", "web", ""); got != "blue.web." {
		t.Errorf("StateID = %q", got)
	}
	for name, want := range map[string][3]string{
		"web":         {"default", "web", ""},
		"web/blue":    {"blue", "web", ""},
		"db.web/blue": {"blue", "web", "db"},
		"db.web":      {"default", "web", "db"},
	} {
		tn, nw, g := dockernets.ParseName(name)
		if got := [3]string{tn, nw, g}; got != want {
			t.Errorf("ParseName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestRequestShape(t *testing.T) {
	s := dockernets.Spec{Tenant: "blue", Network: "web", Group: "db", Encap: "vlan", PktTag: 12,
		Subnet: "198.18.1.0/24", Gateway: "198.18.1.1", IPv6Subnet: "2001:db8:1::/64", IPv6Gateway: "2001:db8:1::1"}
	got := s.Request("netplugin")
	want := dockernets.CreateRequest{
		Name: "db/blue", CheckDuplicate: true, Driver: "netplugin", EnableIPv6: true, Attachable: true,
		Options: map[string]string{"tenant": "blue", "encap": "vlan", "pkt-tag": "12"},
		IPAM: dockernets.IPAM{Driver: "netplugin",
			Config:  []dockernets.IPAMConfig{{Subnet: "198.18.1.0/24", Gateway: "198.18.1.1"}, {Subnet: "2001:db8:1::/64", Gateway: "2001:db8:1::1"}},
			Options: map[string]string{"tenant": "blue", "network": "web", "group": "db"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("request:\n got %+v\nwant %+v", got, want)
	}
}

// TestCreateReuseRemove drives a real engine through the fake plugin.
func TestCreateReuseRemove(t *testing.T) {
	c := dockernetstest.RequireEngine(t)
	p := dockernetstest.Start(t)
	ctx := testCtx(t)
	tenant := dockernetstest.UniqueName("t")
	s := dockernets.Spec{Tenant: tenant, Network: "web", Encap: "vxlan", PktTag: 5001,
		Subnet: "198.18.7.0/24", Gateway: "198.18.7.254", IPv6Subnet: "2001:db8:7::/64", IPv6Gateway: "2001:db8:7::1"}
	name := dockernets.Name(tenant, "web", "")
	dockernetstest.RemoveAtCleanup(t, c, name)

	id, created, err := dockernets.Create(ctx, c, p.Name, s)
	if err != nil || !created {
		t.Fatalf("create: id %q created %v err %v", id, created, err)
	}
	nw, err := c.InspectNetwork(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if nw.Name != name || nw.Driver != p.Name || nw.IPAM.Driver != p.Name || !nw.Attachable || !nw.EnableIPv6 {
		t.Fatalf("inspect: %+v", nw)
	}
	cn := p.Calls("/NetworkDriver.CreateNetwork")
	if len(cn) != 1 {
		t.Fatalf("want 1 CreateNetwork call, got %d", len(cn))
	}
	opts, err := dockernetstest.Options(cn[0])
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"tenant": tenant, "encap": "vxlan", "pkt-tag": "5001"}; !reflect.DeepEqual(opts, want) {
		t.Fatalf("driver options %v, want %v", opts, want)
	}
	pools, err := p.PoolRequests()
	if err != nil {
		t.Fatal(err)
	}
	if len(pools) != 2 || pools[0].Pool != "198.18.7.0/24" || pools[0].V6 || !pools[1].V6 || pools[1].Pool != "2001:db8:7::/64" {
		t.Fatalf("pool requests %+v", pools)
	}
	if want := map[string]string{"tenant": tenant, "network": "web"}; !reflect.DeepEqual(pools[0].Options, want) {
		t.Fatalf("ipam options %v, want %v", pools[0].Options, want)
	}

	again, created, err := dockernets.Create(ctx, c, p.Name, s)
	if err != nil || created || again != id {
		t.Fatalf("second create: id %q (want %q) created %v err %v", again, id, created, err)
	}
	if n := len(p.Calls("/NetworkDriver.CreateNetwork")); n != 1 {
		t.Fatalf("reuse called CreateNetwork again (%d calls)", n)
	}

	existed, err := dockernets.Remove(ctx, c, tenant, "web", "")
	if err != nil || !existed {
		t.Fatalf("remove: existed %v err %v", existed, err)
	}
	if _, err := c.InspectNetwork(ctx, id); !errors.Is(err, dockernets.ErrNotFound) {
		t.Fatalf("inspect after remove: %v", err)
	}
	if n := len(p.Calls("/NetworkDriver.DeleteNetwork")); n != 1 {
		t.Fatalf("want 1 DeleteNetwork call, got %d", n)
	}
	existed, err = dockernets.Remove(ctx, c, tenant, "web", "")
	if err != nil || existed {
		t.Fatalf("second remove: existed %v err %v", existed, err)
	}
}

func TestOtherDriver(t *testing.T) {
	c := dockernetstest.RequireEngine(t)
	p := dockernetstest.Start(t)
	ctx := testCtx(t)
	group := dockernetstest.UniqueName("g")
	dockernetstest.RemoveAtCleanup(t, c, group)
	if _, err := c.CreateNetwork(ctx, dockernets.CreateRequest{Name: group, CheckDuplicate: true, Driver: "bridge",
		IPAM: dockernets.IPAM{Config: []dockernets.IPAMConfig{{Subnet: "198.18.8.0/24"}}}}); err != nil {
		t.Fatalf("create bridge network: %v", err)
	}
	s := dockernets.Spec{Tenant: "default", Network: "web", Group: group, Encap: "vlan", PktTag: 3, Subnet: "198.18.9.0/24"}
	_, _, err := dockernets.Create(ctx, c, p.Name, s)
	if !errors.Is(err, dockernets.ErrOtherDriver) {
		t.Fatalf("create over a bridge network: %v, want ErrOtherDriver", err)
	}
	if n := len(p.Calls("/NetworkDriver.CreateNetwork")); n != 0 {
		t.Fatalf("plugin asked to create (%d calls)", n)
	}
}

func TestEngineErrors(t *testing.T) {
	c := dockernetstest.RequireEngine(t)
	ctx := testCtx(t)
	missing := dockernetstest.UniqueName("missing")
	if _, err := c.InspectNetwork(ctx, missing); !errors.Is(err, dockernets.ErrNotFound) {
		t.Fatalf("inspect missing: %v", err)
	}
	if err := c.RemoveNetwork(ctx, missing); !errors.Is(err, dockernets.ErrNotFound) {
		t.Fatalf("remove missing: %v", err)
	}
	// A malformed subnet is refused by the engine with an API error.
	_, err := c.CreateNetwork(ctx, dockernets.CreateRequest{Name: missing, Driver: "bridge",
		IPAM: dockernets.IPAM{Config: []dockernets.IPAMConfig{{Subnet: "198.18.300.0/24"}}}})
	var ae *dockernets.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("create with a bad subnet: %v, want *APIError", err)
	}
	dockernetstest.RemoveAtCleanup(t, c, missing)
}

func TestNoEngine(t *testing.T) {
	c := dockernets.NewClient(t.TempDir() + "/none.sock")
	defer c.Close()
	if _, err := c.APIVersion(testCtx(t)); err == nil {
		t.Fatal("APIVersion on a missing socket succeeded")
	}
}

func TestSpecOf(t *testing.T) {
	vx := state.Network{Tenant: "t1", NetworkName: "n1", PktTagType: "vxlan", PktTag: 5, ExtPktTag: 9001,
		SubnetIP: "198.18.10.0", SubnetLen: 24, Gateway: "198.18.10.254", IPv6Subnet: "2001:db8::", IPv6SubnetLen: 64, IPv6Gateway: "2001:db8::1"}
	want := dockernets.Spec{Tenant: "t1", Network: "n1", Group: "g1", Encap: "vxlan", PktTag: 9001, Subnet: "198.18.10.0/24",
		Gateway: "198.18.10.254", IPv6Subnet: "2001:db8::/64", IPv6Gateway: "2001:db8::1"}
	if got := dockernets.SpecOf(vx, "g1"); got != want {
		t.Errorf("dockernets.SpecOf(vxlan) = %+v, want %+v", got, want)
	}
	vl := state.Network{Tenant: "t1", NetworkName: "n2", PktTagType: "vlan", PktTag: 100, SubnetIP: "198.18.11.0", SubnetLen: 24}
	want = dockernets.Spec{Tenant: "t1", Network: "n2", Encap: "vlan", PktTag: 100, Subnet: "198.18.11.0/24"}
	if got := dockernets.SpecOf(vl, ""); got != want {
		t.Errorf("dockernets.SpecOf(vlan) = %+v, want %+v", got, want)
	}
}
