package netctl

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/netmaster/master"
	"github.com/contiv/netplugin/netmaster/server"
	"github.com/contiv/netplugin/objdb/objdbtest"
	"github.com/contiv/netplugin/utils/daemonflags"
)

// The golden session of docs/netctl.md §8 against our own netmaster, started here
// on an embedded etcd (a real daemon on a loopback port, as an operator
// would run it).
func TestGoldenSessionAgainstNetmaster(t *testing.T) {
	replayGolden(t, startNetmaster(t))
}

// startNetmaster runs a netmaster (leader logic of netmaster/master) on a
// fresh embedded etcd and returns its base URL once it leads.
func startNetmaster(t *testing.T) string {
	t.Helper()
	srv := objdbtest.StartEmbeddedEtcd(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := server.Config{
		Common: daemonflags.Common{Mode: "test", NetMode: "vxlan", FwdMode: "routing",
			EtcdEndpoints: []string{srv.Endpoint}, LogLevel: "error"},
		Infra: "default", ExternalAddress: addr, InternalAddress: addr, LeaderTTL: 5 * time.Second,
	}
	log := logrus.New()
	log.SetOutput(io.Discard)
	entry := logrus.NewEntry(log)
	leader, err := master.NewLeader(cfg, entry)
	if err != nil {
		t.Fatal(err)
	}
	d, err := server.New(cfg, leader, entry)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("netmaster did not stop")
		}
	})
	base := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/api/v1/tenants/default/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("netmaster at %s not serving as leader: %v", base, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
