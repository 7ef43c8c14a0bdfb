package nsutil_test

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"os/exec"
	"strconv"
	"testing"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/containernetworking/plugins/pkg/testutils"
	"github.com/vishvananda/netlink"
	"go.uber.org/goleak"

	"github.com/contiv/netplugin/netplugin/nsutil"
	"github.com/contiv/netplugin/objdb/objdbtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newNS creates a namespace removed when the test ends.
func newNS(t *testing.T) ns.NetNS {
	t.Helper()
	n, err := testutils.NewNS()
	objdbtest.RequireComponent(t, "network namespaces (root)", err)
	t.Cleanup(func() {
		n.Close()
		testutils.UnmountNS(n)
	})
	return n
}

func suffix(t *testing.T) string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

// fixture is a "host" namespace holding a veth pair whose first end is the
// link to hand over, and an empty "container" namespace.
type fixture struct {
	host, ctr  ns.NetNS
	link, peer string
	mac        net.HardwareAddr // the link's MAC before any change
	mtu        int
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	s := suffix(t)
	f := &fixture{host: newNS(t), ctr: newNS(t), link: "vp" + s, peer: "vq" + s}
	inNS(t, f.host, func() error {
		veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: f.link}, PeerName: f.peer}
		if err := netlink.LinkAdd(veth); err != nil {
			return err
		}
		l, err := netlink.LinkByName(f.link)
		if err != nil {
			return err
		}
		f.mac, f.mtu = l.Attrs().HardwareAddr, l.Attrs().MTU
		return nil
	})
	return f
}

func inNS(t *testing.T, n ns.NetNS, fn func() error) {
	t.Helper()
	if err := n.Do(func(ns.NetNS) error { return fn() }); err != nil {
		t.Fatal(err)
	}
}

func mustCIDR(t *testing.T, s string) *net.IPNet {
	t.Helper()
	ip, n, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatal(err)
	}
	n.IP = ip
	if v4 := ip.To4(); v4 != nil {
		n.IP = v4
	}
	return n
}

func (f *fixture) config(t *testing.T) nsutil.LinkConfig {
	mac, _ := net.ParseMAC("02:02:c6:12:01:05")
	return nsutil.LinkConfig{
		HostIfName: f.link, NetNSPath: f.ctr.Path(), IfName: "eth0",
		IPv4: mustCIDR(t, "198.18.1.5/24"), GatewayV4: net.ParseIP("198.18.1.254").To4(),
		IPv6: mustCIDR(t, "2001:2::5/64"), GatewayV6: net.ParseIP("2001:2::1"),
		MTU: 1450, MAC: mac,
	}
}

// moveAndConfigure runs nsutil.MoveAndConfigure from the fixture's host
// namespace, as the agent would from its own.
func (f *fixture) moveAndConfigure(cfg nsutil.LinkConfig) error {
	return f.host.Do(func(ns.NetNS) error { return nsutil.MoveAndConfigure(cfg) })
}

// links lists the link names of a namespace.
func links(t *testing.T, n ns.NetNS) map[string]netlink.Link {
	t.Helper()
	out := map[string]netlink.Link{}
	inNS(t, n, func() error {
		ls, err := netlink.LinkList()
		for _, l := range ls {
			out[l.Attrs().Name] = l
		}
		return err
	})
	return out
}

