// Package structure_test enforces the shape of the code that
// docs/architecture.md ("Dependency direction") describes: the floors and
// which may import which, the rules between the daemons, and the size limit
// of the daemons' packages. The floors are read from that page, so the page
// and this test cannot disagree.
package structure_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/contiv/netplugin"

// maxLines is the most non-test Go lines a package under netmaster/,
// netplugin/ or mgmtfn/ may hold (docs/architecture.md).
const maxLines = 2500

// sizeLimited are the folders whose packages maxLines bounds.
var sizeLimited = []string{"netmaster", "netplugin", "mgmtfn"}

// oversize lists the packages known to be above maxLines, each with the
// plan that brings it under. An entry whose package is under the limit (or
// gone) fails the test, so the list only shrinks.
var oversize = map[string]string{}

// never lists imports forbidden even in test files: the two daemons stand
// side by side, and the front ends see netplugin only through api/attach.
var never = [][2]string{
	{"netmaster", "netplugin"},
	{"netplugin", "netmaster"},
	{"mgmtfn", "netplugin"},
	{"mgmtfn", "netmaster"},
}

// pkg is the part of `go list -json` this test reads.
type pkg struct {
	ImportPath     string
	Dir            string
	GoFiles        []string
	CgoFiles       []string
	IgnoredGoFiles []string
	Imports        []string
	TestImports    []string
	XTestImports   []string
}

// floors maps a folder ("utils", "utils/daemonflags", "netmaster") to its
// floor, lowest 0.
type floors map[string]int

// readFloors parses the floor table of docs/architecture.md: the rows
// "| <n> | `folder/`, `folder/sub/` | ..." after the heading
// "## Dependency direction".
func readFloors(r io.Reader) (floors, error) {
	row := regexp.MustCompile("^\\| *([0-9]+) *\\|([^|]*)\\|")
	folder := regexp.MustCompile("`([a-z0-9/]+?)/?`")
	f := floors{}
	in := false
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == "## Dependency direction"
			continue
		}
		m := row.FindStringSubmatch(line)
		if !in || m == nil {
			continue
		}
		n, err := strconv.Atoi(m[1])
		if err != nil {
			return nil, fmt.Errorf("floor number %q: %w", m[1], err)
		}
		for _, fm := range folder.FindAllStringSubmatch(m[2], -1) {
			if prev, ok := f[fm[1]]; ok {
				return nil, fmt.Errorf("folder %s on floors %d and %d", fm[1], prev, n)
			}
			f[fm[1]] = n
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read floor table: %w", err)
	}
	if len(f) == 0 {
		return nil, errors.New("no floor table under \"## Dependency direction\"")
	}
	return f, nil
}

// unit is the longest folder of fl that holds rel (a path relative to the
// module), and its floor.
func (fl floors) unit(rel string) (string, int, bool) {
	best, floor := "", -1
	for folder, n := range fl {
		if (rel == folder || strings.HasPrefix(rel, folder+"/")) && len(folder) > len(best) {
			best, floor = folder, n
		}
	}
	return best, floor, best != ""
}

// top is the first element of a module-relative path.
func top(rel string) string {
	t, _, _ := strings.Cut(rel, "/")
	return t
}

// harness reports whether rel is a test helper package: under test/, or
// named "<something>test" (objdbtest, netmastertest, apptest ...).
func harness(rel string) bool {
	return top(rel) == "test" || strings.HasSuffix(filepath.Base(rel), "test")
}

// importViolations checks every import of pkgs between packages of the
// module against fl and never. Test files may in addition import test
// harnesses on any floor, but not across a never pair.
func importViolations(pkgs []pkg, fl floors) []string {
	var out []string
	for _, p := range pkgs {
		src, ok := strings.CutPrefix(p.ImportPath, module+"/")
		if !ok {
			continue
		}
		su, sf, ok := fl.unit(src)
		if !ok {
			out = append(out, fmt.Sprintf("%s: its folder is on no floor of docs/architecture.md", src))
			continue
		}
		check := func(imports []string, test bool) {
			for _, imp := range imports {
				dst, ok := strings.CutPrefix(imp, module+"/")
				if !ok || dst == src {
					continue
				}
				if slices.Contains(never, [2]string{top(src), top(dst)}) {
					out = append(out, fmt.Sprintf("%s imports %s: %s never imports %s", src, dst, top(src), top(dst)))
					continue
				}
				du, df, ok := fl.unit(dst)
				switch {
				case !ok:
					out = append(out, fmt.Sprintf("%s imports %s: its folder is on no floor", src, dst))
				case du == su || df < sf:
				case test && harness(dst):
				default:
					out = append(out, fmt.Sprintf("%s (floor %d) imports %s (floor %d): imports point down only", src, sf, dst, df))
				}
			}
		}
		check(p.Imports, false)
		check(p.TestImports, true)
		check(p.XTestImports, true)
	}
	sort.Strings(out)
	return out
}

// lines counts the non-test Go lines of p, whatever the build constraints.
func lines(p pkg) (int, error) {
	n := 0
	for _, f := range slices.Concat(p.GoFiles, p.CgoFiles, p.IgnoredGoFiles) {
		if strings.HasSuffix(f, "_test.go") || !strings.HasSuffix(f, ".go") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(p.Dir, f))
		if err != nil {
			return 0, fmt.Errorf("count lines: %w", err)
		}
		n += bytes.Count(b, []byte("\n"))
	}
	return n, nil
}

