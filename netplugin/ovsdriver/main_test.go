package ovsdriver_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"go.uber.org/goleak"

	"github.com/contiv/netplugin/netplugin/ovsdriver"
	"github.com/contiv/netplugin/objdb/etcd"
	"github.com/contiv/netplugin/objdb/objdbtest"
	"github.com/contiv/netplugin/state"
	"github.com/contiv/netplugin/test/ovstest"
	"github.com/contiv/netplugin/utils/logtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, objdbtest.LeakOptions()...) }

// env is one private OVS with a netlink handle for its namespace.
type env struct {
	ovs *ovstest.OVS
	nl  *netlink.Handle
	ctx context.Context
}

func newEnv(t *testing.T) *env {
	t.Helper()
	o := ovstest.Start(t)
	nsh, err := netns.GetFromName(o.NetNS)
	if err != nil {
		t.Fatalf("open namespace %s: %v", o.NetNS, err)
	}
	t.Cleanup(func() { nsh.Close() })
	h, err := netlink.NewHandleAt(nsh)
	if err != nil {
		t.Fatalf("netlink handle in %s: %v", o.NetNS, err)
	}
	t.Cleanup(h.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	t.Cleanup(cancel)
	return &env{ovs: o, nl: h, ctx: ctx}
}

// newStore returns a state store on a fresh root of an embedded etcd.
func newStore(t *testing.T) *state.Store {
	t.Helper()
	srv := objdbtest.StartEmbeddedEtcd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := etcd.New(ctx, etcd.Config{Endpoints: []string{srv.Endpoint}, Root: objdbtest.UniqueRoot(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return state.New(st)
}

// driver opens a Driver on e's OVS (netdev datapath, links in its
// namespace); it is closed in cleanup.
func (e *env) driver(t *testing.T, st *state.Store) *ovsdriver.Driver {
	t.Helper()
	log := logrus.New()
	log.SetLevel(logrus.DebugLevel)
	log.SetOutput(logtest.Writer(t))
	d, err := ovsdriver.New(e.ctx, ovsdriver.Config{
		OVSDB: e.ovs.DBSock, DatapathType: "netdev", HostLabel: "host1", Store: st, Netlink: e.nl,
		NetNSPath: "/var/run/netns/" + e.ovs.NetNS,
		Logger:    log,
	})
	if err != nil {
		t.Fatalf("new driver: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// vsctl runs ovs-vsctl and returns its trimmed output.
func (e *env) vsctl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := e.ovs.Vsctl(args...)
	if err != nil {
		t.Fatalf("ovs-vsctl %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(out)
}

// linkExists reports whether the OVS namespace has a link called name.
func (e *env) linkExists(t *testing.T, name string) bool {
	t.Helper()
	_, err := e.nl.LinkByName(name)
	if err == nil {
		return true
	}
	if _, ok := err.(netlink.LinkNotFoundError); !ok {
		t.Fatalf("look up %s: %v", name, err)
	}
	return false
}

// addVeth creates an up veth pair in the OVS namespace (removed in
// cleanup), both ends with MTU mtu (0: the default).
func (e *env) addVeth(t *testing.T, name, peer string, mtu int) netlink.Link {
	t.Helper()
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name, MTU: mtu}, PeerName: peer, PeerMTU: uint32(mtu)}
	if err := e.nl.LinkAdd(veth); err != nil {
		t.Fatalf("create veth %s: %v", name, err)
	}
	t.Cleanup(func() {
		if l, err := e.nl.LinkByName(name); err == nil {
			e.nl.LinkDel(l)
		}
	})
	l, err := e.nl.LinkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.nl.LinkSetUp(l); err != nil {
		t.Fatal(err)
	}
	return l
}

// newNetNS creates a named namespace (removed in cleanup) and returns a
// handle to it.
func newNetNS(t *testing.T) netns.NsHandle {
	t.Helper()
	h, _ := newNamedNetNS(t)
	return h
}

// newNamedNetNS is newNetNS that also returns the namespace's bind mount.
func newNamedNetNS(t *testing.T) (netns.NsHandle, string) {
	t.Helper()
	b := make([]byte, 4)
	rand.Read(b)
	name := "ovsdrv-" + hex.EncodeToString(b)
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
	h, err := netns.GetFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h, "/var/run/netns/" + name
}
