package testbed

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/etcd"
	"github.com/contiv/netplugin/utils/tlsutil"
)

// isFakeNetplugin tells TestMain that the test binary was started by a
// testbed as its netplugin (Config.NetpluginBinary = the test binary).
func isFakeNetplugin() bool { return len(os.Args) > 1 && os.Args[1] == "--mode" }

// fakeNetplugin stands in for netplugin to test the harness's side of it:
// it checks that it runs inside its host (the vtep address is local, the
// OVS socket answers), registers netplugin.vtep in the cluster store as
// netplugin does, and deregisters on SIGTERM.
func fakeNetplugin(args []string) int {
	fs := flag.NewFlagSet("netplugin", flag.ContinueOnError)
	str := func(name string) *string { return fs.String(name, "", name) }
	host, vtep, etcdURL, ovsdb := str("host"), str("vtep-ip"), str("etcd-endpoints"), str("ovsdb-socket")
	cacert, cert, key := str("etcd-cacert"), str("etcd-cert"), str("etcd-key")
	for _, name := range []string{"mode", "netmode", "fwdmode", "ctrl-ip", "vlan-uplinks", "ovs-datapath", "attach-socket", "cni-socket", "cni-state-dir", "mesos-socket", "mesos-state-dir", "log-level", "rpc-tls-cert-file", "rpc-tls-key-file", "rpc-tls-ca-file"} {
		str(name)
	}
	if err := fs.Parse(args); err != nil {
		return 22
	}
	fail := func(err error) int {
		fmt.Println("fake netplugin:", err)
		return 1
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return fail(err)
	}
	if !strings.Contains(fmt.Sprint(addrs), *vtep+"/") {
		return fail(fmt.Errorf("vtep %s is not local: %v", *vtep, addrs))
	}
	c, err := net.Dial("unix", *ovsdb)
	if err != nil {
		return fail(err)
	}
	c.Close()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	octx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cfg := etcd.Config{Endpoints: []string{*etcdURL}}
	if *cacert != "" {
		if cfg.TLS, err = tlsutil.ClientConfig(*cacert, *cert, *key); err != nil {
			return fail(err)
		}
	}
	st, err := etcd.New(octx, cfg)
	if err != nil {
		return fail(err)
	}
	defer st.Close()
	info := objdb.ServiceInfo{ServiceName: "netplugin.vtep", HostAddr: *vtep, Port: 4789, Hostname: *host, TTL: 10}
	if err := st.RegisterService(octx, info); err != nil {
		return fail(err)
	}
	fmt.Println("fake netplugin registered", *host)
	<-ctx.Done()
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer dcancel()
	if err := st.DeregisterService(dctx, info); err != nil {
		return fail(err)
	}
	fmt.Println("fake netplugin stopped")
	return 0
}

// TestNetpluginLifecycle runs the test binary as netplugin: New waits for
// both hosts' registration; stop, kill and restart act on the process.
func TestNetpluginLifecycle(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tb := New(t, Config{Hosts: 2, NetpluginBinary: exe})
	h := tb.Hosts[0]
	if logs := h.Logs(); !strings.Contains(logs, "--host "+h.Name+" ") || !strings.Contains(logs, "fake netplugin registered "+h.Name) {
		t.Fatalf("netplugin log of %s:\n%s", h.Name, logs)
	}
	h.StopNetplugin(t)
	if h.NetpluginRunning() || !strings.Contains(h.Logs(), "fake netplugin stopped") {
		t.Fatalf("after StopNetplugin:\n%s", h.Logs())
	}
	tb.WaitNetplugins(t, 1, 30*time.Second)
	h.StartNetplugin(t)
	tb.WaitNetplugins(t, 2, 30*time.Second)
	h.KillNetplugin(t)
	if h.NetpluginRunning() {
		t.Fatal("netplugin runs after KillNetplugin")
	}
	h.RestartNetplugin(t)
	if !h.NetpluginRunning() {
		t.Fatal("netplugin does not run after RestartNetplugin")
	}
}
