package server

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/objdbtest"
)

// Only the leader runs an ofnet master, so only the leader is listed in
// netmaster.rpc (<internal IP>:9001); every netmaster is in netmaster.
func TestRPCServiceOnlyForLeader(t *testing.T) {
	srv := objdbtest.StartEmbeddedEtcd(t)
	a := startDaemonOn(t, srv.Endpoint, "127.0.0.2")
	waitFor(t, 10*time.Second, "A to lead", func() bool { return a.d.State() == RoleLeader })
	b := startDaemonOn(t, srv.Endpoint, "127.0.0.3")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	count := func(name, role string) int {
		list, err := b.d.store.GetService(ctx, name)
		if err != nil {
			t.Fatalf("list %s: %v", name, err)
		}
		n := 0
		for _, s := range list {
			if s.Role == role || role == "" {
				n++
			}
		}
		return n
	}
	waitFor(t, 10*time.Second, "both netmasters listed", func() bool { return count(ServiceNetmaster, "") == 2 })
	list, err := b.d.store.GetService(ctx, ServiceNetmasterRPC)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].HostAddr != "127.0.0.2" || list[0].Port != RPCPort || list[0].Role != RoleLeader {
		t.Fatalf("netmaster.rpc instances: %+v", list)
	}
	a.stop()
	waitFor(t, 10*time.Second, "B to lead", func() bool { return b.d.State() == RoleLeader })
	waitFor(t, 10*time.Second, "B listed as the only rpc instance", func() bool {
		list, err := b.d.store.GetService(ctx, ServiceNetmasterRPC)
		return err == nil && len(list) == 1 && list[0].HostAddr == "127.0.0.3"
	})
}

// startDaemonOn runs a netmaster on ip (a loopback address, so two
// netmasters do not share service keys).
func startDaemonOn(t *testing.T, endpoint, ip string) *running {
	t.Helper()
	leader := LeaderFunc(func(ctx context.Context, st objdb.Store) (http.Handler, error) { return http.NotFoundHandler(), nil })
	return launch(t, testConfig(endpoint, freeAddr(t, ip)), leader, "on "+ip)
}
