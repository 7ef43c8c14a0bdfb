// Package testbed builds a simulated multi-host Contiv cluster on one
// machine for end-to-end tests: every host is a network namespace with its
// own Open vSwitch (ovsdb-server + ovs-vswitchd, userspace datapath) and a
// real netplugin process; netmaster(s) and the cluster store run in further
// namespaces; a fabric namespace joins them with three Linux bridges: a
// management network (198.18.1.0/24) for control traffic (REST, store,
// the agents' ofnet RPC to netmaster), the IP underlay (198.18.0.0/24) for
// VXLAN and for netmaster's RPC to the agents, which register with their
// VTEP address, and an L2 trunk for VLAN uplinks. Containers
// are namespaces that netplugin attaches through its attach socket.
//
//	tb := testbed.New(t, testbed.Config{Hosts: 3, NetMode: "vxlan", FwdMode: "routing"})
//	out, err := tb.Netctl("network", "create", "--subnet", "198.19.1.0/24", "n1")
//	c := tb.Hosts[0].NewContainerNS(t, "web1")
//
// Addresses: netmaster i at 198.18.1.<1+i> (management) and 198.18.0.<1+i>
// (underlay, to reach the agents' VTEP addresses), the external etcd at
// 198.18.1.5, host i at 198.18.1.<11+i> (management, --ctrl-ip) and
// 198.18.0.<11+i> (underlay on its br-phy bridge, --vtep-ip). Nothing is
// added to the root namespace except the namespaces themselves; every name
// starts with a random prefix ("tb3fa1-"), so parallel runs cannot collide.
// Everything is destroyed in t.Cleanup, on SIGINT/SIGTERM, and, for test
// binaries that died without cleaning up, by the next New.
package testbed

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/contiv/netplugin/objdb/objdbtest"
	"github.com/contiv/netplugin/test/ovstest"
	"github.com/contiv/netplugin/utils/certgen"
)

// StoreMode says where the cluster store runs.
type StoreMode int

const (
	// Embedded: one netmaster runs etcd in-process on its own address.
	Embedded StoreMode = iota
	// ExternalEtcd: an etcd process in its own namespace (198.18.1.5)
	// serves one or two netmasters.
	ExternalEtcd
	// ExternalConsul: a consul server agent in its own namespace
	// (198.18.1.5) serves one or two netmasters.
	ExternalConsul
)

func (m StoreMode) String() string {
	switch m {
	case ExternalEtcd:
		return "external-etcd"
	case ExternalConsul:
		return "external-consul"
	}
	return "embedded"
}

// Well-known addresses and ports of the simulated cluster.
const (
	MgmtSubnet     = "198.18.1.0/24"
	UnderlaySubnet = "198.18.0.0/24"
	StoreIP        = "198.18.1.5" // external stores, management network only
	NetmasterPort  = 9999
	EtcdPort       = 2379
	ConsulPort     = 8500
)

// MasterIP is the management address of netmaster i, where it serves.
func MasterIP(i int) string { return fmt.Sprintf("198.18.1.%d", 1+i) }

// MasterUnderlayIP is the underlay address of netmaster i.
func MasterUnderlayIP(i int) string { return fmt.Sprintf("198.18.0.%d", 1+i) }

// HostIP is the underlay (VTEP) address of host i.
func HostIP(i int) string { return fmt.Sprintf("198.18.0.%d", 11+i) }

// HostCtrlIP is the management (control) address of host i.
func HostCtrlIP(i int) string { return fmt.Sprintf("198.18.1.%d", 11+i) }

// Bounded waits of New.
const (
	masterReadyTimeout    = 60 * time.Second
	netpluginReadyTimeout = 60 * time.Second
	storeReadyTimeout     = 30 * time.Second
)

