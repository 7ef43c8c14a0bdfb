package infraroute

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/contiv/netplugin/state"
	"github.com/contiv/netplugin/utils/logtest"
)

// ns is a private network namespace with a netlink handle in it.
func ns(t *testing.T) *netlink.Handle {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs root for a network namespace")
		}
		t.Skip("needs root for a network namespace")
	}
	name := fmt.Sprintf("infraroute-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	nsh, err := netns.GetFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nsh.Close() })
	h, err := netlink.NewHandleAt(nsh)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

// infraPort makes the link contivh1 (up; a veth end, the kernel here may
// have no dummy links) with addr on it, if addr is not empty.
func infraPort(t *testing.T, h *netlink.Handle, addr string) netlink.Link {
	t.Helper()
	if err := h.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: Network}, PeerName: "irpeer"}); err != nil {
		t.Fatal(err)
	}
	link, err := h.LinkByName(Network)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.LinkSetUp(link); err != nil {
		t.Fatal(err)
	}
	if addr != "" {
		addAddr(t, h, link, addr)
	}
	return link
}

func addAddr(t *testing.T, h *netlink.Handle, link netlink.Link, addr string) {
	t.Helper()
	a, err := netlink.ParseAddr(addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.AddrAdd(link, a); err != nil {
		t.Fatal(err)
	}
}

// routes lists the namespace's IPv4 main-table routes as "dst via gw proto N".
func routes(t *testing.T, h *netlink.Handle) []string {
	t.Helper()
	rs, err := h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_TABLE)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rs {
		if r.Gw == nil {
			continue // the address's own subnet route
		}
		out = append(out, fmt.Sprintf("%s via %s proto %d", r.Dst, r.Gw, r.Protocol))
	}
	slices.Sort(out)
	return out
}

func newReconciler(t *testing.T, h *netlink.Handle, n *nets) *Reconciler {
	t.Helper()
	r, err := New(Config{Networks: n.get, Netlink: h, Log: logtest.New(t, logrus.InfoLevel)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

type nets struct{ list []state.Network }

func (n *nets) get() []state.Network { return slices.Clone(n.list) }

func (n *nets) remove(id string) {
	n.list = slices.DeleteFunc(n.list, func(x state.Network) bool { return x.ID == id })
}

func testNets() *nets {
	return &nets{list: []state.Network{
		{Common: state.Common{ID: "contivh1.t1"}, Tenant: "t1", NetworkName: Network, NwType: "infra", PktTagType: "vxlan",
			SubnetIP: "198.18.50.0", SubnetLen: 24, Gateway: "198.18.50.254"},
		{Common: state.Common{ID: "pods.t1"}, Tenant: "t1", NetworkName: "pods", PktTagType: "vxlan", SubnetIP: "198.18.60.0", SubnetLen: 24},
		{Common: state.Common{ID: "more.t1"}, Tenant: "t1", NetworkName: "more", PktTagType: "vxlan", SubnetIP: "198.18.70.0", SubnetLen: 23},
		{Common: state.Common{ID: "vlan.t1"}, Tenant: "t1", NetworkName: "vlan", PktTagType: "vlan", SubnetIP: "198.18.61.0", SubnetLen: 24},
		{Common: state.Common{ID: "pods.t2"}, Tenant: "t2", NetworkName: "pods", PktTagType: "vxlan", SubnetIP: "198.18.62.0", SubnetLen: 24},
		{Common: state.Common{ID: "other.t1"}, Tenant: "t1", NetworkName: "other", NwType: "infra", PktTagType: "vxlan",
			SubnetIP: "198.18.63.0", SubnetLen: 24, Gateway: "198.18.63.254"},
	}}
}

// TestReconcile: the routes follow the networks; other routes, and the
// routes of other protocols, are left alone; a stale route of an earlier
// run is removed.
func TestReconcile(t *testing.T) {
	h := ns(t)
	link := infraPort(t, h, "198.18.50.1/24")
	_, foreign, _ := net.ParseCIDR("198.18.64.0/24")
	if err := h.RouteAdd(&netlink.Route{LinkIndex: link.Attrs().Index, Dst: foreign, Gw: net.ParseIP("198.18.50.9"), Protocol: unix.RTPROT_STATIC}); err != nil {
		t.Fatal(err)
	}
	_, stale, _ := net.ParseCIDR("198.18.65.0/24")
	if err := h.RouteAdd(&netlink.Route{LinkIndex: link.Attrs().Index, Dst: stale, Gw: net.ParseIP("198.18.50.254"), Protocol: Protocol}); err != nil {
		t.Fatal(err)
	}
	n := testNets()
	r := newReconciler(t, h, n)
	ctx := context.Background()
	for range 2 { // a second run changes nothing
		if err := r.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		want := []string{
			"198.18.60.0/24 via 198.18.50.254 proto 99",
			"198.18.64.0/24 via 198.18.50.9 proto 4",
			"198.18.70.0/23 via 198.18.50.254 proto 99",
		}
		if got := routes(t, h); !slices.Equal(got, want) {
			t.Fatalf("routes:\n got %q\nwant %q", got, want)
		}
	}
	n.remove("more.t1")
	if err := r.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{"198.18.60.0/24 via 198.18.50.254 proto 99", "198.18.64.0/24 via 198.18.50.9 proto 4"}
	if got := routes(t, h); !slices.Equal(got, want) {
		t.Fatalf("after the network's removal:\n got %q\nwant %q", got, want)
	}
	if got := r.Applied(); len(got) != 1 || got[0].Dst != "198.18.60.0/24" {
		t.Errorf("Applied() = %+v", got)
	}
	n.remove("contivh1.t1")
	if err := r.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	want = []string{"198.18.64.0/24 via 198.18.50.9 proto 4"}
	if got := routes(t, h); !slices.Equal(got, want) {
		t.Fatalf("after the infra network's removal:\n got %q\nwant %q", got, want)
	}
}

// TestConverges: while the port has no address its gateway is unreachable
// and the route fails (the work queue retries); once the address is there
// the next run converges. Without the port there is nothing to do.
func TestConverges(t *testing.T) {
	h := ns(t)
	n := testNets()
	r := newReconciler(t, h, n)
	ctx := context.Background()
	if err := r.Reconcile(ctx); err != nil {
		t.Fatalf("no port yet: %v", err)
	}
	if got := r.Desired(); len(got) != 0 {
		t.Fatalf("no port yet, desired %+v", got)
	}
	link := infraPort(t, h, "")
	for i := range 3 {
		if err := r.Reconcile(ctx); err == nil {
			t.Fatalf("run %d without the port's address: no error", i)
		}
	}
	addAddr(t, h, link, "198.18.50.1/24")
	if err := r.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{"198.18.60.0/24 via 198.18.50.254 proto 99", "198.18.70.0/23 via 198.18.50.254 proto 99"}
	if got := routes(t, h); !slices.Equal(got, want) {
		t.Fatalf("routes:\n got %q\nwant %q", got, want)
	}
}
