package e2e

import (
	"context"
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/api/attach"
	"github.com/contiv/netplugin/netmaster/migrate"
	"github.com/contiv/netplugin/test/testbed"
)

// TestMigratedCluster is issue 24's acceptance of the README's Docker flow
// on a migrated cluster (docs/upgrade.md): the original store of
// netmaster/migrate/testdata/original-store is migrated into the cluster
// store; a namespace on host 1 stands in for the migrated endpoint bw5
// (host 1 plays the fixture's hostA; its netplugin takes the endpoint up
// through the attach API with the endpoint's container id); `docker run` on host 0's engine on the migrated network blue
// web-net gets a free address and reaches the stand-in over TCP and UDP.
func TestMigratedCluster(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "netmaster", "migrate", "testdata", "original-store", "etcd-v2-dump.json"))
	if err != nil {
		t.Fatal(err)
	}
	tree, err := migrate.DecodeEtcdV2(data)
	if err != nil {
		t.Fatal(err)
	}
	tb := testbed.New(t, testbed.Config{Hosts: 2, NetMode: "vlan", FwdMode: "bridge", Store: testbed.ExternalEtcd, Docker: true})
	h0, h1 := tb.Hosts[0], tb.Hosts[1]
	m := tb.Masters[0]

	// The migration runs with the netmaster stopped (docs/upgrade.md,
	// order of steps). What our netmaster wrote at its first start goes;
	// the daemons' registrations stay.
	m.Stop(t)
	st := tb.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kvs, err := st.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range kvs {
		if !strings.HasPrefix(kv.Key, "service/") && !strings.HasPrefix(kv.Key, "lock/") {
			if err := st.Delete(ctx, kv.Key); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Host 1 stands in for the fixture's hostA: the endpoints homed there
	// are homed on host 1's label, as they would be on the real host whose
	// netplugin is replaced (docs/upgrade.md step 6).
	for k, v := range tree.KV {
		if strings.HasPrefix(k, "state/eps/") {
			tree.KV[k] = []byte(strings.ReplaceAll(string(v), `"homingHost":"hostA"`, `"homingHost":"`+h1.Name+`"`))
		}
	}
	plan := migrate.Map(tree)
	if _, err := migrate.Apply(ctx, st, plan, migrate.Options{Source: "fixture", Merge: true}); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	m.Start(t)
	tb.WaitLeader(t, nil, 60*time.Second)

	// The Docker network the original netmaster had made on each engine
	// (the fixture was made without Docker): our driver, the contiv
	// network named in the IPAM options.
	for _, h := range tb.Hosts {
		if out, err := h.Docker("network", "create", "-d", testbed.PluginName, "--ipam-driver", testbed.PluginName,
			"--ipam-opt", "tenant=blue", "--ipam-opt", "network=web-net",
			"--subnet", "198.18.10.0/24", "--gateway", "198.18.10.254", "blue-web-net"); err != nil {
			t.Fatalf("docker network create on %s: %v\n%s", h.Name, err, out)
		}
	}

	// The stand-in for migrated endpoint bw5 (198.18.10.6).
	standin := h1.NewContainerNS(t, "bw5")
	actx, acancel := context.WithTimeout(context.Background(), time.Minute)
	defer acancel()
	res, err := attach.NewClient(h1.AttachSocket()).Attach(actx, attach.Request{
		Tenant: "blue", Network: "web-net", ContainerID: "bw5", Name: "bw5", NetNS: standin.NSPath()})
	if err != nil {
		t.Fatalf("attach the stand-in of bw5: %v", err)
	}
	if res.IPAddress != "198.18.10.6/24" || res.MacAddress != "02:02:c6:12:0a:06" {
		t.Fatalf("stand-in of bw5 got %s %s, want its migrated 198.18.10.6/24 02:02:c6:12:0a:06", res.IPAddress, res.MacAddress)
	}
	standin.IP = "198.18.10.6"
	standin.ServeTraffic(t)

	c := dockerRun(t, h0, "newc", "blue-web-net")
	ip := netip.MustParseAddr(c.ip)
	held := map[string]bool{"198.18.10.1": true, "198.18.10.254": true}
	for _, k := range tree.Keys() {
		if strings.HasPrefix(k, "state/eps/web-net.blue-") {
			if a := jsonField(tree.KV[k], "ipAddress"); a != "" {
				held[a] = true
			}
		}
	}
	inPool := !ip.Less(netip.MustParseAddr("198.18.10.100")) && !netip.MustParseAddr("198.18.10.150").Less(ip)
	if held[c.ip] || inPool || !netip.MustParsePrefix("198.18.10.0/24").Contains(ip) {
		t.Fatalf("docker run got %s: held by the migrated cluster, in the group pool, or outside the network", c.ip)
	}
	if err := c.Ping(standin.IP, 1, 15*time.Second); err != nil {
		t.Errorf("ping %s → stand-in %s: %v", c.ip, standin.IP, err)
	}
	if err := c.CheckTraffic(standin.IP, testbed.TrafficPort, 15*time.Second); err != nil {
		t.Errorf("TCP and UDP %s → stand-in of bw5 %s: %v", c.ip, standin.IP, err)
	}
}

// jsonField reads a top-level string field of a JSON object.
func jsonField(b []byte, name string) string {
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return ""
	}
	s, _ := m[name].(string)
	return s
}
