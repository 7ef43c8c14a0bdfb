// Package ops tests the operator-facing surface of the built binaries
// (docs/operations.md): stamped versions, health, metrics, TLS and tokens.
// Each test runs a real netmaster process with its embedded etcd on a
// loopback address of its own (no namespaces, no OVS).
package ops

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"github.com/contiv/netplugin/utils/certgen"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/contiv/netplugin/test/testbed"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// bins builds the stamped binaries once (the test bed's builder).
func bins(t *testing.T) testbed.Binaries {
	t.Helper()
	b, err := testbed.Build(t)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	return b
}

var ipSeq atomic.Uint32

// loopbackIP is an address of 127/8 unique to this process and call, so
// the netmaster's fixed ofnet port (9001) does not collide with another
// test's.
func loopbackIP() string {
	n := ipSeq.Add(1)
	return fmt.Sprintf("127.%d.%d.%d", 100+os.Getpid()%100, (os.Getpid()/100)%250+1, n%250+1)
}

func freePort(t *testing.T, ip string) int {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// netmaster is one netmaster process.
type netmaster struct {
	Addr     string // ip:port of the REST API
	EtcdURL  string // its embedded etcd's client URL
	log      *bytes.Buffer
	cancel   context.CancelFunc
	done     chan struct{}
	insecure bool
}

// startNetmaster runs the built netmaster with an embedded etcd and extra
// flags, and waits until /readyz answers over scheme ("http" or "https").
func startNetmaster(t *testing.T, bin, scheme string, extra ...string) *netmaster {
	t.Helper()
	return startNetmasterAt(t, bin, loopbackIP(), scheme, nil, extra...)
}

// startNetmasterAt is startNetmaster on ip; tc is the TLS of the
// readiness probe (nil: no certificate check, no client certificate).
func startNetmasterAt(t *testing.T, bin, ip, scheme string, tc *tls.Config, extra ...string) *netmaster {
	t.Helper()
	if tc == nil {
		tc = &tls.Config{InsecureSkipVerify: true}
	}
	api := net.JoinHostPort(ip, strconv.Itoa(freePort(t, ip)))
	etcd := "http://" + net.JoinHostPort(ip, strconv.Itoa(freePort(t, ip)))
	peer := "http://" + net.JoinHostPort(ip, strconv.Itoa(freePort(t, ip)))
	args := append([]string{"--mode", "test", "--netmode", "vxlan", "--fwdmode", "routing",
		"--external-address", api, "--internal-address", api, "--leader-ttl", "2s",
		"--etcd-endpoints", etcd, "--embedded-etcd-dir", filepath.Join(t.TempDir(), "etcd"),
		"--embedded-etcd-peer-url", peer}, extra...)
	// The ofnet RPC's mutual TLS, the secure default.
	pki, err := certgen.WriteCluster(t.TempDir(), []net.IP{net.ParseIP(ip)}, nil)
	if err != nil {
		t.Fatalf("netmaster certificates: %v", err)
	}
	args = append(args, pki.MasterArgs()...)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	nm := &netmaster{Addr: api, EtcdURL: etcd, log: &bytes.Buffer{}, cancel: cancel, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = nm.log, nm.log
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start netmaster: %v", err)
	}
	go func() { defer close(nm.done); _ = cmd.Wait() }()
	t.Cleanup(func() {
		nm.cancel()
		<-nm.done
		if t.Failed() {
			t.Logf("netmaster log:\n%s", nm.log.String())
		}
	})
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: tc, DisableKeepAlives: true}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		// /readyz: the leader term has started (the API answers).
		resp, err := client.Get(scheme + "://" + api + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nm
			}
		}
		select {
		case <-nm.done:
			t.Fatalf("netmaster exited:\n%s", nm.log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("netmaster not ready within 30s (last: %v):\n%s", err, nm.log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// run runs a binary and returns its stdout, stderr and exit code.
func run(t *testing.T, bin string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %s %v: %v", bin, args, err)
	}
	return out.String(), errb.String(), code
}

// headCommit is the commit the binaries were built from.
func headCommit(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v", err)
	}
	return strings.TrimSpace(string(out))
}

func readAll(t *testing.T, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