func checkConfigured(t *testing.T, n ns.NetNS, cfg nsutil.LinkConfig) {
	t.Helper()
	inNS(t, n, func() error {
		l, err := netlink.LinkByName(cfg.IfName)
		if err != nil {
			t.Fatalf("link %s in the namespace: %v", cfg.IfName, err)
		}
		a := l.Attrs()
		if a.MTU != cfg.MTU || a.HardwareAddr.String() != cfg.MAC.String() || a.Flags&net.FlagUp == 0 {
			t.Errorf("link %s: mtu %d mac %s flags %v; want mtu %d mac %s up", cfg.IfName, a.MTU, a.HardwareAddr, a.Flags, cfg.MTU, cfg.MAC)
		}
		addrs, err := netlink.AddrList(l, netlink.FAMILY_ALL)
		if err != nil {
			return err
		}
		want := map[string]bool{cfg.IPv4.String(): false, cfg.IPv6.String(): false}
		for _, ad := range addrs {
			if _, ok := want[ad.IPNet.String()]; ok {
				want[ad.IPNet.String()] = true
			}
		}
		for a, found := range want {
			if !found {
				t.Errorf("address %s missing on %s (have %v)", a, cfg.IfName, addrs)
			}
		}
		for _, gw := range []net.IP{cfg.GatewayV4, cfg.GatewayV6} {
			fam := netlink.FAMILY_V4
			if gw.To4() == nil {
				fam = netlink.FAMILY_V6
			}
			routes, err := netlink.RouteList(l, fam)
			if err != nil {
				return err
			}
			found := false
			for _, r := range routes {
				isDefault := r.Dst == nil || (r.Dst.IP.IsUnspecified() && isZeroMask(r.Dst.Mask))
				if isDefault && r.Gw.Equal(gw) {
					found = true
				}
			}
			if !found {
				t.Errorf("no default route via %s on %s (routes %v)", gw, cfg.IfName, routes)
			}
		}
		return nil
	})
}

func isZeroMask(m net.IPMask) bool {
	ones, _ := m.Size()
	return ones == 0
}

func TestMoveAndConfigure(t *testing.T) {
	f := newFixture(t)
	cfg := f.config(t)
	if err := f.moveAndConfigure(cfg); err != nil {
		t.Fatalf("move and configure: %v", err)
	}
	checkConfigured(t, f.ctr, cfg)
	if _, ok := links(t, f.host)[f.link]; ok {
		t.Errorf("%s still in the host namespace", f.link)
	}
}

// A /proc/<pid>/ns/net path works as well as a bind-mounted one, and
// removal after the process is gone succeeds.
func TestProcNetNSPath(t *testing.T) {
	f := newFixture(t)
	var cmd *exec.Cmd
	inNS(t, f.ctr, func() error {
		cmd = exec.Command("sleep", "300")
		return cmd.Start()
	})
	waited := false
	t.Cleanup(func() {
		if !waited {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	cfg := f.config(t)
	cfg.NetNSPath = "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/ns/net"
	cfg.IPv6, cfg.GatewayV6 = nil, nil
	if err := f.moveAndConfigure(cfg); err != nil {
		t.Fatalf("move and configure into %s: %v", cfg.NetNSPath, err)
	}
	if _, ok := links(t, f.ctr)["eth0"]; !ok {
		t.Fatalf("eth0 not in the process's namespace")
	}
	cmd.Process.Kill()
	cmd.Wait()
	waited = true
	if err := nsutil.RemoveFromNS(cfg.NetNSPath, "eth0"); err != nil {
		t.Fatalf("remove from a namespace whose process is gone: %v", err)
	}
}

// Every failure after the move leaves the link back home, unchanged, and
// the namespace as it was.
func TestMoveAndConfigureRollsBack(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, f *fixture)
		edit  func(cfg *nsutil.LinkConfig)
	}{
		{"GatewayOffLink", nil, func(c *nsutil.LinkConfig) { c.GatewayV4 = net.ParseIP("198.19.200.1").To4() }},
		{"GatewayV6OffLink", nil, func(c *nsutil.LinkConfig) { c.GatewayV6 = net.ParseIP("2001:2:0:99::1") }},
		{"NameTakenInNamespace", func(t *testing.T, f *fixture) {
			inNS(t, f.ctr, func() error {
				return netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "eth0"}, PeerName: "eth0peer"})
			})
		}, nil},
		{"MTUTooLarge", nil, func(c *nsutil.LinkConfig) { c.MTU = 1 << 20 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			// Up before, so the rollback must set it up again.
			inNS(t, f.host, func() error {
				l, err := netlink.LinkByName(f.link)
				if err != nil {
					return err
				}
				return netlink.LinkSetUp(l)
			})
			if tc.setup != nil {
				tc.setup(t, f)
			}
			before := links(t, f.ctr)
			cfg := f.config(t)
			if tc.edit != nil {
				tc.edit(&cfg)
			}
			if err := f.moveAndConfigure(cfg); err == nil {
				t.Fatal("move and configure succeeded; want an error")
			} else {
				t.Logf("error (expected): %v", err)
			}
			after := links(t, f.ctr)
			if len(after) != len(before) {
				t.Errorf("namespace links before %v, after %v", keys(before), keys(after))
			}
			for name, l := range after {
				if b, ok := before[name]; !ok || b.Attrs().Index != l.Attrs().Index {
					t.Errorf("link %s in the namespace was not there before", name)
				}
			}
			l, ok := links(t, f.host)[f.link]
			if !ok {
				t.Fatalf("%s did not come back to the host namespace", f.link)
			}
			a := l.Attrs()
			if a.MTU != f.mtu || a.HardwareAddr.String() != f.mac.String() || a.Flags&net.FlagUp == 0 {
				t.Errorf("%s back home with mtu %d mac %s flags %v; want mtu %d mac %s up", f.link, a.MTU, a.HardwareAddr, a.Flags, f.mtu, f.mac)
			}
			inNS(t, f.host, func() error {
				addrs, err := netlink.AddrList(l, netlink.FAMILY_ALL)
				for _, ad := range addrs {
					if !ad.IP.IsLinkLocalUnicast() {
						t.Errorf("%s kept address %v", f.link, ad)
					}
				}
				return err
			})
		})
	}
}

