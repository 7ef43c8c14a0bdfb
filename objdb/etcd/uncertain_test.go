package etcd_test

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/etcd"
	"github.com/contiv/netplugin/objdb/objdbtest"
)

// A compare-and-swap sent while the etcd process is paused times out and
// is retried; etcd applies the first attempt when it resumes, so the retry
// fails its compare. That failure is reported as uncertain (not as a plain
// conflict), and PutResolved settles it as applied: the value is stored
// once and the call succeeds (docs/allocation-integrity.md).
func TestConflictWithOwnAttemptIsUncertain(t *testing.T) {
	srv := objdbtest.StartEtcdProcess(t)
	ctx := objdbtest.Context(t, 60*time.Second)
	root := objdbtest.UniqueRoot(t)
	cfg := testConfig(srv.Endpoint, root)
	cfg.RequestTimeout, cfg.RetryBudget = 500*time.Millisecond, 20*time.Second
	c, err := etcd.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i, resolved := range []bool{false, true} {
		key := fmt.Sprintf("k%d", i)
		ver, err := c.Put(ctx, key, []byte("v0"))
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			var err error
			if resolved {
				_, err = objdb.PutResolved(ctx, c, key, []byte("v1"), objdb.WithPrevVersion(ver))
			} else {
				_, err = c.Put(ctx, key, []byte("v1"), objdb.WithPrevVersion(ver))
			}
			done <- err
		}()
		time.Sleep(2 * time.Second) // several attempts time out
		if err := srv.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		err = <-done
		switch {
		case resolved && err != nil:
			t.Fatalf("PutResolved after a stall: %v", err)
		case !resolved && err != nil && (!errors.Is(err, objdb.ErrUncertain) || !errors.Is(err, objdb.ErrConflict)):
			t.Fatalf("Put after a stall: %v, want success or a conflict marked uncertain", err)
		}
		t.Logf("resolved=%t: %v", resolved, err)
		kv, gerr := c.Get(ctx, key)
		if gerr != nil || string(kv.Value) != "v1" {
			t.Fatalf("%s after the stall: %q %v, want v1", key, kv.Value, gerr)
		}
	}
}
