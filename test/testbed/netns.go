package testbed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/contiv/netplugin/test/orphans"
	"github.com/contiv/netplugin/test/ovstest"
)

// cmdTimeout bounds every helper command (ip, ovs-vsctl, ...) the harness
// runs.
const cmdTimeout = 60 * time.Second

// run executes a program in the root namespace and returns its combined
// output; the error carries the command line and the output.
func run(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("timed out after %v: %w", cmdTimeout, ctx.Err())
	}
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return string(out), nil
}

// nsExec runs a program inside the named namespace.
func nsExec(ns string, name string, args ...string) (string, error) {
	return run("ip", append([]string{"netns", "exec", ns, name}, args...)...)
}

// ipIn runs "ip -n ns args...".
func ipIn(ns string, args ...string) error {
	_, err := run("ip", append([]string{"-n", ns}, args...)...)
	return err
}

// addNetNS creates a namespace with its loopback up.
func addNetNS(name string) error {
	if _, err := run("ip", "netns", "add", name); err != nil {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	if err := ipIn(name, "link", "set", "lo", "up"); err != nil {
		return fmt.Errorf("bring up lo in %s: %w", name, err)
	}
	return nil
}

// addVeth creates a veth pair with end a in namespace nsA and end b in
// namespace nsB (created there directly: no name ever appears in the root
// namespace) and brings both ends up.
func addVeth(nsA, a, nsB, b string) error {
	if err := ipIn(nsA, "link", "add", a, "type", "veth", "peer", "name", b, "netns", nsB); err != nil {
		return fmt.Errorf("veth %s/%s - %s/%s: %w", nsA, a, nsB, b, err)
	}
	if err := ipIn(nsA, "link", "set", a, "up"); err != nil {
		return err
	}
	return ipIn(nsB, "link", "set", b, "up")
}

// listNetNS returns the namespaces "ip netns" knows whose name starts with
// prefix.
func listNetNS(prefix string) []string {
	entries, err := os.ReadDir(netnsDir())
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

func netnsDir() string {
	if _, err := os.Stat("/run/netns"); err == nil {
		return "/run/netns"
	}
	return "/var/run/netns"
}

// nsPids returns the processes living in the namespace.
func nsPids(ns string) []int {
	out, err := run("ip", "netns", "pids", ns)
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(out) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 1 && pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids
}

// killNetNS SIGKILLs every process inside the namespace, waits (bounded)
// until they are gone and deletes the namespace.
func killNetNS(ns string) error {
	var errs []error
	for round := 0; round < 3; round++ {
		pids := nsPids(ns)
		if len(pids) == 0 {
			break
		}
		for _, pid := range pids {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				errs = append(errs, fmt.Errorf("kill %d in %s: %w", pid, ns, err))
			}
		}
		deadline := time.Now().Add(5 * time.Second)
		for _, pid := range pids {
			for orphans.Alive(pid) && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	if pids := nsPids(ns); len(pids) > 0 {
		errs = append(errs, fmt.Errorf("processes %v in %s survive SIGKILL", pids, ns))
	}
	if _, err := run("ip", "netns", "delete", ns); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// dialIn returns a DialContext function whose sockets are created inside
// the namespace, so a connection from the test process reaches addresses
// only that namespace can route to.
func dialIn(ns string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		err := ovstest.DoInNetNS(ns, func() error {
			var d net.Dialer
			var err error
			c, err = d.DialContext(ctx, network, addr)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("dial %s %s in namespace %s: %w", network, addr, ns, err)
		}
		return c, nil
	}
}
