package testbed

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/etcd"
	"github.com/contiv/netplugin/objdb/objdbtest"
)

// A three-member etcd cluster (Config.EtcdMembers = 3 with ExternalEtcd):
// member i runs in its own namespace <prefix>e<i> at EtcdMemberIP(i) on the
// management network, client port 2379, peer port 2380. A further
// namespace, <prefix>ec at EtcdClientIP, holds no daemon: the test
// process's store client and status queries start there, so that they see
// the management network as the daemons do (a partitioned member is out of
// their reach too).

// EtcdPeerPort is the members' raft port.
const EtcdPeerPort = 2380

// EtcdClientIP is the management address the test's own store traffic to
// the cluster comes from.
const EtcdClientIP = "198.18.1.8"

// Raft timing of the cluster's members: slower than etcd's defaults
// (100 ms, 1 s) so that a loaded machine does not cause elections by
// itself.
const (
	etcdHeartbeatMS = 200
	etcdElectionMS  = 2000
)

// EtcdMemberIP is the management address of etcd member i (0..2).
func EtcdMemberIP(i int) string { return fmt.Sprintf("198.18.1.%d", 5+i) }

// EtcdMember is one member of the testbed's etcd cluster.
type EtcdMember struct {
	Index int
	Name  string // member name: e<i>
	NS    string
	IP    string
	Dir   string // data and etcd.log
	// ID is the member's raft id as the cluster reports it (hex), known
	// once the cluster answered.
	ID string

	tb          *Testbed
	proc        *daemon
	fabIf       string // its management link on the fabric side
	partitioned atomic.Bool
}

// etcdCluster is what the testbed keeps of the cluster.
type etcdCluster struct {
	clientNS string
	proxies  []*storeProxy // one per member, started on first use
	httpc    *http.Client  // status queries, from clientNS
}

// ClientURL is the member's client URL (https unless
// Config.InsecureStore: the members ask every client for a certificate of
// the store CA, as the single etcd does, storepki.go).
func (m *EtcdMember) ClientURL() string {
	return fmt.Sprintf("%s://%s:%d", m.tb.storeScheme(), m.IP, EtcdPort)
}

// peerURL is the member's peer URL; the members authenticate each other
// with the store PKI's server certificate unless Config.InsecureStore.
func (m *EtcdMember) peerURL() string {
	return fmt.Sprintf("%s://%s:%d", m.tb.storeScheme(), m.IP, EtcdPeerPort)
}

// etcdPeerTLSArgs are the members' peer TLS flags.
func (tb *Testbed) etcdPeerTLSArgs() []string {
	if !tb.storeTLS() {
		return nil
	}
	p := tb.StorePKI
	return []string{"--peer-cert-file", p.ServerCert, "--peer-key-file", p.ServerKey,
		"--peer-client-cert-auth", "--peer-trusted-ca-file", p.CA}
}

// EtcdEndpoints are the client URLs of every member.
func (tb *Testbed) EtcdEndpoints() []string {
	var eps []string
	for _, m := range tb.Etcd {
		eps = append(eps, m.ClientURL())
	}
	return eps
}

