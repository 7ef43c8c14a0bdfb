package netctl

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// helpCase is one verbatim help text of docs/netctl.md §9.
type helpCase struct {
	cmd  string
	want string
}

// loadHelpAppendix parses testdata/help_appendix.md (docs/netctl.md §9 verbatim):
// "#### `netctl ...`" headings, each followed by a fenced block.
func loadHelpAppendix(t *testing.T) []helpCase {
	t.Helper()
	f, err := os.Open("testdata/help_appendix.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []helpCase
	var cur *helpCase
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "#### `") && !in:
			cases = append(cases, helpCase{cmd: strings.Trim(strings.TrimPrefix(line, "#### "), "`")})
			cur = &cases[len(cases)-1]
		case line == "```" && cur != nil:
			if in {
				cur = nil
			}
			in = !in
		case in && cur != nil:
			cur.want += line + "\n"
		}
	}
	return cases
}

func TestHelpTextsVerbatim(t *testing.T) {
	cases := loadHelpAppendix(t)
	if len(cases) < 60 {
		t.Fatalf("only %d help cases parsed", len(cases))
	}
	for _, hc := range cases {
		t.Run(hc.cmd, func(t *testing.T) {
			args := strings.Fields(hc.cmd)[1:]
			r := runNetctl(t, runOpts{}, args...)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("code %d stderr %q", r.code, r.stderr)
			}
			if r.stdout != hc.want {
				t.Errorf("help mismatch\n--- got\n%q\n--- want\n%q", r.stdout, hc.want)
			}
		})
	}
}

func TestHelpForms(t *testing.T) {
	app := loadHelpAppendix(t)[0].want
	for _, args := range [][]string{nil, {"--help"}, {"-h"}, {"help"}, {"h"}} {
		r := runNetctl(t, runOpts{}, args...)
		if r.code != 0 || r.stdout != app {
			t.Errorf("%v: code %d\n%s", args, r.code, r.stdout)
		}
	}
	want := map[string]string{}
	for _, hc := range loadHelpAppendix(t) {
		want[hc.cmd] = hc.want
	}
	same := [][2]string{
		{"netctl net create -h", "netctl network create --help"},
		{"netctl network help create", "netctl network create --help"},
		{"netctl tenant", "netctl tenant --help"},
		{"netctl tenant -h", "netctl tenant --help"},
		{"netctl ep", "netctl endpoint --help"},
		{"netctl h tenant", "netctl help tenant"},
		{"netctl tenant list --help", "netctl tenant ls --help"},
	}
	for _, s := range same {
		r := runNetctl(t, runOpts{}, strings.Fields(s[0])[1:]...)
		if r.code != 0 || r.stdout != want[s[1]] {
			t.Errorf("%s: code %d\n%q\nwant\n%q", s[0], r.code, r.stdout, want[s[1]])
		}
	}
}

func TestHelpUsesArgv0Verbatim(t *testing.T) {
	var out strings.Builder
	n := App(Options{Stdout: &out, Stderr: &out})
	if code := n.Run([]string{"/usr/bin/netctl", "net", "create", "-h"}); code != 0 {
		t.Fatal(code)
	}
	if !strings.HasPrefix(out.String(), "NAME:\n   /usr/bin/netctl network create - Create a network\n") {
		t.Errorf("got %q", out.String())
	}
}

func TestVersionFlag(t *testing.T) {
	for _, f := range []string{"-v", "--version"} {
		r := runNetctl(t, runOpts{}, f)
		want := "netctl version \nVersion: \nGitCommit: \nBuildTime: \n\n"
		if r.code != 0 || r.stdout != want {
			t.Errorf("%s: %d %q", f, r.code, r.stdout)
		}
	}
	var out strings.Builder
	n := App(Options{Stdout: &out, Stderr: &out, Version: "1.2", GitCommit: "abc", BuildTime: "now"})
	n.Run([]string{"netctl", "-v"})
	if out.String() != "netctl version \nVersion: 1.2\nGitCommit: abc\nBuildTime: now\n\n" {
		t.Errorf("%q", out.String())
	}
}
