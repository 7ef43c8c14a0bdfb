package objdbtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/objdb/embedetcd"
)

// etcdStartTimeout bounds how long a test waits for an etcd to serve.
const etcdStartTimeout = 30 * time.Second

// quietLogger logs only errors, to stderr.
func quietLogger() *logrus.Entry {
	l := logrus.New()
	l.SetLevel(logrus.ErrorLevel)
	l.SetOutput(os.Stderr)
	return logrus.NewEntry(l)
}

func etcdServer(addr string, restart func(testing.TB)) Server {
	return Server{
		Endpoint:         "http://" + addr,
		Addr:             addr,
		Restart:          restart,
		NewProxyEndpoint: func(a string) string { return "http://" + a },
	}
}

// StartEmbeddedEtcd starts an in-process etcd (objdb/embedetcd) on free
// loopback ports with its data in t.TempDir, stopped on t.Cleanup. Its
// Restart closes the server and starts it again on the same data and ports.
func StartEmbeddedEtcd(t testing.TB) Server {
	t.Helper()
	dir := t.TempDir()
	e := &embedded{dir: dir}
	t.Cleanup(e.stop)
	ctx, cancel := context.WithTimeout(context.Background(), etcdStartTimeout)
	defer cancel()
	if err := e.start(ctx, "http://127.0.0.1:0", "http://127.0.0.1:0"); err != nil {
		t.Fatalf("start embedded etcd: %v", err)
	}
	return etcdServer(strings.TrimPrefix(e.srv.Endpoint(), "http://"), e.restart)
}

type embedded struct {
	dir string

	mu  sync.Mutex
	srv *embedetcd.Server
}

func (e *embedded) start(ctx context.Context, clientURL, peerURL string) error {
	srv, err := embedetcd.Start(ctx, embedetcd.Config{
		Name:      "objdbtest",
		DataDir:   e.dir,
		ClientURL: clientURL,
		PeerURL:   peerURL,
		Logger:    quietLogger(),
	})
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.srv = srv
	e.mu.Unlock()
	return nil
}

func (e *embedded) stop() {
	e.mu.Lock()
	srv := e.srv
	e.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

func (e *embedded) restart(t testing.TB) {
	t.Helper()
	e.mu.Lock()
	srv := e.srv
	e.mu.Unlock()
	srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), etcdStartTimeout)
	defer cancel()
	if err := e.start(ctx, srv.Endpoint(), srv.PeerURL()); err != nil {
		t.Fatalf("restart embedded etcd: %v", err)
	}
}

// StartEtcdProcess runs the etcd server binary (Debian's etcd-server,
// /usr/bin/etcd) on free loopback ports with its data in t.TempDir. The
// process is stopped on t.Cleanup, also when the test fails. Its Restart
// sends SIGTERM, waits for the exit and starts etcd again on the same data
// directory and ports; its Signal signals the running process (a process
// paused with SIGSTOP is resumed before it is stopped). Without the binary
// the test is skipped, or fails when CI=true.
func StartEtcdProcess(t testing.TB) Server {
	t.Helper()
	return StartEtcdProcessArgs(t)
}

// StartEtcdProcessArgs is StartEtcdProcess with extra etcd flags, e.g.
// "--enable-v2" for the v2 keys API the original Contiv spoke.
func StartEtcdProcessArgs(t testing.TB, extra ...string) Server {
	t.Helper()
	p := newEtcdProc(t)
	p.extra = extra
	startEtcdProc(t, p)
	srv := etcdServer(p.clientAddr, p.restart)
	srv.Signal = p.signal
	return srv
}

// newEtcdProc finds the etcd binary (skipping the test without it) and
// prepares a process stopped on t.Cleanup.
func newEtcdProc(t testing.TB) *etcdProc {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		if _, serr := os.Stat("/usr/bin/etcd"); serr == nil {
			bin, err = "/usr/bin/etcd", nil
		}
	}
	RequireComponent(t, "etcd server binary (Debian package etcd-server)", err)
	p := &etcdProc{bin: bin, dir: t.TempDir()}
	t.Cleanup(p.stop)
	return p
}

