package testbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contiv/netplugin/test/orphans"
)

// buildTimeout bounds one "go build".
const buildTimeout = 10 * time.Minute

// Binaries are the daemons and CLI built from this module. A path is
// empty when that binary failed to build.
type Binaries struct {
	Netmaster string
	Netctl    string
	Netplugin string
}

// builds caches the result of building each group of commands once per
// test process.
var builds struct {
	master, plugin, probe, cni, mesos, portmap struct {
		once sync.Once
		err  error
	}
	dir    string
	dirErr error
	dirOne sync.Once
}

// Build compiles ./cmd/netmaster, ./cmd/netctl and ./cmd/netplugin of the
// module containing the working directory, once per test process, into a
// folder of this process under the system temp dir (folders of dead
// processes are removed). netplugin is built separately: when it does not
// compile, the others are still returned and the error names netplugin
// with the compiler's output.
func Build(t testing.TB) (Binaries, error) {
	t.Helper()
	bins, err := buildMaster()
	plugin, perr := buildNetplugin()
	bins.Netplugin = plugin
	return bins, errors.Join(err, perr)
}

// buildMaster builds netmaster and netctl (once).
func buildMaster() (Binaries, error) {
	dir, err := buildDir()
	if err != nil {
		return Binaries{}, err
	}
	builds.master.once.Do(func() {
		builds.master.err = goBuild(dir, "./cmd/netmaster", "./cmd/netctl")
	})
	if builds.master.err != nil {
		return Binaries{}, builds.master.err
	}
	return Binaries{Netmaster: filepath.Join(dir, "netmaster"), Netctl: filepath.Join(dir, "netctl")}, nil
}

// buildNetplugin builds netplugin (once) and returns its path.
func buildNetplugin() (string, error) {
	dir, err := buildDir()
	if err != nil {
		return "", err
	}
	builds.plugin.once.Do(func() {
		builds.plugin.err = goBuild(dir, "./cmd/netplugin")
	})
	if builds.plugin.err != nil {
		return "", builds.plugin.err
	}
	return filepath.Join(dir, "netplugin"), nil
}

// buildNetprobe builds the traffic helper test/tools/netprobe (once) and
// returns its path.
func buildNetprobe() (string, error) {
	dir, err := buildDir()
	if err != nil {
		return "", err
	}
	builds.probe.once.Do(func() {
		builds.probe.err = goBuild(dir, "./test/tools/netprobe")
	})
	if builds.probe.err != nil {
		return "", builds.probe.err
	}
	return filepath.Join(dir, "netprobe"), nil
}

// BuildCNIPlugin builds the contivk8s CNI plugin (once) as the images ship
// it (scripts/build-images.sh: static, CGO_ENABLED=0, -trimpath, -s -w;
// a dynamically linked binary costs the loader on each of its execs, one
// per CNI call) and returns its path; its folder serves as CNI_PATH.
func BuildCNIPlugin() (string, error) {
	dir, err := buildDir()
	if err != nil {
		return "", err
	}
	builds.cni.once.Do(func() {
		builds.cni.err = goBuildShipped(dir, "./cmd/contivk8s")
	})
	if builds.cni.err != nil {
		return "", builds.cni.err
	}
	return filepath.Join(dir, "contivk8s"), nil
}

// PortmapPackage is the reference portmap CNI plugin, a tool of this
// module (go.mod pins its version), which the images ship as
// contiv-portmap (scripts/build-images.sh).
const PortmapPackage = "github.com/containernetworking/plugins/plugins/meta/portmap"

// PortmapPlugin is the name contiv installs the portmap plugin under.
const PortmapPlugin = "contiv-portmap"

// BuildPortmapPlugin builds the portmap plugin (once) as the images ship
// it and returns its path, named PortmapPlugin.
func BuildPortmapPlugin() (string, error) {
	dir, err := buildDir()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "portmap")
	builds.portmap.once.Do(func() {
		if builds.portmap.err = os.MkdirAll(out, 0o755); builds.portmap.err != nil {
			return
		}
		if builds.portmap.err = goBuildShipped(out, PortmapPackage); builds.portmap.err != nil {
			return
		}
		builds.portmap.err = os.Rename(filepath.Join(out, "portmap"), filepath.Join(out, PortmapPlugin))
	})
	if builds.portmap.err != nil {
		return "", builds.portmap.err
	}
	return filepath.Join(out, PortmapPlugin), nil
}

// BuildMesosPlugin builds the Mesos CNI plugin netcontiv (once) and
// returns its path.
func BuildMesosPlugin() (string, error) {
	dir, err := buildDir()
	if err != nil {
		return "", err
	}
	builds.mesos.once.Do(func() {
		builds.mesos.err = goBuild(dir, "./cmd/netcontiv")
	})
	if builds.mesos.err != nil {
		return "", builds.mesos.err
	}
	return filepath.Join(dir, "netcontiv"), nil
}

func buildDir() (string, error) {
	builds.dirOne.Do(func() { builds.dir, builds.dirErr = binDir() })
	return builds.dir, builds.dirErr
}

// binDir creates this process's output folder and removes those of test
// processes that are gone.
func binDir() (string, error) {
	base := filepath.Join(os.TempDir(), "contiv-testbed-bin")
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", fmt.Errorf("testbed: binary dir: %w", err)
	}
	if entries, err := os.ReadDir(base); err == nil {
		for _, e := range entries {
			if pid, err := strconv.Atoi(e.Name()); err == nil && pid != os.Getpid() && !orphans.Alive(pid) {
				os.RemoveAll(filepath.Join(base, e.Name()))
			}
		}
	}
	dir := filepath.Join(base, strconv.Itoa(os.Getpid()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("testbed: binary dir: %w", err)
	}
	return dir, nil
}

// goBuild runs "go build -o dir/ pkgs..." in the module root, stamped with
// the version, commit and build time scripts/version.sh prints, as every
// build of the project is (docs/operations.md).
func goBuild(dir string, pkgs ...string) error {
	return goBuildWith(dir, false, pkgs...)
}

// goBuildShipped is goBuild with the flags of scripts/build-images.sh.
func goBuildShipped(dir string, pkgs ...string) error {
	return goBuildWith(dir, true, pkgs...)
}

func goBuildWith(dir string, shipped bool, pkgs ...string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = "/usr/local/go/bin/go"
		if _, serr := os.Stat(goBin); serr != nil {
			return fmt.Errorf("testbed: go tool not found: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	stamp, err := exec.CommandContext(ctx, "bash", filepath.Join(root, "scripts", "version.sh")).Output()
	if err != nil {
		return fmt.Errorf("testbed: scripts/version.sh: %w", err)
	}
	args := []string{"build", "-ldflags", strings.TrimSpace(string(stamp)), "-o", dir + "/"}
	if shipped {
		args = []string{"build", "-trimpath", "-ldflags", "-s -w " + strings.TrimSpace(string(stamp)), "-o", dir + "/"}
	}
	cmd := exec.CommandContext(ctx, goBin, append(args, pkgs...)...)
	cmd.Dir = root
	if shipped {
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("testbed: go build %s: %w\n%s", strings.Join(pkgs, " "), err, out)
	}
	return nil
}

// moduleRoot walks up from the working directory to the folder holding
// go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("testbed: working directory: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testbed: no go.mod above the working directory")
		}
		dir = parent
	}
}