// sizeViolations checks maxLines against the counts of the size-limited
// packages and keeps known (oversize) honest.
func sizeViolations(counts map[string]int, known map[string]string) []string {
	var out []string
	for rel, n := range counts {
		if !slices.Contains(sizeLimited, top(rel)) {
			continue
		}
		_, listed := known[rel]
		switch {
		case n > maxLines && !listed:
			out = append(out, fmt.Sprintf("%s: %d lines of non-test Go, more than %d", rel, n, maxLines))
		case n <= maxLines && listed:
			out = append(out, fmt.Sprintf("%s: %d lines, under %d: remove it from oversize", rel, n, maxLines))
		}
	}
	for rel := range known {
		if _, ok := counts[rel]; !ok {
			out = append(out, fmt.Sprintf("%s: listed in oversize but no such package", rel))
		}
	}
	sort.Strings(out)
	return out
}

// listModule runs `go list -json ./...` at the module root.
func listModule(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Dir,GoFiles,CgoFiles,IgnoredGoFiles,Imports,TestImports,XTestImports", "./...")
	cmd.Dir = filepath.Join("..", "..")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 50 {
		t.Fatalf("go list found %d packages; is the test run inside the module?", len(pkgs))
	}
	return pkgs
}

func docFloors(t *testing.T) floors {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fl, err := readFloors(f)
	if err != nil {
		t.Fatalf("docs/architecture.md: %v", err)
	}
	return fl
}

func TestImportsFollowFloors(t *testing.T) {
	fl := docFloors(t)
	for _, v := range importViolations(listModule(t), fl) {
		t.Error(v)
	}
}

func TestPackageSize(t *testing.T) {
	counts := map[string]int{}
	for _, p := range listModule(t) {
		rel, ok := strings.CutPrefix(p.ImportPath, module+"/")
		if !ok {
			continue
		}
		n, err := lines(p)
		if err != nil {
			t.Fatal(err)
		}
		counts[rel] = n
	}
	for _, v := range sizeViolations(counts, oversize) {
		t.Error(v)
	}
	for rel, why := range oversize {
		t.Logf("%s: %d lines (limit %d): %s", rel, counts[rel], maxLines, why)
	}
}

// The checker itself finds what it must: an upward import, a cross-daemon
// import in a test file, a harness import from a test file, a package on
// no floor.
func TestCheckerFindsViolations(t *testing.T) {
	fl, err := readFloors(strings.NewReader(strings.Join([]string{
		"## Layout", "| 9 | `ignored/` | not this table |",
		"## Dependency direction",
		"| Floor | Folders | May import |", "|---|---|---|",
		"| 0 | `utils/` | nothing |",
		"| 1 | `api/` | below |",
		"| 2 | `mgmtfn/`, `netctl/` | below |",
		"| 3 | `netmaster/`, `netplugin/` | below |",
		"| 4 | `test/` | below |",
		"## Decisions",
	}, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := fl["ignored"]; ok || len(fl) != 7 {
		t.Fatalf("floors %v", fl)
	}
	m := func(s string) string { return module + "/" + s }
	pkgs := []pkg{
		{ImportPath: m("utils/x"), Imports: []string{m("api/attach")}},
		{ImportPath: m("api/attach"), Imports: []string{m("utils/x"), m("api/trace")}},
		{ImportPath: m("mgmtfn/dock"), Imports: []string{m("api/attach"), m("netplugin/attach")}},
		{ImportPath: m("netplugin/mc"), TestImports: []string{m("netmaster/mastertest")}},
		{ImportPath: m("netctl"), TestImports: []string{m("netmaster/mastertest"), m("test/ovstest")}, Imports: []string{m("netmaster/x")}},
		{ImportPath: m("elsewhere/y")},
		{ImportPath: "example.com/other", Imports: []string{m("netplugin/x")}},
	}
	got := importViolations(pkgs, fl)
	want := []string{
		"elsewhere/y: its folder is on no floor of docs/architecture.md",
		"mgmtfn/dock imports netplugin/attach: mgmtfn never imports netplugin",
		"netctl (floor 2) imports netmaster/x (floor 3): imports point down only",
		"netplugin/mc imports netmaster/mastertest: netplugin never imports netmaster",
		"utils/x (floor 0) imports api/attach (floor 1): imports point down only",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("violations\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	sizes := sizeViolations(map[string]int{"netplugin/a": 100, "netmaster/x": maxLines + 1, "mgmtfn/y": maxLines, "utils/z": 9000, "netplugin/big": 9000},
		map[string]string{"netplugin/a": "", "netplugin/big": "", "netmaster/gone": ""})
	wantSizes := []string{
		"netmaster/gone: listed in oversize but no such package",
		"netmaster/x: 2501 lines of non-test Go, more than 2500",
		"netplugin/a: 100 lines, under 2500: remove it from oversize",
	}
	if !slices.Equal(sizes, wantSizes) {
		t.Fatalf("size violations\n%s\nwant\n%s", strings.Join(sizes, "\n"), strings.Join(wantSizes, "\n"))
	}
}
