package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/embedetcd"
	"github.com/contiv/netplugin/objdb/etcd"
)

// An in-process etcd on a free port, a client under the default root, and
// a compare-and-swap update: the single-host set-up of netmaster.
func ExampleNew() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir, err := os.MkdirTemp("", "embedetcd-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	srv, err := embedetcd.Start(ctx, embedetcd.Config{
		DataDir: dir, ClientURL: "http://127.0.0.1:0", PeerURL: "http://127.0.0.1:0",
		Logger: testLogger(),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	store, err := etcd.New(ctx, etcd.Config{Endpoints: []string{srv.Endpoint()}, Logger: testLogger()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()

	v, _ := store.Put(ctx, "state/global/global", []byte(`{"id":"global"}`), objdb.WithCreateOnly())
	_, err = store.Put(ctx, "state/global/global", []byte(`{"id":"again"}`), objdb.WithCreateOnly())
	fmt.Println("second create conflicts:", errors.Is(err, objdb.ErrConflict))
	_, err = store.Put(ctx, "state/global/global", []byte(`{"id":"global","v":2}`), objdb.WithPrevVersion(v))
	fmt.Println("swap from the version read:", err == nil)
	kv, _ := store.Get(ctx, "state/global/global")
	fmt.Println(store.Root()+"/"+kv.Key, string(kv.Value))
	// Output:
	// second create conflicts: true
	// swap from the version read: true
	// /contiv.io/state/global/global {"id":"global","v":2}
}