// startEtcdCluster creates the members' namespaces, starts all three at
// once and waits (bounded) until every member reports itself healthy.
func (tb *Testbed) startEtcdCluster(t testing.TB) {
	t.Helper()
	bin, err := etcdBinary()
	if err != nil {
		t.Fatalf("testbed: etcd: %v", err)
	}
	n := tb.Config.EtcdMembers
	tb.cluster = &etcdCluster{clientNS: tb.Prefix + "ec"}
	if err := addNetNS(tb.cluster.clientNS); err != nil {
		t.Fatalf("testbed: etcd client namespace: %v", err)
	}
	if err := tb.plugMgmt(tb.cluster.clientNS, "ec", EtcdClientIP); err != nil {
		t.Fatalf("testbed: etcd client namespace: %v", err)
	}
	tb.cluster.httpc = nsHTTPClient(tb.cluster.clientNS)
	tb.cluster.httpc.Timeout = 2 * time.Second
	if tb.cluster.httpc.Transport.(*http.Transport).TLSClientConfig, err = tb.storeClientTLS(); err != nil {
		t.Fatalf("testbed: etcd client TLS: %v", err)
	}
	var initial []string
	for i := 0; i < n; i++ {
		m := &EtcdMember{Index: i, Name: fmt.Sprintf("e%d", i), NS: fmt.Sprintf("%se%d", tb.Prefix, i),
			IP: EtcdMemberIP(i), fabIf: fmt.Sprintf("e%dm", i), tb: tb}
		if m.Dir, err = tb.stateDir(m.Name); err != nil {
			t.Fatalf("testbed: %v", err)
		}
		if err := addNetNS(m.NS); err != nil {
			t.Fatalf("testbed: etcd member %d: %v", i, err)
		}
		if err := tb.plugMgmt(m.NS, m.fabIf, m.IP); err != nil {
			t.Fatalf("testbed: etcd member %d: %v", i, err)
		}
		initial = append(initial, m.Name+"="+m.peerURL())
		tb.Etcd = append(tb.Etcd, m)
		tb.cluster.proxies = append(tb.cluster.proxies, &storeProxy{})
	}
	for _, m := range tb.Etcd {
		m.proc = &daemon{
			name: "etcd " + m.Name, ns: m.NS, bin: bin, logPath: filepath.Join(m.Dir, "etcd.log"),
			args: []string{
				"--name", m.Name, "--data-dir", filepath.Join(m.Dir, "data"),
				"--listen-client-urls", m.ClientURL(), "--advertise-client-urls", m.ClientURL(),
				"--listen-peer-urls", m.peerURL(), "--initial-advertise-peer-urls", m.peerURL(),
				"--initial-cluster", strings.Join(initial, ","),
				"--initial-cluster-token", tb.Prefix + "etcd", "--initial-cluster-state", "new",
				"--heartbeat-interval", strconv.Itoa(etcdHeartbeatMS),
				"--election-timeout", strconv.Itoa(etcdElectionMS),
				"--logger", "zap", "--log-level", "warn",
			},
		}
		m.proc.args = append(m.proc.args, tb.etcdServerTLSArgs()...)
		m.proc.args = append(m.proc.args, tb.etcdPeerTLSArgs()...)
		if err := m.proc.start(); err != nil {
			t.Fatalf("testbed: %v", err)
		}
	}
	// Registered after teardown's cleanup, so it runs before it.
	t.Cleanup(func() {
		for _, p := range tb.cluster.proxies {
			p.close()
		}
		tb.cluster.httpc.CloseIdleConnections()
		for _, m := range tb.Etcd {
			m.proc.stop(syscall.SIGKILL, stopGrace)
		}
	})
	if err := tb.WaitEtcdHealthy(storeReadyTimeout); err != nil {
		t.Fatalf("testbed: etcd cluster: %v\n%s", err, tb.EtcdLogTails(30))
	}
	tb.StoreNS, tb.StoreIP = tb.Etcd[0].NS, tb.Etcd[0].IP
}

// etcdStatus is the part of etcd's /v3/maintenance/status answer used
// here; the ids are uint64 values, which the gateway writes as strings.
type etcdStatus struct {
	Header struct {
		MemberID string `json:"member_id"`
		RaftTerm string `json:"raft_term"`
	} `json:"header"`
	Leader string `json:"leader"`
}

// status asks the member for its raft view: its own id and the leader's
// (empty when it knows none).
func (m *EtcdMember) status() (etcdStatus, error) {
	var st etcdStatus
	url := m.ClientURL() + "/v3/maintenance/status"
	resp, err := m.tb.cluster.httpc.Post(url, "application/json", strings.NewReader("{}"))
	if err != nil {
		return st, fmt.Errorf("etcd %s status: %w", m.Name, err)
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	body.ReadFrom(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("etcd %s status: %s: %s", m.Name, resp.Status, bytes.TrimSpace(body.Bytes()))
	}
	if err := json.Unmarshal(body.Bytes(), &st); err != nil {
		return st, fmt.Errorf("etcd %s status: %w: %s", m.Name, err, body.Bytes())
	}
	if st.Header.MemberID == "" {
		return st, fmt.Errorf("etcd %s status: no member id in %s", m.Name, body.Bytes())
	}
	m.ID = st.Header.MemberID
	return st, nil
}

// Reachable reports whether the member runs and is not cut off.
func (m *EtcdMember) Reachable() bool { return m.proc.running() && !m.partitioned.Load() }

// Running reports whether the member's process is up.
func (m *EtcdMember) Running() bool { return m.proc.running() }

// Kill ends the member with SIGKILL and waits for its exit.
func (m *EtcdMember) Kill(t testing.TB) {
	t.Helper()
	if err := m.proc.stop(syscall.SIGKILL, stopGrace); err != nil {
		t.Fatalf("testbed: %v", err)
	}
}

// Start starts the member again on its data (it rejoins the cluster).
func (m *EtcdMember) Start(t testing.TB) {
	t.Helper()
	if err := m.proc.start(); err != nil {
		t.Fatalf("testbed: %v", err)
	}
}

// Pause stops the member's process (SIGSTOP): it holds its connections
// but answers nothing, like a stalled disk or a frozen VM. Resume ends it.
func (m *EtcdMember) Pause(t testing.TB) {
	t.Helper()
	if err := m.proc.signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("testbed: pause etcd %s: %v", m.Name, err)
	}
}

