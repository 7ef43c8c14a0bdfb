package embedetcd_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net/url"
	"path/filepath"
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

// A key rewritten many times leaves no history behind: the server
// compacts and defragments by itself, and the write-ahead log does not
// preallocate far more than the data.
func TestDiskUseStaysNearDatabase(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()
	srv, err := embedetcd.Start(ctx, embedetcd.Config{DataDir: dir, ClientURL: "http://127.0.0.1:0", PeerURL: "http://127.0.0.1:0",
		CompactionRetention: time.Second, DefragInterval: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c, err := etcd.New(ctx, etcd.Config{Endpoints: []string{srv.Endpoint()}, Root: "/t"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	value := bytes.Repeat([]byte("x"), 64<<10)
	const writes = 160 // 10 MB of history for one 64 kB key
	for i := 0; i < writes; i++ {
		value[0] = byte(i)
		if _, err := c.Put(ctx, "big", value); err != nil {
			t.Fatal(err)
		}
	}
	var db, total int64
	for {
		db, total = diskUse(t, dir)
		if db < 2<<20 && total < 24<<20 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("after %d writes of 64 kB: database file %d bytes, data folder %d bytes; want under 2 MB and 24 MB", writes, db, total)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("database file %d bytes, data folder %d bytes", db, total)
	if kv, err := c.Get(ctx, "big"); err != nil || kv.Value[0] != byte((writes-1)%256) {
		t.Fatalf("latest value lost: %v", err)
	}
}

// diskUse returns the size of the bolt database and of the whole folder.
func diskUse(t *testing.T, dir string) (db, total int64) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return nil // removed meanwhile
		}
		total += info.Size()
		if d.Name() == "db" {
			db = info.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return db, total
}
