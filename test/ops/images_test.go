package ops

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/objdb/objdbtest"
)

// TestContainerImages builds the FROM scratch images of both daemons with
// scripts/build-images.sh on the local Docker Engine (no registry) and
// runs each one's --version (docs/operations.md, "Packaging").
func TestContainerImages(t *testing.T) {
	if err := exec.Command("docker", "version", "--format", "{{.Server.Version}}").Run(); err != nil {
		objdbtest.RequireComponent(t, "a Docker Engine (docker version)", err)
		return
	}
	commit := headCommit(t)
	prefix := fmt.Sprintf("contiv-test-%d/", os.Getpid())
	// Three static builds without cgo share no cache entries with the
	// suite's other builds: on a cold cache and a loaded machine they
	// took more than 8 minutes once.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "../../scripts/build-images.sh", "t")
	cmd.Env = append(os.Environ(), "IMAGE_PREFIX="+prefix)
	out, err := cmd.CombinedOutput()
	t.Cleanup(func() {
		_ = exec.Command("docker", "rmi", "-f", prefix+"netmaster:t", prefix+"netplugin:t", prefix+"cni-install:t").Run()
	})
	if err != nil {
		t.Fatalf("scripts/build-images.sh: %v\n%s", err, out)
	}
	for _, bin := range []string{"netmaster", "netplugin"} {
		img := prefix + bin + ":t"
		v, err := exec.CommandContext(ctx, "docker", "run", "--rm", "--network", "none", img, "--version").CombinedOutput()
		if err != nil || !strings.Contains(string(v), "GitCommit: "+commit) {
			t.Fatalf("docker run %s --version: %v\n%s", img, err, v)
		}
		// FROM scratch: nothing but the binary, so no shell.
		if sh, err := exec.CommandContext(ctx, "docker", "run", "--rm", "--network", "none", "--entrypoint", "/bin/sh", img, "-c", "true").CombinedOutput(); err == nil {
			t.Fatalf("%s has a shell; want a FROM scratch image:\n%s", img, sh)
		}
	}
	// The DaemonSet's init container image (packaging/k8s/contiv.yaml)
	// copies out a working contivk8s.
	img, dir := prefix+"cni-install:t", t.TempDir()
	if cp, err := exec.CommandContext(ctx, "docker", "run", "--rm", "--network", "none", "-v", dir+":/out", img, "cp", "/contivk8s", "/out/contivk8s").CombinedOutput(); err != nil {
		t.Fatalf("docker run %s cp: %v\n%s", img, err, cp)
	}
	// contivk8s is stamped like the daemons (utils/version).
	if v, err := exec.CommandContext(ctx, dir+"/contivk8s", "-version").CombinedOutput(); err != nil || !strings.Contains(string(v), "GitCommit: "+commit) {
		t.Fatalf("contivk8s from %s -version: %v\n%s", img, err, v)
	}
}

// TestSystemdUnits: both units start the binary from /usr/bin, read their
// settings from /etc/default, and do not restart on a configuration error
// (exit 22); netplugin starts before the Docker Engine.
func TestSystemdUnits(t *testing.T) {
	for _, bin := range []string{"netmaster", "netplugin"} {
		b, err := os.ReadFile("../../packaging/systemd/" + bin + ".service")
		if err != nil {
			t.Fatal(err)
		}
		unit := string(b)
		for _, want := range []string{"[Unit]", "[Service]", "[Install]", "ExecStart=/usr/bin/" + bin + "\n",
			"EnvironmentFile=-/etc/default/" + bin + "\n", "RestartPreventExitStatus=22\n", "WantedBy=multi-user.target\n"} {
			if !strings.Contains(unit, want) {
				t.Errorf("%s.service lacks %q", bin, want)
			}
		}
		if bin == "netplugin" && !strings.Contains(unit, "\nBefore=docker.service\n") {
			t.Errorf("netplugin.service is not ordered Before=docker.service")
		}
	}
	if sa, err := exec.LookPath("systemd-analyze"); err == nil {
		// verify needs the binaries at ExecStart's path; only the syntax
		// warnings about the unit files themselves count.
		out, _ := exec.Command(sa, "verify", "../../packaging/systemd/netmaster.service", "../../packaging/systemd/netplugin.service").CombinedOutput()
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, "Unknown key") || strings.Contains(l, "Unknown section") {
				t.Errorf("systemd-analyze: %s", l)
			}
		}
	}
}
