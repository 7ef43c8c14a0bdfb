package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contiv/netplugin/test/ovstest"
)

// TestQuickstart runs the README's main-job command (without its package
// install step) under its own prefix and state folder, and checks that the
// two docker containers pinged each other, fetched a page and exchanged
// TCP (request/response and 3 MB) and UDP; then its stop command removes
// it, engines and their cgroups included.
func TestQuickstart(t *testing.T) {
	ovstest.Require(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	env := append(os.Environ(), "QUICKSTART_SKIP_INSTALL=1", "QUICKSTART_PREFIX=qst-", "QUICKSTART_STATE="+state)
	stop := func() {
		cmd := exec.Command("bash", "scripts/quickstart.sh", "stop")
		cmd.Dir, cmd.Env = root, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("quickstart stop: %v\n%s", err, out)
		}
	}
	t.Cleanup(stop)
	cmd := exec.Command("bash", "scripts/quickstart.sh")
	cmd.Dir, cmd.Env = root, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("quickstart: %v\n%s", err, out)
	}
	for _, want := range []string{"3 packets transmitted, 3 received, 0% packet loss", "hello from web",
		"tcp ok: 64 bytes echoed", "tcp ok: 3145728 bytes echoed", "udp ok: echoed", "bash scripts/quickstart.sh stop"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("quickstart output lacks %q:\n%s", want, out)
		}
	}
	// Every pid file names the daemon itself, not a shell that started it.
	for file, comm := range map[string]string{"m/netmaster.pid": "netmaster", "h0/netplugin.pid": "netplugin",
		"h1/netplugin.pid": "netplugin", "h0/dockerd.pid": "dockerd", "h1/dockerd.pid": "dockerd",
		"web-netprobe.pid": "netprobe"} {
		pid, err := os.ReadFile(filepath.Join(state, file))
		if err != nil {
			t.Errorf("pid file: %v", err)
			continue
		}
		got, err := os.ReadFile("/proc/" + strings.TrimSpace(string(pid)) + "/comm")
		if err != nil || strings.TrimSpace(string(got)) != comm {
			t.Errorf("%s holds pid %s, a %q process (%v), want %s", file, strings.TrimSpace(string(pid)), strings.TrimSpace(string(got)), err, comm)
		}
	}
	stop()
	if out, _ := exec.Command("ip", "netns", "list").CombinedOutput(); strings.Contains(string(out), "qst-") {
		t.Errorf("namespaces left after stop:\n%s", out)
	}
	if left, _ := filepath.Glob("/sys/fs/cgroup/*/qst-*"); len(left) > 0 {
		t.Errorf("cgroups of the engines left after stop: %v", left)
	}
}
