package testbed

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TrafficPort is the TCP and UDP port ServeTraffic listens on by default.
const TrafficPort = 7000

// BulkBytes is the size of CheckTraffic's TCP transfer.
const BulkBytes = 3 << 20

// serveReadyTimeout bounds the start of a traffic server.
const serveReadyTimeout = 20 * time.Second

// Server is a netprobe echo server in a container.
type Server struct {
	cmd  *exec.Cmd
	done chan struct{}
	once sync.Once
}

// ServeTraffic starts the traffic echo (TCP and UDP, package
// test/trafficprobe) in c's namespace on every address, on ports (default
// TrafficPort). It runs until Stop, the container's Delete or the end of
// the test (at most 10 minutes). Any error fails the test.
func (c *Container) ServeTraffic(t testing.TB, ports ...int) *Server {
	t.Helper()
	if len(ports) == 0 {
		ports = []int{TrafficPort}
	}
	bin, err := buildNetprobe()
	if err != nil {
		t.Fatalf("testbed: %v", err)
	}
	var addrs []string
	for _, p := range ports {
		addrs = append(addrs, ":"+strconv.Itoa(p))
	}
	return c.serveTraffic(t, bin, strings.Join(addrs, ","), defaultServeLifetime)
}

// defaultServeLifetime bounds a traffic server the test does not stop.
const defaultServeLifetime = 10 * time.Minute

// ServeTrafficFor is ServeTraffic on TrafficPort with a lifetime of its
// own (a test that runs longer than ServeTraffic's 10 minutes).
func (c *Container) ServeTrafficFor(t testing.TB, life time.Duration) *Server {
	t.Helper()
	bin, err := buildNetprobe()
	if err != nil {
		t.Fatalf("testbed: %v", err)
	}
	return c.serveTraffic(t, bin, ":"+strconv.Itoa(TrafficPort), life)
}

// ServeTrafficOn is ServeTraffic bound to one address: its UDP answers leave
// from that address whatever the route back (a multi-homed host).
func (c *Container) ServeTrafficOn(t testing.TB, ip string, port int) *Server {
	t.Helper()
	bin, err := buildNetprobe()
	if err != nil {
		t.Fatalf("testbed: %v", err)
	}
	return c.serveTraffic(t, bin, net.JoinHostPort(ip, strconv.Itoa(port)), defaultServeLifetime)
}

func (c *Container) serveTraffic(t testing.TB, bin, list string, life time.Duration) *Server {
	t.Helper()
	cmd := exec.Command("ip", "netns", "exec", c.NS, bin, "serve", "-tcp", list, "-udp", list, "-lifetime", life.String())
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("testbed: traffic server in %s: %v", c.Name, err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("testbed: traffic server in %s: %v", c.Name, err)
	}
	s := &Server{cmd: cmd, done: make(chan struct{})}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		ok := sc.Scan() && sc.Text() == "ready"
		ready <- ok
		for sc.Scan() {
		}
		cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(s.Stop)
	select {
	case ok := <-ready:
		if !ok {
			s.Stop()
			t.Fatalf("testbed: traffic server in %s did not start: %s", c.Name, stderr.String())
		}
	case <-time.After(serveReadyTimeout):
		s.Stop()
		t.Fatalf("testbed: traffic server in %s not ready after %v", c.Name, serveReadyTimeout)
	}
	return s
}

// Exited reports whether the server has ended (Stop, its lifetime, or
// its namespace gone).
func (s *Server) Exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// Stop ends the server and waits for it. Idempotent.
func (s *Server) Stop() {
	s.once.Do(func() {
		s.cmd.Process.Kill()
		<-s.done
	})
}

// probe runs the netprobe client in c's namespace.
func (c *Container) probe(args ...string) (string, error) {
	bin, err := buildNetprobe()
	if err != nil {
		return "", err
	}
	return nsExec(c.NS, bin, args...)
}

// TCPEcho sends n random bytes over one TCP connection to the echo at
// ip:port and checks the SHA-256 of what comes back, all within timeout.
func (c *Container) TCPEcho(ip string, port, n int, timeout time.Duration) error {
	addr := ip + ":" + strconv.Itoa(port)
	if _, err := c.probe("tcp", "-addr", addr, "-bytes", strconv.Itoa(n), "-timeout", timeout.String()); err != nil {
		return fmt.Errorf("TCP %d bytes %s → %s: %w", n, c.Name, addr, err)
	}
	return nil
}

var dscpRE = regexp.MustCompile(`dscp=(\d+)`)

// UDPEcho sends a datagram to the echo at ip:port (again every 200 ms)
// until the answer comes back within timeout, and returns the DSCP the
// server saw on it.
func (c *Container) UDPEcho(ip string, port int, timeout time.Duration) (dscp int, err error) {
	addr := ip + ":" + strconv.Itoa(port)
	out, err := c.probe("udp", "-addr", addr, "-timeout", timeout.String())
	if err != nil {
		return 0, fmt.Errorf("UDP %s → %s: %w", c.Name, addr, err)
	}
	m := dscpRE.FindStringSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("UDP %s → %s: no dscp in %q", c.Name, addr, out)
	}
	return strconv.Atoi(m[1])
}

// UDPEchoSize is UDPEcho with a datagram of n payload bytes (the echo
// answers with n+1), e.g. one that fills the container's MTU.
func (c *Container) UDPEchoSize(ip string, port, n int, timeout time.Duration) error {
	addr := ip + ":" + strconv.Itoa(port)
	if _, err := c.probe("udp", "-addr", addr, "-bytes", strconv.Itoa(n), "-timeout", timeout.String()); err != nil {
		return fmt.Errorf("UDP %d bytes %s → %s: %w", n, c.Name, addr, err)
	}
	return nil
}

// CheckTraffic sends application traffic from c to the echo (ServeTraffic)
// at ip:port: a TCP request/response, a 3 MB TCP transfer whose SHA-256
// must match, and a UDP exchange, each within timeout. It returns every
// failure.
func (c *Container) CheckTraffic(ip string, port int, timeout time.Duration) error {
	var errs []error
	if err := c.TCPEcho(ip, port, 64, timeout); err != nil {
		errs = append(errs, fmt.Errorf("request/response: %w", err))
	}
	if err := c.TCPEcho(ip, port, BulkBytes, timeout); err != nil {
		errs = append(errs, fmt.Errorf("bulk transfer: %w", err))
	}
	if _, err := c.UDPEcho(ip, port, timeout); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// CheckNoTraffic checks that neither a TCP connection nor a UDP exchange
// to ip:port succeeds within timeout (both tried at once), and returns
// what got through.
func (c *Container) CheckNoTraffic(ip string, port int, timeout time.Duration) error {
	var tcpErr, udpErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := c.TCPEcho(ip, port, 64, timeout); err == nil {
			tcpErr = fmt.Errorf("TCP %s → %s:%d got through", c.Name, ip, port)
		}
	})
	wg.Go(func() {
		if _, err := c.UDPEcho(ip, port, timeout); err == nil {
			udpErr = fmt.Errorf("UDP %s → %s:%d got through", c.Name, ip, port)
		}
	})
	wg.Wait()
	return errors.Join(tcpErr, udpErr)
}
