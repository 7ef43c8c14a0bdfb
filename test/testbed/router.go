package testbed

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The top-of-rack router of VLAN routing tests: bird (Debian's bird2) in the
// fabric namespace, on the VLAN trunk bridge, peering over eBGP with every host.
const (
	RouterIP  = "198.18.50.1"
	RouterAS  = 65000
	routerLen = 24
)

// RouterPeerIP is host i's BGP router address (netctl bgp create --router-ip,
// without the length).
func RouterPeerIP(i int) string { return fmt.Sprintf("198.18.50.%d", 11+i) }

// HostAS is host i's AS number.
func HostAS(i int) int { return 65001 + i }

// Router is the testbed's BGP router.
type Router struct {
	tb   *Testbed
	dir  string
	sock string
	d    *daemon
}

func birdBinaries() (string, string, error) {
	bird, err := exec.LookPath("bird")
	if err != nil {
		return "", "", fmt.Errorf("bird (Debian package bird2): %w", err)
	}
	birdc, err := exec.LookPath("birdc")
	if err != nil {
		return "", "", fmt.Errorf("birdc (Debian package bird2): %w", err)
	}
	return bird, birdc, nil
}

// StartRouter gives the fabric namespace the router address on the VLAN trunk
// bridge, lets it forward, and starts bird with one eBGP session per host
// (import and export all, next hop self). With CI=true a missing bird fails
// the test, else it is skipped.
func (tb *Testbed) StartRouter(t testing.TB) *Router {
	t.Helper()
	bird, _, err := birdBinaries()
	RequireComponent(t, "bird", err)
	dir, err := tb.stateDir("router")
	if err != nil {
		t.Fatalf("testbed: %v", err)
	}
	ns := tb.FabricNS
	if err := ipIn(ns, "addr", "add", fmt.Sprintf("%s/%d", RouterIP, routerLen), "dev", VlanBridge); err != nil {
		t.Fatalf("testbed: router address: %v", err)
	}
	// bird's own TCP must carry real checksums: the hosts' ends are OVS
	// userspace ports (see DisableTxOffload).
	if err := DisableTxOffload(ns, VlanBridge); err != nil {
		t.Fatalf("testbed: %v", err)
	}
	for _, kv := range []string{"net.ipv4.ip_forward=1", "net.ipv4.conf.all.send_redirects=0",
		"net.ipv4.conf." + VlanBridge + ".send_redirects=0"} {
		if _, err := nsExec(ns, "sysctl", "-q", "-w", kv); err != nil {
			t.Fatalf("testbed: router: %v", err)
		}
	}
	var conf strings.Builder
	fmt.Fprintf(&conf, "router id %s;\nlog stderr all;\nprotocol device { scan time 2; }\n", RouterIP)
	conf.WriteString("protocol kernel { ipv4 { import none; export all; }; }\n")
	fmt.Fprintf(&conf, "template bgp hosts {\n  local %s as %d;\n  hold time 9; keepalive time 3; connect retry time 2;\n"+
		"  ipv4 { import all; export all; next hop self; };\n}\n", RouterIP, RouterAS)
	for _, h := range tb.Hosts {
		fmt.Fprintf(&conf, "protocol bgp %s from hosts { neighbor %s as %d; }\n", birdName(h), RouterPeerIP(h.Index), HostAS(h.Index))
	}
	path := filepath.Join(dir, "bird.conf")
	if err := os.WriteFile(path, []byte(conf.String()), 0o644); err != nil {
		t.Fatalf("testbed: %v", err)
	}
	r := &Router{tb: tb, dir: dir, sock: filepath.Join(dir, "bird.ctl")}
	r.d = &daemon{name: "bird", ns: ns, bin: bird, logPath: filepath.Join(dir, "bird.log"),
		args: []string{"-f", "-c", path, "-s", r.sock}}
	r.start(t)
	t.Cleanup(func() { r.d.stop(syscall.SIGKILL, stopGrace) })
	return r
}

// birdName is the bird protocol name of host h's session.
func birdName(h *Host) string { return fmt.Sprintf("host%d", h.Index) }

func (r *Router) start(t testing.TB) {
	t.Helper()
	if err := r.d.start(); err != nil {
		t.Fatalf("testbed: %v", err)
	}
	err := poll(20*time.Second, r.d.exited(), func() error {
		_, err := r.Birdc("show", "status")
		return err
	})
	if err != nil {
		t.Fatalf("testbed: bird: %v\n%s", err, r.d.logs(40))
	}
}

// Restart stops bird (SIGTERM) and starts it again.
func (r *Router) Restart(t testing.TB) {
	t.Helper()
	if err := r.d.stop(syscall.SIGTERM, stopGrace); err != nil {
		t.Fatalf("testbed: stop bird: %v", err)
	}
	r.start(t)
}

// Birdc runs a birdc command against the router.
func (r *Router) Birdc(args ...string) (string, error) {
	_, birdc, err := birdBinaries()
	if err != nil {
		return "", err
	}
	return run(birdc, append([]string{"-s", r.sock}, args...)...)
}

// Routes is the router's table (birdc show route).
func (r *Router) Routes() (string, error) { return r.Birdc("show", "route") }

// HasRoute reports whether the router's table holds prefix (e.g. 198.19.2.1/32).
func (r *Router) HasRoute(prefix string) (bool, string, error) {
	out, err := r.Routes()
	if err != nil {
		return false, out, err
	}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == prefix {
			return true, out, nil
		}
	}
	return false, out, nil
}

// SessionUp reports whether host h's BGP session is Established.
func (r *Router) SessionUp(h *Host) bool {
	out, err := r.Birdc("show", "protocols", birdName(h))
	return err == nil && strings.Contains(out, "Established")
}

// Logs is bird's log.
func (r *Router) Logs() string { return r.d.logs(60) }