// Config describes the cluster New builds.
type Config struct {
	Hosts      int    // simulated hosts (0..200)
	NetMode    string // vxlan (default) or vlan
	FwdMode    string // bridge or routing; default routing for vxlan, bridge for vlan
	Netmasters int    // 1 (default), 2 or 3 (external stores only)
	Store      StoreMode
	// EtcdMembers with ExternalEtcd: 3 runs a three-member etcd cluster,
	// each member in its own namespace (etcdcluster.go); 0 or 1 one
	// server at StoreIP.
	EtcdMembers int
	// LeaderTTL is passed as --leader-ttl when non-zero.
	LeaderTTL time.Duration
	// NetpluginArgs and NetmasterArgs are appended to the daemons'
	// command lines.
	NetpluginArgs []string
	NetmasterArgs []string
	// NetpluginHostArgs, when set, adds per-host flags to netplugin's
	// command line (after NetpluginArgs), e.g. an inspect address of its
	// own.
	NetpluginHostArgs func(h *Host) []string
	// SkipNetplugin builds hosts without starting netplugin (start it
	// later with Host.StartNetplugin; it is built then).
	SkipNetplugin bool
	// NoNetmaster builds the masters' namespaces (the Kubernetes API
	// server's home in a kubelet cluster) without starting netmaster in
	// them: the cluster's netmasters run elsewhere, e.g. as pods of the
	// packaging/k8s manifests (kubeinstall.go). Needs an external store.
	NoNetmaster bool
	// NetpluginBinary, when set, is run instead of building
	// ./cmd/netplugin.
	NetpluginBinary string
	// Docker runs netmaster and netplugin in docker mode and gives every
	// host its own Docker Engine (docker.go), started after netplugin.
	Docker bool
	// Swarm (implies Docker) runs the daemons in swarm-mode, netplugin as
	// a managed plugin of each host's engine (swarm.go); the test makes
	// the swarm (Host.InitSwarm).
	Swarm bool
	// InsecureRPC runs netmaster and netplugin with --insecure-rpc
	// instead of the testbed's certificates (security.go); only for the
	// test of that flag.
	InsecureRPC bool
	// InsecureStore runs the etcd in plain http without client
	// certificates (storepki.go); by default it serves TLS and asks
	// every client for a certificate.
	InsecureStore bool
	// SecureREST runs netmaster's REST API as docs/security.md tells
	// production to (security.go, RESTCreds): HTTPS, client certificates
	// of the testbed CA, admin and read-only bearer tokens; netctl,
	// netplugin and HTTPClient use them. By default the API is plain
	// http without authentication, the original's contract. Not with
	// Swarm (the managed plugin sees only its own folder).
	SecureREST bool
	// LiveRestore (with Docker) enables the engines' live-restore: a
	// stopped engine leaves its containers running and a restarted one
	// takes them back (their namespaces stay in the engine's mount
	// namespace, docker.go).
	LiveRestore bool
}

// mode is the daemons' --mode.
func (c *Config) mode() string {
	if c.Swarm {
		return "swarm-mode"
	}
	if c.Docker {
		return "docker"
	}
	return "test"
}

func (c *Config) setDefaults() error {
	if c.NetMode == "" {
		c.NetMode = "vxlan"
	}
	if c.FwdMode == "" {
		c.FwdMode = "routing"
		if c.NetMode == "vlan" {
			c.FwdMode = "bridge"
		}
	}
	if c.Netmasters == 0 {
		c.Netmasters = 1
	}
	switch {
	case c.Hosts < 0 || c.Hosts > 200:
		return fmt.Errorf("testbed: Hosts %d out of range 0..200", c.Hosts)
	case c.NetMode != "vxlan" && c.NetMode != "vlan":
		return fmt.Errorf("testbed: NetMode %q: want vxlan or vlan", c.NetMode)
	case c.FwdMode != "bridge" && c.FwdMode != "routing":
		return fmt.Errorf("testbed: FwdMode %q: want bridge or routing", c.FwdMode)
	case c.NetMode == "vxlan" && c.FwdMode == "bridge":
		return fmt.Errorf("testbed: vxlan with bridge forwarding is rejected by the daemons (docs/daemons.md §1.1)")
	case c.Netmasters < 1 || c.Netmasters > 3:
		return fmt.Errorf("testbed: Netmasters %d: want 1, 2 or 3", c.Netmasters)
	case c.EtcdMembers != 0 && c.EtcdMembers != 1 && !(c.EtcdMembers == 3 && c.Store == ExternalEtcd):
		return fmt.Errorf("testbed: EtcdMembers %d: want 0, 1, or 3 with ExternalEtcd", c.EtcdMembers)
	case c.SecureREST && c.Swarm:
		return fmt.Errorf("testbed: SecureREST does not support Swarm (the managed plugin sees only its own folder)")
	case c.NoNetmaster && c.Store == Embedded:
		return fmt.Errorf("testbed: NoNetmaster needs an external store (the embedded one runs in netmaster)")
	case c.Store == Embedded && c.Netmasters != 1:
		return fmt.Errorf("testbed: the embedded store runs in the single netmaster: use an external store for %d netmasters", c.Netmasters)
	}
	return nil
}

