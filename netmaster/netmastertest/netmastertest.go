// Package netmastertest runs a whole netmaster inside a test: the daemon of
// netmaster/server (lock campaign, service registration, follower proxy)
// with the leader of netmaster/master, on a loopback port, as an operator
// would run it. test/nmproc runs one as a separate process instead.
package netmastertest

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/netmaster/master"
	"github.com/contiv/netplugin/netmaster/server"
	"github.com/contiv/netplugin/utils/daemonflags"
	"github.com/contiv/netplugin/utils/logtest"
)

// Daemon is a netmaster running in the test process.
type Daemon struct {
	*server.Daemon
	// Addr is the ip:port of its API (external and internal address).
	Addr string
}

// Start runs a netmaster in test mode (vxlan, forwarding mode fwdMode,
// infra default) on the etcd at endpoint and a free 127.0.0.1 port until
// the test ends, and returns once it leads. log nil: warnings and errors
// go to the test's log under -v (utils/logtest).
func Start(t testing.TB, endpoint, fwdMode string, log *logrus.Entry) *Daemon {
	t.Helper()
	return StartStore(t, daemonflags.Common{EtcdEndpoints: []string{endpoint}}, fwdMode, log)
}

// StartStore is Start on the store that store's EtcdEndpoints or
// ConsulEndpoints name.
func StartStore(t testing.TB, store daemonflags.Common, fwdMode string, log *logrus.Entry) *Daemon {
	t.Helper()
	if log == nil {
		log = logrus.NewEntry(logtest.New(t, logrus.WarnLevel))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := server.Config{
		Common: daemonflags.Common{Mode: "test", NetMode: "vxlan", FwdMode: fwdMode,
			EtcdEndpoints: store.EtcdEndpoints, ConsulEndpoints: store.ConsulEndpoints, LogLevel: "error"},
		Infra: "default", ExternalAddress: addr, InternalAddress: addr, LeaderTTL: 5 * time.Second,
	}
	leader, err := master.NewLeader(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	d, err := server.New(cfg, leader, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var runErr error
	go func() {
		defer close(done)
		runErr = d.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("netmaster did not stop")
		}
	})
	for deadline := time.Now().Add(30 * time.Second); d.State() != server.RoleLeader; time.Sleep(50 * time.Millisecond) {
		select {
		case <-done:
			t.Fatalf("netmaster at %s exited: %v", addr, runErr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("netmaster at %s did not become leader in 30s (%s)", addr, d.State())
		}
	}
	return &Daemon{Daemon: d, Addr: addr}
}

// StartErr runs a netmaster on store and returns the error it exits with
// within 10 s; a netmaster still running then is stopped and StartErr
// returns nil.
func StartErr(t testing.TB, store daemonflags.Common) error {
	t.Helper()
	log := logrus.NewEntry(logtest.New(t, logrus.WarnLevel))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := server.Config{
		Common: daemonflags.Common{Mode: "test", NetMode: "vxlan", FwdMode: "routing",
			EtcdEndpoints: store.EtcdEndpoints, ConsulEndpoints: store.ConsulEndpoints, LogLevel: "error"},
		Infra: "default", ExternalAddress: addr, InternalAddress: addr, LeaderTTL: 5 * time.Second,
	}
	leader, err := master.NewLeader(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	d, err := server.New(cfg, leader, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = d.Run(ctx)
	if ctx.Err() != nil {
		return nil
	}
	return err
}
