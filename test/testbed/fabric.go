package testbed

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/contiv/netplugin/objdb/objdbtest"
	"github.com/contiv/netplugin/test/ovstest"
)

// Names of the fabric's bridges and of the links in the other namespaces.
const (
	MgmtBridge     = "mgmt"
	UnderlayBridge = "underlay"
	VlanBridge     = "vlanfab"
	MgmtIf         = "eth0"   // management link in master, store and host namespaces
	UnderlayIf     = "eth1"   // underlay link in master and host namespaces
	TrunkIf        = "eth2"   // host's link into the VLAN trunk
	PhyBridge      = "br-phy" // host OVS bridge carrying the underlay address
)

// buildFabric creates the fabric namespace and its three bridges. Bridged
// frames must not meet netfilter there (br_netfilter may be loaded on the
// machine), so its bridge-nf hooks are switched off in that namespace.
func (tb *Testbed) buildFabric() error {
	ns := tb.FabricNS
	if err := addNetNS(ns); err != nil {
		return err
	}
	for _, br := range []string{MgmtBridge, UnderlayBridge, VlanBridge} {
		if err := ipIn(ns, "link", "add", br, "type", "bridge", "stp_state", "0", "forward_delay", "0"); err != nil {
			return fmt.Errorf("bridge %s: %w", br, err)
		}
		if err := ipIn(ns, "link", "set", br, "up"); err != nil {
			return err
		}
	}
	if _, err := os.Stat("/proc/sys/net/bridge"); err == nil {
		for _, k := range []string{"bridge-nf-call-iptables", "bridge-nf-call-ip6tables", "bridge-nf-call-arptables"} {
			// Per namespace since Linux 5.3; on older kernels the
			// key is global and this fails harmlessly.
			nsExec(ns, "sysctl", "-q", "-w", "net.bridge."+k+"=0")
		}
	}
	return nil
}

// plug links namespace ns to a fabric bridge: fabIf in the fabric,
// nsIf in ns.
func (tb *Testbed) plug(bridge, fabIf, ns, nsIf string) error {
	if err := addVeth(tb.FabricNS, fabIf, ns, nsIf); err != nil {
		return err
	}
	return ipIn(tb.FabricNS, "link", "set", fabIf, "master", bridge)
}

// plugAddr plugs ns into a fabric bridge (see plug) and gives nsIf the
// address ip/24.
func (tb *Testbed) plugAddr(bridge, fabIf, ns, nsIf, ip string) error {
	if err := tb.plug(bridge, fabIf, ns, nsIf); err != nil {
		return err
	}
	return ipIn(ns, "addr", "add", ip+"/24", "dev", nsIf)
}

// plugMgmt plugs ns into the management network with address ip on eth0.
// Management traffic stays in the kernel (veths and a Linux bridge).
func (tb *Testbed) plugMgmt(ns, fabIf, ip string) error {
	return tb.plugAddr(MgmtBridge, fabIf, ns, MgmtIf, ip)
}

// plugUnderlay plugs a master's namespace into the underlay with address
// ip on eth1. The master stands for a machine with a real NIC, which
// completes checksums in hardware; its veth does not, and its traffic
// reaches the hosts' userspace OVS (br-phy), so TX checksum offload is
// switched off there (see DisableTxOffload).
func (tb *Testbed) plugUnderlay(ns, fabIf, ip string) error {
	if err := tb.plugAddr(UnderlayBridge, fabIf, ns, UnderlayIf, ip); err != nil {
		return err
	}
	return DisableTxOffload(ns, UnderlayIf)
}

// DisableTxOffload makes the kernel fill in checksums itself when sending
// on ifname in namespace ns. A veth otherwise leaves TCP/UDP checksums to
// "hardware", and a packet that reaches an OVS userspace-datapath port
// still without one is dropped by the receiving host: pings pass but TCP
// does not. The testbed uses it only on the underlay links of the
// namespaces that stand for other machines (the masters), never on a
// container: netplugin's driver does that for the links it creates.
func DisableTxOffload(ns, ifname string) error {
	if _, err := nsExec(ns, "ethtool", "-K", ifname, "tx", "off"); err != nil {
		return fmt.Errorf("disable tx offload on %s in %s: %w", ifname, ns, err)
	}
	return nil
}

func etcdBinary() (string, error) {
	bin, err := exec.LookPath("etcd")
	if err == nil {
		return bin, nil
	}
	if _, serr := os.Stat("/usr/bin/etcd"); serr == nil {
		return "/usr/bin/etcd", nil
	}
	return "", err
}

// storeNode creates the external store's namespace on the management
// network and its state folder.
func (tb *Testbed) storeNode(t testing.TB) string {
	t.Helper()
	tb.StoreNS = tb.Prefix + "st"
	tb.StoreIP = StoreIP
	if err := addNetNS(tb.StoreNS); err != nil {
		t.Fatalf("testbed: store namespace: %v", err)
	}
	if err := tb.plugMgmt(tb.StoreNS, "st", StoreIP); err != nil {
		t.Fatalf("testbed: store namespace: %v", err)
	}
	dir, err := tb.stateDir("st")
	if err != nil {
		t.Fatalf("testbed: %v", err)
	}
	return dir
}