// Testbed is one simulated cluster.
type Testbed struct {
	Config   Config
	Prefix   string // starts every namespace name, e.g. "tb3fa1-"
	Dir      string // state of every daemon, removed in cleanup
	FabricNS string
	StoreNS  string // namespace of the external etcd ("" when Embedded)
	StoreIP  string // address of the store's client port
	Masters  []*Master
	Hosts    []*Host
	Bins     Binaries // Netplugin is empty until needed
	// Etcd are the members of the etcd cluster (Config.EtcdMembers = 3).
	Etcd []*EtcdMember
	// StorePKI is the store's CA and certificates when the etcd serves
	// TLS (storepki.go), nil otherwise.
	StorePKI *objdbtest.PKI
	// ConsulToken is the daemons' consul ACL token (consulacl.go), ""
	// unless the consul store runs with ACLs.
	ConsulToken     string
	consulMgmtToken string

	store *daemon // the external etcd or consul
	httpc *http.Client
	proxy storeProxy

	cluster *etcdCluster // Config.EtcdMembers = 3

	// PKI is the testbed's CA and role certificates (security.go).
	PKI *certgen.Cluster
	// REST are the REST API's credentials with Config.SecureREST, nil
	// otherwise.
	REST      *RESTCreds
	pkiMu     sync.Mutex
	outsiders atomic.Int32

	binMu      sync.Mutex // guards Bins.Netplugin
	containers atomic.Int32
	dumpOnce   sync.Once
}

// New builds the cluster described by cfg and waits (bounded) until a
// netmaster leads and answers /info and, unless cfg.SkipNetplugin, until
// every host's netplugin has registered netplugin.vtep. Everything is torn
// down in t.Cleanup, also when the test fails.
func New(t testing.TB, cfg Config) *Testbed {
	t.Helper()
	if err := cfg.setDefaults(); err != nil {
		t.Fatal(err)
	}
	requireTools(t, cfg)
	if cfg.Swarm {
		cfg.Docker = true
	}
	if cfg.Docker {
		requireDocker(t)
		if cfg.SkipNetplugin {
			t.Fatal("testbed: Docker needs the netplugins")
		}
	}
	reapOrphans(t)

	buildStart := time.Now()
	bins, err := buildMaster()
	if err != nil {
		t.Fatalf("testbed: %v", err)
	}
	bins.Netplugin = cfg.NetpluginBinary
	if bins.Netplugin == "" && !cfg.SkipNetplugin {
		if bins.Netplugin, err = buildNetplugin(); err != nil {
			t.Fatalf("testbed: netplugin is needed but does not build: %v", err)
		}
	}
	buildTime := time.Since(buildStart)

	prefix := namePrefix + randomHex(2) + "-"
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatalf("testbed: state dir: %v", err)
	}
	tb := &Testbed{
		Config:   cfg,
		Prefix:   prefix,
		Dir:      dir,
		FabricNS: prefix + "fab",
		Bins:     bins,
	}
	if err := writeMarker(prefix, dir); err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	registerLive(prefix, dir)
	t.Cleanup(func() { tb.teardown(t) })

	start := time.Now()
	if err := tb.newPKI(); err != nil {
		t.Fatal(err)
	}
	if err := tb.setupREST(); err != nil {
		t.Fatalf("testbed: %v", err)
	}
	if err := tb.buildFabric(); err != nil {
		t.Fatalf("testbed: fabric: %v", err)
	}
	tb.StoreIP = MasterIP(0)
	tb.setupStorePKI(t)
	switch cfg.Store {
	case ExternalEtcd:
		if cfg.EtcdMembers > 1 {
			tb.startEtcdCluster(t)
		} else {
			tb.startEtcd(t)
		}
	case ExternalConsul:
		tb.startConsul(t)
	}
	for i := 0; i < cfg.Netmasters; i++ {
		tb.addMaster(t, i)
	}
	for i := 0; i < cfg.Hosts; i++ {
		tb.addHost(t, i)
	}
	// Registered last so that it runs first, while OVS still runs.
	t.Cleanup(func() { tb.DumpOnFailure(t) })
	if !cfg.NoNetmaster {
		tb.waitMasters(t, masterReadyTimeout)
	}
	if !cfg.SkipNetplugin && !cfg.Swarm {
		for _, h := range tb.Hosts {
			h.StartNetplugin(t)
		}
		tb.WaitNetplugins(t, len(tb.Hosts), netpluginReadyTimeout)
	}
	if cfg.Docker {
		for _, h := range tb.Hosts {
			h.StartEngine(t)
			if cfg.Swarm {
				h.StartManagedPlugin(t)
			}
		}
	}
	t.Logf("testbed %s: %d host(s), %d netmaster(s), %s store, %s/%s up in %v (build %v)",
		prefix, cfg.Hosts, cfg.Netmasters, cfg.Store, cfg.NetMode, cfg.FwdMode,
		time.Since(start).Round(time.Millisecond), buildTime.Round(time.Millisecond))
	return tb
}

