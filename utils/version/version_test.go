package version

import (
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{
		Main: debug.Module{Path: "github.com/contiv/netplugin", Version: "v0.0.0-20261129080000-0ff2b38abcde+dirty"},
		Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "0ff2b38abcdef0123456789"},
			{Key: "vcs.time", Value: "2026-11-29T08:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	got := FromBuildInfo(Info{}, bi)
	want := Info{Version: "v0.0.0-20261129080000-0ff2b38abcde+dirty", GitCommit: "0ff2b38abcdef0123456789-dirty", BuildTime: "2026-11-29T08:00:00Z"}
	if got != want {
		t.Errorf("FromBuildInfo = %+v, want %+v", got, want)
	}
	// Stamped values win.
	stamped := Info{Version: "v1.2.0", GitCommit: "abc", BuildTime: "2026-01-01T00:00:00Z"}
	if got := FromBuildInfo(stamped, bi); got != stamped {
		t.Errorf("stamped build: %+v", got)
	}
	// Nothing recorded: nothing made up.
	if got := FromBuildInfo(Info{}, &debug.BuildInfo{}); got != (Info{}) {
		t.Errorf("empty build info: %+v", got)
	}
	if got := FromBuildInfo(Info{}, nil); got != (Info{}) {
		t.Errorf("nil build info: %+v", got)
	}
}

// TestPlainBuildReportsVersion builds netctl with a plain "go build" (no
// -ldflags) and checks its --version shows what the toolchain recorded:
// the module version always, the revision and its time when the build
// ran in a git clone (not in a git worktree, where the toolchain records
// no VCS information).
func TestPlainBuildReportsVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := filepath.Join(t.TempDir(), "netctl")
	build := exec.Command("go", "build", "-buildvcs=auto", "-o", bin, "github.com/contiv/netplugin/cmd/netctl")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	recorded, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatalf("netctl --version: %v", err)
	}
	text := string(out)
	if strings.Contains(text, "Version: \n") {
		t.Errorf("empty Version in:\n%s", text)
	}
	for _, line := range strings.Split(string(recorded), "\n") {
		if rev, ok := strings.CutPrefix(strings.TrimSpace(line), "build\tvcs.revision="); ok {
			if !strings.Contains(text, "GitCommit: "+rev) || strings.Contains(text, "BuildTime: \n") {
				t.Errorf("revision %s recorded, --version says:\n%s", rev, text)
			}
			return
		}
	}
	t.Logf("the toolchain recorded no revision (git worktree or -buildvcs=false); --version:\n%s", text)
}
