// Package quickstart checks the user path of the main job: the installer
// leaves the machine's own services alone (docs/compat.md U1).
package quickstart

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/objdb/objdbtest"
)

// TestInstallerLeavesHostServices runs check-host-services.sh in its
// installer mode: a stand-in etcd on 127.0.0.1:2379 with a key, a bird,
// and systemctl/service shims that claim etcd, bird and prometheus run as
// system services; scripts/install-deps.sh main must not stop, disable or
// restart any of them, and the stand-ins must keep running with their
// data. (The quickstart mode, which also brings up the cluster, is run by
// hand: bash test/quickstart/check-host-services.sh.)
func TestInstallerLeavesHostServices(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the installer")
	}
	if os.Geteuid() != 0 {
		objdbtest.RequireComponent(t, "root (the installer runs as root)", errors.New("not root"))
	}
	for _, bin := range []string{"etcd", "bird", "birdc", "ss", "curl"} {
		if _, err := exec.LookPath(bin); err != nil {
			objdbtest.RequireComponent(t, bin+" (scripts/install-deps.sh)", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "check-host-services.sh", "installer")
	cmd.Env = append(os.Environ(), "INSTALL_DEPS_NO_TEST_SERVERS=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("check-host-services.sh installer: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "check-host-services: ok (installer)") {
		t.Fatalf("no verdict:\n%s", out)
	}
	t.Logf("%s", out)
}