func keys(m map[string]netlink.Link) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A missing namespace fails before anything is touched.
func TestMoveIntoMissingNamespace(t *testing.T) {
	f := newFixture(t)
	cfg := f.config(t)
	cfg.NetNSPath = "/var/run/netns/nsutil-missing-" + suffix(t)
	var gone ns.NSPathNotExistErr
	if err := f.moveAndConfigure(cfg); !errors.As(err, &gone) {
		t.Fatalf("want NSPathNotExistErr, got %v", err)
	}
	if _, ok := links(t, f.host)[f.link]; !ok {
		t.Fatalf("%s left the host namespace", f.link)
	}
}

func TestRemoveFromNSIsIdempotent(t *testing.T) {
	f := newFixture(t)
	cfg := f.config(t)
	if err := f.moveAndConfigure(cfg); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := nsutil.RemoveFromNS(f.ctr.Path(), "eth0"); err != nil {
			t.Fatalf("remove #%d: %v", i+1, err)
		}
		if _, ok := links(t, f.ctr)["eth0"]; ok {
			t.Fatalf("eth0 still in the namespace after remove #%d", i+1)
		}
	}
	if _, ok := links(t, f.host)[f.peer]; ok {
		t.Errorf("veth peer %s survived the removal", f.peer)
	}
	if err := nsutil.RemoveFromNS("/var/run/netns/nsutil-missing-"+suffix(t), "eth0"); err != nil {
		t.Errorf("remove from a missing namespace: %v", err)
	}
	if err := nsutil.RemoveFromNS("", "eth0"); err != nil {
		t.Errorf("remove with no namespace: %v", err)
	}
	if err := nsutil.RemoveFromNS(f.ctr.Path(), "bad/name"); !errors.Is(err, nsutil.ErrInvalidConfig) {
		t.Errorf("bad interface name: want ErrInvalidConfig, got %v", err)
	}
}

