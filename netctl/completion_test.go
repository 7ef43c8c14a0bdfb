package netctl

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestCompletionScripts(t *testing.T) {
	r := runNetctl(t, runOpts{}, "completion", "bash")
	if r.code != 0 || !strings.Contains(r.stdout, "complete -o default -F _netctl_complete netctl") ||
		!strings.Contains(r.stdout, "--generate-bash-completion") {
		t.Errorf("bash: %+v", r)
	}
	r = runNetctl(t, runOpts{}, "completion", "zsh")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "#compdef netctl\n") || !strings.Contains(r.stdout, "compdef _netctl_complete netctl") {
		t.Errorf("zsh: %+v", r)
	}
	if bash, err := exec.LookPath("bash"); err == nil {
		script := filepath.Join(t.TempDir(), "c.bash")
		if err := os.WriteFile(script, []byte(runNetctl(t, runOpts{}, "completion", "bash").stdout), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(bash, "-n", script).CombinedOutput(); err != nil {
			t.Errorf("bash -n: %v %s", err, out)
		}
	}
	if zsh, err := exec.LookPath("zsh"); err == nil {
		script := filepath.Join(t.TempDir(), "c.zsh")
		if err := os.WriteFile(script, []byte(runNetctl(t, runOpts{}, "completion", "zsh").stdout), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(zsh, "-n", script).CombinedOutput(); err != nil {
			t.Errorf("zsh -n: %v %s", err, out)
		}
	}
	// The completion command is listed in the help text.
	if r := runNetctl(t, runOpts{}, "--help"); !strings.Contains(r.stdout, "   completion\t") {
		t.Error("completion not listed in help")
	}
}

func TestCompletionCandidates(t *testing.T) {
	lines := func(args ...string) []string {
		t.Helper()
		f := newFake(t, nil)
		r := f.run(t, append(args, "--generate-bash-completion")...)
		if r.code != 0 || r.stderr != "" || len(f.requests()) != 0 {
			t.Errorf("%v: %+v reqs %q", args, r, f.requests())
		}
		return strings.Fields(r.stdout)
	}
	has := func(got []string, want ...string) bool {
		set := map[string]bool{}
		for _, g := range got {
			set[g] = true
		}
		for _, w := range want {
			if !set[w] {
				return false
			}
		}
		return true
	}
	if got := lines(); !has(got, "tenant", "network", "net", "policy", "help", "trace", "completion") {
		t.Errorf("top: %q", got)
	}
	if got := lines("tenant", "c"); !has(got, "create", "ls", "list", "rm") {
		t.Errorf("tenant: %q", got)
	}
	if got := lines("net", "create", "-"); !has(got, "--tenant", "-t", "--subnet", "--s6", "--tag") {
		t.Errorf("net create flags: %q", got)
	}
	if got := lines("-"); !has(got, "--netmaster", "--insecure") {
		t.Errorf("global flags: %q", got)
	}
	// a leaf with a name typed: nothing to offer, and no request sent
	lines("tenant", "create", "x")
}
