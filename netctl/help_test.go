package netctl

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/urfave/cli"
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

// addedAppWords start the lines the application help has beyond the
// original's (docs/compat.md U4). The original's lines stay verbatim and in
// order; an added line names a command or option the original's help does
// not know, so options added later need no change here.
var addedAppWords = []string{"completion", "trace", "--tls-ca-file", "--tls-cert-file", "--tls-key-file", "--token"}

// firstWord is the command or option a help line lists.
func firstWord(line string) string {
	f := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' || r == ',' || r == '\n' })
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// checkHelp compares one help text with the original's: verbatim, except
// that the application help (app set) holds added lines between the
// original's, each naming a command or option new to it, among them every
// one of addedAppWords exactly once.
func checkHelp(t *testing.T, got, want string, app bool) {
	t.Helper()
	if !app {
		if got != want {
			t.Errorf("help mismatch\n--- got\n%q\n--- want\n%q", got, want)
		}
		return
	}
	gl, wl := strings.SplitAfter(got, "\n"), strings.SplitAfter(want, "\n")
	seen := map[string]int{}
	i := 0
	for _, l := range gl {
		if i < len(wl) && l == wl[i] {
			i++
			continue
		}
		w := firstWord(l)
		if w == "" || !strings.HasPrefix(l, "   ") || strings.Contains(want, "   "+w) {
			t.Errorf("line %q is neither the original's next line %q nor a new command or option", l, wl[min(i, len(wl)-1)])
			continue
		}
		seen[w]++
	}
	if i != len(wl) {
		t.Errorf("the original's line %q (and any after it) is missing", wl[i])
	}
	for _, a := range addedAppWords {
		if seen[a] != 1 {
			t.Errorf("added line %q appears %d times", a, seen[a])
		}
	}
	if t.Failed() {
		t.Logf("got:\n%s", got)
	}
}

func TestHelpTextsVerbatim(t *testing.T) {
	cases := loadHelpAppendix(t)
	if len(cases) < 60 {
		t.Fatalf("only %d help cases parsed", len(cases))
	}
	for i, hc := range cases {
		t.Run(hc.cmd, func(t *testing.T) {
			args := strings.Fields(hc.cmd)[1:]
			r := runNetctl(t, runOpts{}, args...)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("code %d stderr %q", r.code, r.stderr)
			}
			checkHelp(t, r.stdout, hc.want, i == 0)
		})
	}
}

// TestHelpListsEverything walks the command tree: every command and
// subcommand is listed in its parent's help, every option in its
// command's help (the global ones, among them the TLS options and the
// token, in the application help), and nothing is hidden.
func TestHelpListsEverything(t *testing.T) {
	setupCLIPackage()
	app := App(Options{}).cliApp("netctl")
	help := func(args ...string) string {
		t.Helper()
		r := runNetctl(t, runOpts{}, append(args, "--help")...)
		if r.code != 0 {
			t.Fatalf("%v --help: code %d %s", args, r.code, r.stderr)
		}
		return r.stdout
	}
	flagsIn := func(path []string, flags []cli.Flag, text string) {
		t.Helper()
		for _, f := range flags {
			name := strings.TrimSpace(strings.Split(f.GetName(), ",")[0])
			dash := "--"
			if len(name) == 1 {
				dash = "-"
			}
			if !strings.Contains(text, "   "+dash+name) {
				t.Errorf("netctl %s --help does not list option %s%s", strings.Join(path, " "), dash, name)
			}
		}
	}
	var walk func(path []string, cmds []cli.Command, parentHelp string)
	walk = func(path []string, cmds []cli.Command, parentHelp string) {
		for _, c := range cmds {
			p := append(append([]string(nil), path...), c.Name)
			if c.Hidden {
				t.Errorf("netctl %s is hidden", strings.Join(p, " "))
			}
			if !strings.Contains(parentHelp, "\n   "+strings.Join(c.Names(), ", ")+"\t") {
				t.Errorf("the help of netctl %s does not list %q", strings.Join(path, " "), c.Name)
			}
			text := help(p...)
			flagsIn(p, c.Flags, text)
			walk(p, c.Subcommands, text)
		}
	}
	top := help()
	flagsIn(nil, app.Flags, top)
	for _, want := range []string{"--token", "--tls-ca-file", "--tls-cert-file", "--tls-key-file", "   trace\t", "   completion\t"} {
		if !strings.Contains(top, want) {
			t.Errorf("netctl --help lacks %q", want)
		}
	}
	walk(nil, app.Commands, top)
}

func TestHelpForms(t *testing.T) {
	app := runNetctl(t, runOpts{}, "--help").stdout
	checkHelp(t, app, loadHelpAppendix(t)[0].want, true)
	for _, args := range [][]string{nil, {"-h"}, {"help"}, {"h"}} {
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
