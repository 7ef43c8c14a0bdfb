// Package plugincontract_test checks netplugin's client of the /plugin/*
// API (netplugin/masterclient) against a real netmaster: the two daemons
// share only the wire types of api/pluginapi, so their agreement is tested
// here, above both (docs/architecture.md, "Dependency direction").
package plugincontract_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"go.uber.org/goleak"

	"github.com/contiv/netplugin/netmaster/master"
	"github.com/contiv/netplugin/netmaster/netmastertest"
	"github.com/contiv/netplugin/netmaster/server"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/etcd"
	"github.com/contiv/netplugin/objdb/objdbtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, objdbtest.LeakOptions()...)
}

func quietLog() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	if os.Getenv("MASTERCLIENT_TEST_LOG") != "" {
		l.SetOutput(os.Stderr)
		l.SetLevel(logrus.DebugLevel)
	}
	return logrus.NewEntry(l)
}

var etcdBackend = objdbtest.Backend{
	Name: "etcd",
	Connect: func(ctx context.Context, endpoint, root string) (objdb.Store, error) {
		return etcd.New(ctx, etcd.Config{Endpoints: []string{endpoint}, Root: root, Logger: quietLog()})
	},
}

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// serveLeaderAPI runs one netmaster leadership term (netmaster/master) over
// st and serves its API on ln until the test ends.
func serveLeaderAPI(t *testing.T, st objdb.Store, ln net.Listener) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h, err := master.New(master.Config{Infra: "default", FwdMode: "bridge", ClusterMode: "test"}, quietLog()).Start(ctx, st)
	if err != nil {
		cancel()
		ln.Close()
		t.Fatalf("start netmaster leader: %v", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
		cancel()
	})
}

// startLeaderAPI serves a leadership term on a fresh loopback port and
// returns its address.
func startLeaderAPI(t *testing.T, st objdb.Store) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveLeaderAPI(t, st, ln)
	return ln.Addr().String()
}

// startNetmasterDaemon runs a whole netmaster (lock campaign, service
// registration, leader API) on its own embedded etcd and returns a store
// client under the default root and the daemon's address, once it holds
// the leader lock.
func startNetmasterDaemon(t *testing.T) (objdb.Store, string) {
	t.Helper()
	srv := objdbtest.StartEmbeddedEtcd(t)
	st := objdbtest.Open(t, etcdBackend, srv.Endpoint, objdb.DefaultRoot)
	nm := netmastertest.Start(t, srv.Endpoint, "bridge", quietLog())
	addr := nm.Addr
	lock, err := st.NewLock(server.LeaderLock, "test-observer", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		h, err := lock.Holder(objdbtest.Context(t, 5*time.Second))
		if err == nil && h == addr && nm.State() == server.RoleLeader {
			return st, addr
		}
		if i == 300 {
			t.Fatalf("netmaster %s did not become leader (holder %q, err %v)", addr, h, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// createNetwork creates a network through netmaster's REST API.
func createNetwork(t *testing.T, addr, tenant, name, subnet, gw string) {
	t.Helper()
	body := fmt.Sprintf(`{"tenantName":%q,"networkName":%q,"encap":"vxlan","subnet":%q,"gateway":%q}`,
		tenant, name, subnet, gw)
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/api/v1/networks/"+tenant+":"+name+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("create network %s: %v", name, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("create network %s: %d %s", name, resp.StatusCode, b)
	}
}
