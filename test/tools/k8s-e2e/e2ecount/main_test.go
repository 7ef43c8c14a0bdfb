package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A report with a passed, a failed, a self-skipped and a filtered spec,
// and a suite node: only the three that ran count.
func TestCount(t *testing.T) {
	report := `[{"SpecReports":[
 {"LeafNodeType":"SynchronizedBeforeSuite","State":"passed"},
 {"ContainerHierarchyTexts":["[sig-network] Netpol","NetworkPolicy between server and client"],"LeafNodeType":"It","LeafNodeText":"should support a 'default-deny-ingress' policy","State":"passed"},
 {"ContainerHierarchyTexts":["[sig-network] Netpol"],"LeafNodeType":"It","LeafNodeText":"should enforce policy based on Ports","State":"failed","Failure":{"Message":"pod x reached y\nmore"}},
 {"ContainerHierarchyTexts":["[sig-network] Services"],"LeafNodeType":"It","LeafNodeText":"should be able to up and down services","State":"skipped","Failure":{"Message":"Requires at least 3 nodes"}},
 {"ContainerHierarchyTexts":["[sig-storage] CSI"],"LeafNodeType":"It","LeafNodeText":"filtered","State":"skipped"}
]}]`
	p := filepath.Join(t.TempDir(), "r.json")
	if err := os.WriteFile(p, []byte(report), 0o600); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	err := run([]string{p}, &out)
	if err == nil || !strings.Contains(err.Error(), "1 specs failed") {
		t.Errorf("run: %v, want 1 failed", err)
	}
	for _, want := range []string{
		"pass=1 fail=1 skip=1\n",
		"FAIL [sig-network] Netpol should enforce policy based on Ports [failed]: pod x reached y\n",
		"SKIP [sig-network] Services should be able to up and down services: Requires at least 3 nodes\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "filtered") {
		t.Errorf("a filtered spec is counted:\n%s", out.String())
	}
}
