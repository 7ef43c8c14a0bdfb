// Command store is the store-layer demo the quickstart runs: an embedded
// etcd, the objdb client on it, and what netmaster and netplugin will do
// with it (leader lock hand-over, service registration with TTL, CAS
// counters, typed state and its watch). It stops by itself.
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/dial"
	"github.com/contiv/netplugin/objdb/embedetcd"
	"github.com/contiv/netplugin/state"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "store demo:", err)
		os.Exit(1)
	}
}

func step(format string, a ...any) { fmt.Printf("==> "+format+"\n", a...) }

func run(ctx context.Context) error {
	logrus.SetLevel(logrus.WarnLevel)
	dir, err := os.MkdirTemp("", "contiv-store-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	step("starting an embedded etcd (data in %s)", dir)
	srv, err := embedetcd.Start(ctx, embedetcd.Config{Name: "demo", DataDir: dir, ClientURL: "http://127.0.0.1:0", PeerURL: "http://127.0.0.1:0"})
	if err != nil {
		return err
	}
	defer srv.Close()
	ep := srv.Endpoint()
	fmt.Println("    etcd serving on", ep)
	open := func() (objdb.Store, error) {
		return dial.Open(ctx, dial.Config{EtcdEndpoints: []string{ep}})
	}
	a, err := open()
	if err != nil {
		return err
	}
	defer a.Close()
	b, err := open()
	if err != nil {
		return err
	}
	defer b.Close()

	step("leader lock netmaster/leader (TTL 5s): two contenders")
	la, _ := a.NewLock("netmaster/leader", "127.0.0.1:9999", 5*time.Second)
	lb, _ := b.NewLock("netmaster/leader", "127.0.0.2:9999", 5*time.Second)
	if err := la.Acquire(ctx); err != nil {
		return err
	}
	if ev := <-la.Events(); ev.Type != objdb.LockAcquired {
		return fmt.Errorf("first contender: %s %v", ev.Type, ev.Err)
	}
	if err := lb.Acquire(ctx); err != nil {
		return err
	}
	h, _ := lb.Holder(ctx)
	fmt.Println("    holder:", h)
	start := time.Now()
	if err := la.Release(ctx); err != nil {
		return err
	}
	if ev := <-lb.Events(); ev.Type != objdb.LockAcquired {
		return fmt.Errorf("second contender: %s %v", ev.Type, ev.Err)
	}
	h, _ = lb.Holder(ctx)
	fmt.Printf("    after a graceful release the other contender leads in %v; holder: %s\n", time.Since(start).Round(time.Millisecond), h)
	defer lb.Release(context.Background())

	step("service registry: a netplugin registers with TTL 2s, then its client dies")
	watch, err := a.WatchService(ctx, "netplugin")
	if err != nil {
		return err
	}
	c, err := open()
	if err != nil {
		return err
	}
	info := objdb.ServiceInfo{ServiceName: "netplugin", TTL: 2, HostAddr: "198.18.0.1", Port: 9002, Hostname: "node1"}
	if err := c.RegisterService(ctx, info); err != nil {
		return err
	}
	ev := <-watch
	fmt.Printf("    watcher: %s %s:%d (%s)\n", ev.Type, ev.Info.HostAddr, ev.Info.Port, ev.Info.Hostname)
	c.Close() // no deregistration: the instance must expire by TTL
	start = time.Now()
	ev = <-watch
	fmt.Printf("    watcher: %s %s:%d after %v\n", ev.Type, ev.Info.HostAddr, ev.Info.Port, time.Since(start).Round(time.Millisecond))

	step("compare-and-swap: 16 goroutines x 50 increments of one key over two clients")
	var wg sync.WaitGroup
	start = time.Now()
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(kv objdb.KV) {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				objdb.Update(ctx, kv, "demo/counter", func(cur []byte, ok bool) ([]byte, error) {
					n, _ := strconv.Atoi(string(cur))
					return []byte(strconv.Itoa(n + 1)), nil
				})
			}
		}([]objdb.KV{a, b}[i%2])
	}
	wg.Wait()
	kv, err := a.Get(ctx, "demo/counter")
	if err != nil {
		return err
	}
	fmt.Printf("    counter = %s (want 800) in %v\n", kv.Value, time.Since(start).Round(time.Millisecond))

	step("typed state: write a network, watch it change")
	st := state.New(a)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	changes, err := st.Networks.Watch(wctx)
	if err != nil {
		return err
	}
	nw := state.Network{Common: state.Common{ID: "contiv-net.default"}, Tenant: "default", NetworkName: "contiv-net",
		PktTagType: "vxlan", PktTag: 1, ExtPktTag: 1, SubnetIP: "198.18.10.0", SubnetLen: 24, Gateway: "198.18.10.254"}
	if _, err := st.Networks.Write(ctx, nw); err != nil {
		return err
	}
	nw.EpCount = 1
	if _, err := st.Networks.Write(ctx, nw); err != nil {
		return err
	}
	if err := st.Networks.Clear(ctx, nw.ID); err != nil {
		return err
	}
	for i := 0; i < 3; i++ {
		ch := <-changes
		switch {
		case ch.Curr != nil && ch.Prev == nil:
			fmt.Printf("    create %s (%s %d, %s/%d)\n", ch.ID, ch.Curr.PktTagType, ch.Curr.ExtPktTag, ch.Curr.SubnetIP, ch.Curr.SubnetLen)
		case ch.Curr != nil:
			fmt.Printf("    modify %s (epCount %d -> %d)\n", ch.ID, ch.Prev.EpCount, ch.Curr.EpCount)
		default:
			fmt.Printf("    delete %s\n", ch.ID)
		}
	}
	raw, _ := a.List(ctx, "")
	fmt.Printf("==> done; the store holds %d keys under %s\n", len(raw), a.Root())
	return nil
}