// Resume continues a paused member (SIGCONT).
func (m *EtcdMember) Resume(t testing.TB) {
	t.Helper()
	if err := m.proc.signal(syscall.SIGCONT); err != nil {
		t.Fatalf("testbed: resume etcd %s: %v", m.Name, err)
	}
}

// Partition cuts the member off the management network: its link on the
// fabric side goes down, as if its cable were pulled. The process runs on.
func (m *EtcdMember) Partition(t testing.TB) {
	t.Helper()
	if err := ipIn(m.tb.FabricNS, "link", "set", m.fabIf, "down"); err != nil {
		t.Fatalf("testbed: partition etcd %s: %v", m.Name, err)
	}
	m.partitioned.Store(true)
}

// Heal ends a Partition.
func (m *EtcdMember) Heal(t testing.TB) {
	t.Helper()
	if err := ipIn(m.tb.FabricNS, "link", "set", m.fabIf, "up"); err != nil {
		t.Fatalf("testbed: heal etcd %s: %v", m.Name, err)
	}
	m.partitioned.Store(false)
}

// Logs returns the last n lines of the member's log.
func (m *EtcdMember) Logs(n int) string { return m.proc.logs(n) }

// EtcdLogTails returns the last n log lines of every member.
func (tb *Testbed) EtcdLogTails(n int) string {
	var b strings.Builder
	for _, m := range tb.Etcd {
		fmt.Fprintf(&b, "--- etcd %s %s (%s, partitioned %v) ---\n%s\n", m.Name, m.IP, runState(m.proc), m.partitioned.Load(), m.Logs(n))
	}
	return b.String()
}

// EtcdLeader returns the member that the reachable members name as their
// leader, or an error when they name none or disagree.
func (tb *Testbed) EtcdLeader() (*EtcdMember, error) {
	leader := ""
	for _, m := range tb.Etcd {
		if !m.Reachable() {
			continue
		}
		st, err := m.status()
		if err != nil {
			return nil, err
		}
		if st.Leader == "" || st.Leader == "0" {
			return nil, fmt.Errorf("etcd %s knows no leader", m.Name)
		}
		if leader != "" && st.Leader != leader {
			return nil, fmt.Errorf("etcd members disagree on the leader: %s and %s", leader, st.Leader)
		}
		leader = st.Leader
	}
	for _, m := range tb.Etcd {
		if m.ID == leader && m.Reachable() {
			return m, nil
		}
	}
	return nil, fmt.Errorf("etcd leader %q is not a reachable member", leader)
}

// EtcdHealthy checks that every reachable member reports itself healthy
// (it has a leader and a quorum) and that they agree on the leader.
func (tb *Testbed) EtcdHealthy() error {
	for _, m := range tb.Etcd {
		if !m.Reachable() {
			continue
		}
		if err := objdbtest.CheckEtcdHealth(tb.cluster.httpc, m.ClientURL()+"/health"); err != nil {
			return fmt.Errorf("etcd %s: %w", m.Name, err)
		}
	}
	_, err := tb.EtcdLeader()
	return err
}

// WaitEtcdHealthy polls EtcdHealthy until it passes or within passes.
func (tb *Testbed) WaitEtcdHealthy(within time.Duration) error {
	return poll(within, nil, tb.EtcdHealthy)
}

// clusterEndpoints are loopback URLs for the test's store client: one
// proxy per member, each dialling from the client namespace.
func (tb *Testbed) clusterEndpoints() ([]string, error) {
	var eps []string
	for i, m := range tb.Etcd {
		addr, err := tb.cluster.proxies[i].start(tb.cluster.clientNS, fmt.Sprintf("%s:%d", m.IP, EtcdPort))
		if err != nil {
			return nil, err
		}
		eps = append(eps, tb.storeScheme()+"://"+addr)
	}
	return eps, nil
}

// clusterStore is Store for the etcd cluster: the client knows every
// member and fails over between them.
func (tb *Testbed) clusterStore(t testing.TB) objdb.Store {
	t.Helper()
	eps, err := tb.clusterEndpoints()
	if err != nil {
		t.Fatalf("testbed: store proxy: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeReadyTimeout)
	defer cancel()
	tlsCfg, err := tb.storeClientTLS()
	if err != nil {
		t.Fatalf("testbed: store client TLS: %v", err)
	}
	st, err := etcd.New(ctx, etcd.Config{Endpoints: eps, TLS: tlsCfg})
	if err != nil {
		t.Fatalf("testbed: open store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