// startEtcd runs the external etcd in its own namespace and waits until
// it is healthy.
func (tb *Testbed) startEtcd(t testing.TB) {
	t.Helper()
	dir := tb.storeNode(t)
	bin, err := etcdBinary()
	if err != nil {
		t.Fatalf("testbed: etcd: %v", err)
	}
	client := fmt.Sprintf("%s://%s:%d", tb.storeScheme(), StoreIP, EtcdPort)
	peer := "http://127.0.0.1:2380"
	tb.store = &daemon{
		name: "etcd", ns: tb.StoreNS, bin: bin, logPath: filepath.Join(dir, "etcd.log"),
		args: []string{
			"--name", "testbed", "--data-dir", filepath.Join(dir, "data"),
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", "testbed=" + peer,
			"--logger", "zap", "--log-level", "warn",
		},
	}
	tb.store.args = append(tb.store.args, tb.etcdServerTLSArgs()...)
	if err := tb.store.start(); err != nil {
		t.Fatalf("testbed: %v", err)
	}
	hc := nsHTTPClient(tb.StoreNS)
	hc.Timeout = 2 * time.Second
	if hc.Transport.(*http.Transport).TLSClientConfig, err = tb.storeClientTLS(); err != nil {
		t.Fatalf("testbed: etcd client TLS: %v", err)
	}
	err = poll(storeReadyTimeout, tb.store.exited(), func() error {
		return objdbtest.CheckEtcdHealth(hc, client+"/health")
	})
	if err != nil {
		t.Fatalf("testbed: etcd at %s: %v\n%s", client, err, tb.store.logs(40))
	}
}

// startConsul runs a single-server consul agent (its own raft, data on
// disk) in the store's namespace and waits until it has a leader.
// session_ttl_min is lowered so that short leader TTLs work.
func (tb *Testbed) startConsul(t testing.TB) {
	t.Helper()
	dir := tb.storeNode(t)
	bin, err := objdbtest.FindConsul()
	if err != nil {
		t.Fatalf("testbed: %v", err)
	}
	extra, err := tb.consulSecureArgs(dir)
	if err != nil {
		t.Fatalf("testbed: %v", err)
	}
	tb.store = &daemon{
		name: "consul", ns: tb.StoreNS, bin: bin, logPath: filepath.Join(dir, "consul.log"),
		args: append([]string{
			"agent", "-server", "-bootstrap-expect", "1", "-node", "testbed",
			"-bind", StoreIP, "-client", StoreIP, "-http-port", tb.consulHTTPPort(),
			"-dns-port", "-1", "-grpc-port", "-1",
			"-hcl", `session_ttl_min = "1s"`, "-hcl", `performance { raft_multiplier = 1 }`,
			"-data-dir", filepath.Join(dir, "data"), "-log-level", "warn",
		}, extra...),
	}
	if err := tb.store.start(); err != nil {
		t.Fatalf("testbed: %v", err)
	}
	hc, err := tb.consulHTTPClient()
	if err != nil {
		t.Fatalf("testbed: %v", err)
	}
	url := tb.consulURL() + "/v1/status/leader"
	err = poll(storeReadyTimeout, tb.store.exited(), func() error {
		return objdbtest.CheckConsulLeader(hc, url)
	})
	if err != nil {
		t.Fatalf("testbed: consul at %s: %v\n%s", url, err, tb.store.logs(40))
	}
	if err := tb.consulBootstrapACL(hc); err != nil {
		t.Fatalf("testbed: consul ACLs: %v\n%s", err, tb.store.logs(40))
	}
}

// addHost creates host i: namespace, management, underlay and trunk
// links, its own OVS with br-phy holding the underlay (VTEP) address.
func (tb *Testbed) addHost(t testing.TB, i int) {
	t.Helper()
	h := &Host{
		Index:  i,
		Name:   fmt.Sprintf("%sh%d", tb.Prefix, i),
		IP:     HostIP(i),
		CtrlIP: HostCtrlIP(i),
		tb:     tb,
	}
	h.NS = h.Name
	h.fabMgmt, h.fabUnderlay, h.fabTrunk = fmt.Sprintf("h%dm", i), fmt.Sprintf("h%du", i), fmt.Sprintf("h%dv", i)
	var err error
	if h.Dir, err = tb.stateDir(fmt.Sprintf("h%d", i)); err != nil {
		t.Fatalf("testbed: %v", err)
	}
	if err := addNetNS(h.NS); err != nil {
		t.Fatalf("testbed: host %d: %v", i, err)
	}
	if err := tb.plugMgmt(h.NS, h.fabMgmt, h.CtrlIP); err != nil {
		t.Fatalf("testbed: host %d management: %v", i, err)
	}
	if err := tb.plug(UnderlayBridge, h.fabUnderlay, h.NS, UnderlayIf); err != nil {
		t.Fatalf("testbed: host %d underlay: %v", i, err)
	}
	if err := tb.plug(VlanBridge, h.fabTrunk, h.NS, TrunkIf); err != nil {
		t.Fatalf("testbed: host %d trunk: %v", i, err)
	}
	h.OVS = ovstest.StartInNetNS(t, h.NS, h.Dir)
	if out, err := h.Vsctl("add-br", PhyBridge, "--", "set", "bridge", PhyBridge, "datapath_type=netdev",
		"--", "add-port", PhyBridge, UnderlayIf); err != nil {
		t.Fatalf("testbed: host %d %s: %v: %s", i, PhyBridge, err, out)
	}
	if err := ipIn(h.NS, "addr", "add", h.IP+"/24", "dev", PhyBridge); err != nil {
		t.Fatalf("testbed: host %d: %v", i, err)
	}
	if err := ipIn(h.NS, "link", "set", PhyBridge, "up"); err != nil {
		t.Fatalf("testbed: host %d: %v", i, err)
	}
	h.netplugin = &daemon{name: "netplugin " + h.Name, ns: h.NS, logPath: filepath.Join(h.Dir, "netplugin.log")}
	tb.Hosts = append(tb.Hosts, h)
}

// poll calls f until it succeeds, exited is closed or d passes.
func poll(d time.Duration, exited <-chan struct{}, f func() error) error {
	deadline := time.Now().Add(d)
	var last error
	for {
		if last = f(); last == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("process exited (last check: %v)", last)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %v: %w", d, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
