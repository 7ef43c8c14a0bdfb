package testbed

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Master is one netmaster in its own namespace.
type Master struct {
	Index int
	NS    string
	IP    string // management address: REST API on IP:9999, ofnet master, embedded etcd
	// UnderlayIP is its address on the underlay, where it reaches the
	// ofnet agents at their VTEP addresses.
	UnderlayIP string
	Dir        string // embedded etcd data and netmaster.log

	tb   *Testbed
	proc *daemon
}

// Info is netmaster's /info answer (docs/daemons.md §4.3).
type Info struct {
	LocalIP        string   `json:"local-ip"`
	LeaderIP       string   `json:"leader-ip"`
	CurrentState   string   `json:"current-state"`
	NetpluginNodes []string `json:"netplugin-nodes"`
	NetmasterNodes []string `json:"netmaster-nodes"`
}

func (tb *Testbed) addMaster(t testing.TB, i int) {
	t.Helper()
	m := &Master{Index: i, NS: fmt.Sprintf("%sm%d", tb.Prefix, i), IP: MasterIP(i), UnderlayIP: MasterUnderlayIP(i), tb: tb}
	var err error
	if m.Dir, err = tb.stateDir(fmt.Sprintf("m%d", i)); err != nil {
		t.Fatalf("testbed: %v", err)
	}
	if err := addNetNS(m.NS); err != nil {
		t.Fatalf("testbed: master %d: %v", i, err)
	}
	if err := tb.plugMgmt(m.NS, fmt.Sprintf("m%dm", i), m.IP); err != nil {
		t.Fatalf("testbed: master %d management: %v", i, err)
	}
	if err := tb.plugUnderlay(m.NS, fmt.Sprintf("m%d", i), m.UnderlayIP); err != nil {
		t.Fatalf("testbed: master %d underlay: %v", i, err)
	}
	cfg := tb.Config
	args := []string{
		"--mode", cfg.mode(), "--netmode", cfg.NetMode, "--fwdmode", cfg.FwdMode,
		"--external-address", m.Addr(), "--internal-address", m.Addr(),
	}
	if cfg.Docker {
		// netmaster creates docker networks on host 0's engine; every
		// netplugin creates them on its own (docs/docker.md).
		args = append(args, "--name", PluginName, "--docker-socket", filepath.Join(tb.Dir, "h0", "docker", "docker.sock"))
	}
	args = append(args, tb.StoreArgs()...)
	if cfg.Store == Embedded {
		args = append(args, "--embedded-etcd-dir", filepath.Join(m.Dir, "etcd"),
			"--embedded-etcd-peer-url", "http://127.0.0.1:2380")
		args = append(args, tb.embeddedEtcdArgs()...)
	}
	if cfg.LeaderTTL > 0 {
		args = append(args, "--leader-ttl", cfg.LeaderTTL.String())
	}
	args = append(args, tb.masterRPCArgs()...)
	args = append(args, tb.masterRESTArgs()...)
	args = append(args, cfg.NetmasterArgs...)
	m.proc = &daemon{name: "netmaster " + m.NS, ns: m.NS, bin: tb.Bins.Netmaster, args: args,
		logPath: filepath.Join(m.Dir, "netmaster.log")}
	tb.Masters = append(tb.Masters, m)
	if !cfg.NoNetmaster {
		m.Start(t)
	}
}

// Addr is the netmaster's "ip:9999".
func (m *Master) Addr() string { return m.IP + ":" + strconv.Itoa(NetmasterPort) }

// URL is "http://ip:9999" ("https://" with Config.SecureREST).
func (m *Master) URL() string { return m.tb.restScheme() + "://" + m.Addr() }

// Start starts the netmaster process (again). It does not wait for it to
// serve: use Testbed.WaitLeader or Master.Info.
func (m *Master) Start(t testing.TB) {
	t.Helper()
	if err := m.proc.start(); err != nil {
		t.Fatalf("testbed: %v", err)
	}
}

// Kill ends the netmaster with SIGKILL and waits for its exit.
func (m *Master) Kill(t testing.TB) {
	t.Helper()
	if err := m.proc.stop(syscall.SIGKILL, stopGrace); err != nil {
		t.Fatalf("testbed: %v", err)
	}
}

// Stop ends the netmaster with SIGTERM and waits for its exit; a netmaster
// that needs longer than 15 s is killed and the test fails.
func (m *Master) Stop(t testing.TB) {
	t.Helper()
	if err := m.proc.stop(syscall.SIGTERM, stopGrace); err != nil {
		t.Errorf("testbed: %v\n%s", err, m.proc.logs(40))
	}
}

// Running reports whether the process is up.
func (m *Master) Running() bool { return m.proc.running() }

// Logs returns the netmaster's whole log.
func (m *Master) Logs() string { return m.proc.logs(0) }

// Info asks this netmaster for /info (a follower proxies it to the
// leader).
func (m *Master) Info() (Info, error) {
	var info Info
	hc := m.tb.HTTPClient()
	resp, err := hc.Get(m.URL() + "/info")
	if err != nil {
		return info, fmt.Errorf("GET %s/info: %w", m.URL(), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return info, fmt.Errorf("GET %s/info: %w", m.URL(), err)
	}
	if resp.StatusCode != http.StatusOK {
		return info, fmt.Errorf("GET %s/info: status %d: %s", m.URL(), resp.StatusCode, bytes.TrimSpace(body))
	}
	if err := json.Unmarshal(body, &info); err != nil {
		return info, fmt.Errorf("GET %s/info: %w: %s", m.URL(), err, body)
	}
	return info, nil
}

// Leader returns the running master that holds the leader lock according
// to /info, or nil.
func (tb *Testbed) Leader() *Master {
	for _, m := range tb.Masters {
		if !m.Running() {
			continue
		}
		info, err := m.Info()
		if err != nil || info.LeaderIP == "" {
			continue
		}
		for _, l := range tb.Masters {
			if l.Addr() == info.LeaderIP && l.Running() {
				return l
			}
		}
	}
	return nil
}

// WaitLeader waits (bounded) until a running master other than not (may
// be nil) is the leader according to /info, and returns it.
func (tb *Testbed) WaitLeader(t testing.TB, not *Master, within time.Duration) *Master {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if l := tb.Leader(); l != nil && l != not {
			return l
		}
		if time.Now().After(deadline) {
			t.Fatalf("testbed: no new netmaster leader within %v\n%s", within, tb.masterLogTails(40))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitMasters waits until every master answers /info naming a leader.
func (tb *Testbed) waitMasters(t testing.TB, within time.Duration) {
	t.Helper()
	for _, m := range tb.Masters {
		err := poll(within, m.proc.exited(), func() error {
			info, err := m.Info()
			if err == nil && info.LeaderIP == "" {
				err = fmt.Errorf("/info names no leader")
			}
			return err
		})
		if err != nil {
			t.Fatalf("testbed: netmaster %s: %v (%s)\n%s", m.Addr(), err, m.proc.exitStatus(), m.proc.logs(60))
		}
	}
}

func (tb *Testbed) masterLogTails(n int) string {
	var b bytes.Buffer
	for _, m := range tb.Masters {
		fmt.Fprintf(&b, "--- netmaster %s (%s) ---\n%s\n", m.Addr(), runState(m.proc), m.proc.logs(n))
	}
	return b.String()
}

func runState(d *daemon) string {
	if d.running() {
		return "running"
	}
	if s := d.exitStatus(); s != "" {
		return s
	}
	return "not started"
}