// startEtcdProc starts p on free loopback ports and waits until it is
// healthy.
func startEtcdProc(t testing.TB, p *etcdProc) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		p.clientAddr, p.peerAddr = freeLoopback(t), freeLoopback(t)
		err := p.start()
		if err == nil {
			err = p.waitHealthy(etcdStartTimeout)
		}
		if err == nil {
			break
		}
		out := p.output()
		p.stop()
		// A port picked above may have been taken before etcd bound it.
		if attempt < 3 && strings.Contains(out, "address already in use") {
			continue
		}
		t.Fatalf("start etcd process: %v\n%s", err, out)
	}
}

// freeLoopback returns "127.0.0.1:port" of a port free right now.
func freeLoopback(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("pick a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// etcdProc is one etcd server process; start/stop may repeat on the same
// data directory and ports.
type etcdProc struct {
	bin, dir             string
	clientAddr, peerAddr string

	// scheme is "http" or "https"; extra are further etcd flags (TLS,
	// --enable-v2); health asks /health (a plain client when nil).
	scheme string
	extra  []string
	health *http.Client

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	out  SyncBuffer
}

func (p *etcdProc) url(addr string) string {
	if p.scheme == "" {
		return "http://" + addr
	}
	return p.scheme + "://" + addr
}

// output is the tail of the process's output, for failure messages.
func (p *etcdProc) output() string {
	out := p.out.String()
	if len(out) > 4000 {
		out = "..." + out[len(out)-4000:]
	}
	return out
}

func (p *etcdProc) start() error {
	curl, purl := p.url(p.clientAddr), "http://"+p.peerAddr
	args := []string{
		"--name", "objdbtest",
		"--data-dir", p.dir,
		"--listen-client-urls", curl,
		"--advertise-client-urls", curl,
		"--listen-peer-urls", purl,
		"--initial-advertise-peer-urls", purl,
		"--initial-cluster", "objdbtest=" + purl,
		"--logger", "zap",
		"--log-level", "error",
	}
	cmd := exec.Command(p.bin, append(args, p.extra...)...)
	cmd.Stdout = &p.out
	cmd.Stderr = &p.out
	// Die with the test binary even if it is killed before cleanup.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.bin, err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	p.mu.Lock()
	p.cmd, p.done = cmd, done
	p.mu.Unlock()
	return nil
}

// stop sends SIGTERM, waits for the exit (SIGKILL after 10 s) and returns
// once the process is gone. Stopping a stopped process is a no-op.
func (p *etcdProc) stop() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.cmd, p.done = nil, nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	// A process a test paused (SIGSTOP) handles SIGTERM only once resumed.
	cmd.Process.Signal(syscall.SIGCONT)
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// signal sends sig to the running process.
func (p *etcdProc) signal(sig os.Signal) error {
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	if cmd == nil {
		return errors.New("etcd process not running")
	}
	return cmd.Process.Signal(sig)
}

func (p *etcdProc) restart(t testing.TB) {
	t.Helper()
	p.stop()
	if err := p.start(); err != nil {
		t.Fatalf("restart etcd process: %v", err)
	}
	if err := p.waitHealthy(etcdStartTimeout); err != nil {
		t.Fatalf("restart etcd process: %v\n%s", err, p.output())
	}
}

// waitHealthy polls the server's /health until it reports healthy, the
// process exits or d passes.
func (p *etcdProc) waitHealthy(d time.Duration) error {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	hc := p.health
	if hc == nil {
		hc = &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	}
	defer hc.CloseIdleConnections()
	url := p.url(p.clientAddr) + "/health"
	deadline := time.Now().Add(d)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return errors.New("etcd exited before it was healthy")
		default:
		}
		last = CheckEtcdHealth(hc, url)
		if last == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("etcd at %s not healthy after %v: %v", p.clientAddr, d, last)
}

// CheckEtcdHealth is one probe of an etcd's /health URL.
func CheckEtcdHealth(hc *http.Client, url string) error {
	resp, err := hc.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"health":"true"`)) {
		return fmt.Errorf("health %s: %s", strconv.Itoa(resp.StatusCode), bytes.TrimSpace(body))
	}
	return nil
}
