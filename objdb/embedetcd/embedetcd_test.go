package embedetcd_test

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/embedetcd"
	"github.com/contiv/netplugin/objdb/etcd"
	"github.com/contiv/netplugin/objdb/objdbtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, objdbtest.LeakOptions()...) }

func TestStartOnFreePortsKeepsDataAcrossRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	cfg := embedetcd.Config{Name: "nm1", DataDir: dir, ClientURL: "http://127.0.0.1:0", PeerURL: "http://127.0.0.1:0"}
	srv, err := embedetcd.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	u, err := url.Parse(srv.Endpoint())
	if err != nil || u.Port() == "0" || u.Port() == "" || u.Hostname() != "127.0.0.1" {
		t.Fatalf("endpoint %q does not report the picked port (%v)", srv.Endpoint(), err)
	}

	c, err := etcd.New(ctx, etcd.Config{Endpoints: []string{srv.Endpoint()}, Root: "/t"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	c.Close()
	srv.Close()
	if err := srv.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	// Same data directory and ports: the data is still there.
	cfg.ClientURL, cfg.PeerURL = srv.Endpoint(), srv.PeerURL()
	srv2, err := embedetcd.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv2.Close()
	c2, err := etcd.New(ctx, etcd.Config{Endpoints: []string{srv2.Endpoint()}, Root: "/t"})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if kv, err := c2.Get(ctx, "k"); err != nil || string(kv.Value) != "v" {
		t.Fatalf("after restart: %+v %v", kv, err)
	}
}

func TestStartRejectsBadConfig(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, cfg := range []embedetcd.Config{
		{},
		{DataDir: t.TempDir(), ClientURL: "127.0.0.1:2379"},
		{DataDir: t.TempDir(), PeerURL: "http://127.0.0.1"},
	} {
		if _, err := embedetcd.Start(ctx, cfg); !errors.Is(err, objdb.ErrInvalid) {
			t.Errorf("Start(%+v): want ErrInvalid, got %v", cfg, err)
		}
	}
}

func TestStartHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := embedetcd.Start(ctx, embedetcd.Config{DataDir: t.TempDir(), ClientURL: "http://127.0.0.1:0", PeerURL: "http://127.0.0.1:0"})
	if err == nil {
		t.Fatal("Start with a cancelled context succeeded")
	}
}
