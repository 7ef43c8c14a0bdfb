package ops

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestVersionStamped: every built binary and netmaster's /version carry a
// non-empty version and the commit the build was made from (issue 16,
// versioned builds; docs/operations.md).
func TestVersionStamped(t *testing.T) {
	b := bins(t)
	commit := headCommit(t)
	check := func(what, text string) {
		t.Helper()
		if !strings.Contains(text, "GitCommit: "+commit) {
			t.Errorf("%s does not name commit %s:\n%s", what, commit, text)
		}
		if strings.Contains(text, "Version: \n") || !strings.Contains(text, "Version: ") {
			t.Errorf("%s has an empty version:\n%s", what, text)
		}
		if strings.Contains(text, "BuildTime: \n") {
			t.Errorf("%s has an empty build time:\n%s", what, text)
		}
	}
	for name, bin := range map[string]string{"netmaster": b.Netmaster, "netplugin": b.Netplugin, "netctl": b.Netctl} {
		out, errOut, code := run(t, bin, "--version")
		if code != 0 {
			t.Fatalf("%s --version: exit %d: %s", name, code, errOut)
		}
		check(name+" --version", out)
	}

	nm := startNetmaster(t, b.Netmaster, "http")
	resp, err := http.Get("http://" + nm.Addr + "/version")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]string
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("/version body: %v", err)
	}
	if !strings.HasPrefix(v["GitCommit"], commit) || v["Version"] == "" || v["BuildTime"] == "" || len(v) != 3 {
		t.Fatalf("/version = %v, want the stamped values of commit %s", v, commit)
	}

	out, errOut, code := run(t, b.Netctl, "--netmaster", "http://"+nm.Addr, "version")
	if code != 0 {
		t.Fatalf("netctl version: exit %d: %s", code, errOut)
	}
	client, server, ok := strings.Cut(out, "Server Version:\n")
	if !ok || !strings.HasPrefix(client, "Client Version:\n") {
		t.Fatalf("netctl version output:\n%s", out)
	}
	check("netctl version (client)", client)
	check("netctl version (server)", server)
}