// requireTools fails (CI=true) or skips the test when a program the
// testbed runs is missing.
func requireTools(t testing.TB, cfg Config) {
	t.Helper()
	ovstest.Require(t)
	tools := []string{"ip", "ping", "ethtool"}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			RequireComponent(t, tool, err)
		}
	}
	switch cfg.Store {
	case ExternalEtcd:
		_, err := etcdBinary()
		RequireComponent(t, "etcd server binary (Debian package etcd-server)", err)
	case ExternalConsul:
		_, err := objdbtest.FindConsul()
		RequireComponent(t, "consul agent", err)
	}
}

// RequireComponent fails the test (CI=true) or skips it when err says a
// component it needs is missing; a nil err does nothing.
func RequireComponent(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is required in CI: %v", what, err)
	}
	t.Skipf("%s not available: %v", what, err)
}

// teardown stops every process, deletes every namespace and the state
// folder. It runs after the hosts' OVS cleanups.
func (tb *Testbed) teardown(t testing.TB) {
	tb.DumpOnFailure(t)
	tb.proxy.close()
	if tb.httpc != nil {
		tb.httpc.CloseIdleConnections()
	}
	for _, h := range tb.Hosts {
		h.netplugin.stop(syscall.SIGKILL, stopGrace)
	}
	for _, m := range tb.Masters {
		m.proc.stop(syscall.SIGKILL, stopGrace)
	}
	if tb.store != nil {
		tb.store.stop(syscall.SIGKILL, stopGrace)
	}
	if err := destroy(tb.Prefix, tb.Dir); err != nil {
		t.Errorf("testbed: %v", err)
	}
	unregisterLive(tb.Prefix)
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b)
}

// HTTPClient returns a client whose connections are opened inside the
// first master's namespace, so Go code in the test process reaches
// netmaster (and anything else on the underlay) at its underlay address.
// Keep-alives are off: no idle connection outlives a request.
func (tb *Testbed) HTTPClient() *http.Client {
	if tb.httpc == nil {
		hc, err := tb.restHTTPClient(tb.Masters[0].NS)
		if err != nil {
			// Only unreadable testbed files get here; every request then
			// fails saying why.
			hc = &http.Client{Transport: failing{err}}
		}
		tb.httpc = hc
	}
	return tb.httpc
}

func nsHTTPClient(ns string) *http.Client {
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			DialContext:       dialIn(ns),
			DisableKeepAlives: true,
		},
	}
}

// MasterURL is "http://<ip>:9999" of the current leader, or of the first
// running netmaster when no leader is known.
func (tb *Testbed) MasterURL() string {
	if m := tb.Leader(); m != nil {
		return m.URL()
	}
	for _, m := range tb.Masters {
		if m.Running() {
			return m.URL()
		}
	}
	return tb.Masters[0].URL()
}

// Netctl runs the netctl binary inside the first master's namespace
// against MasterURL and returns its combined output.
func (tb *Testbed) Netctl(args ...string) (string, error) {
	full := append(append([]string{"--netmaster", tb.MasterURL()}, tb.netctlArgs()...), args...)
	return nsExec(tb.Masters[0].NS, tb.Bins.Netctl, full...)
}

// StoreArgs are the daemons' store flags: --etcd-endpoints or
// --consul-endpoints.
func (tb *Testbed) StoreArgs() []string {
	var args []string
	switch {
	case tb.Config.Store == ExternalConsul:
		args = []string{"--consul-endpoints", fmt.Sprintf("%s://%s:%d", tb.consulScheme(), tb.StoreIP, ConsulPort)}
	case len(tb.Etcd) > 0:
		args = []string{"--etcd-endpoints", strings.Join(tb.EtcdEndpoints(), ",")}
	default:
		args = []string{"--etcd-endpoints", fmt.Sprintf("%s://%s:%d", tb.storeScheme(), tb.StoreIP, EtcdPort)}
	}
	if tb.storeTLS() {
		args = append(args, tb.storeAuthArgs(tb.StorePKI.Dir)...)
	}
	return args
}

// netpluginBinary returns the netplugin to run, building it on first use.
func (tb *Testbed) netpluginBinary() (string, error) {
	tb.binMu.Lock()
	defer tb.binMu.Unlock()
	if tb.Bins.Netplugin == "" {
		bin, err := buildNetplugin()
		if err != nil {
			return "", err
		}
		tb.Bins.Netplugin = bin
	}
	return tb.Bins.Netplugin, nil
}

// Netmaster returns master i.
func (tb *Testbed) Netmaster(i int) *Master { return tb.Masters[i] }

// stateDir makes a folder for one namespace's daemons.
func (tb *Testbed) stateDir(name string) (string, error) {
	dir := filepath.Join(tb.Dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("state dir %s: %w", name, err)
	}
	return dir, nil
}