func TestValidate(t *testing.T) {
	good := nsutil.LinkConfig{HostIfName: "vport1", NetNSPath: "/var/run/netns/x", IfName: "eth0",
		IPv4: mustCIDR(t, "198.18.0.2/24"), GatewayV4: net.ParseIP("198.18.0.1"),
		IPv6: mustCIDR(t, "2001:2::2/64"), GatewayV6: net.ParseIP("2001:2::1")}
	if err := good.Validate(); err != nil {
		t.Fatalf("valid config refused: %v", err)
	}
	bad := map[string]func(c *nsutil.LinkConfig){
		"no host link":    func(c *nsutil.LinkConfig) { c.HostIfName = "" },
		"long ifname":     func(c *nsutil.LinkConfig) { c.IfName = "abcdefghijklmnop" },
		"slash in ifname": func(c *nsutil.LinkConfig) { c.IfName = "a/b" },
		"dot ifname":      func(c *nsutil.LinkConfig) { c.IfName = "." },
		"no netns":        func(c *nsutil.LinkConfig) { c.NetNSPath = "" },
		"v6 as v4":        func(c *nsutil.LinkConfig) { c.IPv4 = mustCIDR(t, "2001:2::2/64") },
		"v4 as v6":        func(c *nsutil.LinkConfig) { c.IPv6 = mustCIDR(t, "198.18.0.2/24") },
		"v6 gateway":      func(c *nsutil.LinkConfig) { c.GatewayV4 = net.ParseIP("2001:2::1") },
		"v4 gateway":      func(c *nsutil.LinkConfig) { c.GatewayV6 = net.ParseIP("198.18.0.1") },
		"negative mtu":    func(c *nsutil.LinkConfig) { c.MTU = -1 },
		"short mac":       func(c *nsutil.LinkConfig) { c.MAC = net.HardwareAddr{1, 2} },
	}
	for name, edit := range bad {
		c := good
		edit(&c)
		if err := c.Validate(); !errors.Is(err, nsutil.ErrInvalidConfig) {
			t.Errorf("%s: want ErrInvalidConfig, got %v", name, err)
		}
		if err := nsutil.MoveAndConfigure(c); !errors.Is(err, nsutil.ErrInvalidConfig) {
			t.Errorf("%s: MoveAndConfigure: want ErrInvalidConfig, got %v", name, err)
		}
	}
}

// CheckInNS passes for a configured link and names what is wrong once the
// link is gone, down, or has another address or MAC.
func TestCheckInNS(t *testing.T) {
	f := newFixture(t)
	cfg := f.config(t)
	if err := f.moveAndConfigure(cfg); err != nil {
		t.Fatalf("move and configure: %v", err)
	}
	if err := nsutil.CheckInNS(cfg.NetNSPath, "eth0", cfg.IPv4, cfg.MAC); err != nil {
		t.Fatalf("check a configured link: %v", err)
	}
	if err := nsutil.CheckInNS(cfg.NetNSPath, "eth0", cfg.IPv6, nil); err != nil {
		t.Fatalf("check the IPv6 address: %v", err)
	}
	if err := nsutil.CheckInNS(cfg.NetNSPath, "eth0", mustCIDR(t, "198.18.1.6/24"), nil); err == nil {
		t.Error("another address passed")
	}
	otherMAC, _ := net.ParseMAC("02:02:c6:12:01:06")
	if err := nsutil.CheckInNS(cfg.NetNSPath, "eth0", nil, otherMAC); err == nil {
		t.Error("another MAC passed")
	}
	inNS(t, f.ctr, func() error {
		l, err := netlink.LinkByName("eth0")
		if err != nil {
			return err
		}
		return netlink.LinkSetDown(l)
	})
	if err := nsutil.CheckInNS(cfg.NetNSPath, "eth0", cfg.IPv4, nil); err == nil {
		t.Error("a link that is down passed")
	}
	if err := nsutil.RemoveFromNS(cfg.NetNSPath, "eth0"); err != nil {
		t.Fatal(err)
	}
	if err := nsutil.CheckInNS(cfg.NetNSPath, "eth0", cfg.IPv4, nil); err == nil {
		t.Error("a removed link passed")
	}
	if err := nsutil.CheckInNS("", "eth0", nil, nil); !errors.Is(err, nsutil.ErrInvalidConfig) {
		t.Errorf("empty path: %v", err)
	}
}
