package e2e

import (
	"encoding/json"
	"io"
	"net/url"
	"strings"
	"testing"

	"github.com/contiv/netplugin/api/trace"
	"github.com/contiv/netplugin/test/testbed"
)

// TestPacketTrace: netctl trace on a two-host test bed (docs/operations.md,
// "Packet trace"): a packet to an endpoint on the other host is forwarded
// to the tunnel port towards that host; one to a group whose policy denies
// tcp/80 is dropped by that rule; one to an address no endpoint has is
// dropped as unknown. The same question asked of the netplugin's inspect
// server directly gives the same verdict.
func TestPacketTrace(t *testing.T) {
	tb := testbed.New(t, testbed.Config{Hosts: 2})
	netctl(t, tb, "net", "create", "--subnet", "198.19.9.0/24", "--gateway", "198.19.9.254", "pt1")
	netctl(t, tb, "policy", "create", "pdeny")
	netctl(t, tb, "policy", "rule-add", "pdeny", "7", "-d", "in", "-l", "tcp", "-P", "80", "-j", "deny", "-p", "5")
	netctl(t, tb, "group", "create", "pt1", "gdst", "-p", "pdeny")
	netctl(t, tb, "group", "create", "pt1", "gsrc")
	a := attachNew(t, tb.Hosts[0], "ta", "default", "pt1", "gsrc")
	b := attachNew(t, tb.Hosts[1], "tb", "default", "pt1", "gdst")
	c := attachNew(t, tb.Hosts[1], "tc", "default", "pt1", "gsrc")

	run := func(dst string, args ...string) trace.Result {
		t.Helper()
		out := netctl(t, tb, append(append([]string{"trace", "-j"}, args...), a.id, dst)...)
		var r trace.Result
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("netctl trace -j: %v\n%s", err, out)
		}
		human := netctl(t, tb, append(append([]string{"trace"}, args...), a.id, dst)...)
		t.Logf("netctl trace %s %s:\n%s", a.id, dst, human)
		if !strings.Contains(human, "Result:   "+r.Summary) {
			t.Errorf("human output lacks the summary %q", r.Summary)
		}
		return r
	}

	// Forwarded across hosts through the tunnel to host 1.
	r := run(c.ip(), "--port", "80")
	wantTunnel := "vxif" + strings.ReplaceAll(tb.Hosts[1].IP, ".", "")
	if r.Verdict != "forwarded" || !r.Tunnel || r.OutPortName != wantTunnel || r.RemoteIP != tb.Hosts[1].IP {
		t.Errorf("trace to %s on the other host: %+v, want forwarded to tunnel port %s", c.ip(), r, wantTunnel)
	}
	if !strings.Contains(r.Summary, "tunnel port "+wantTunnel) {
		t.Errorf("summary %q does not name the tunnel port %s", r.Summary, wantTunnel)
	}

	// Dropped by the deny rule of the destination's group policy.
	r = run(b.ip(), "--port", "80")
	if r.Verdict != "dropped" || !strings.Contains(r.Rule, "pdeny") || !strings.Contains(r.Rule, "7") || !strings.Contains(r.Summary, "dropped by policy rule") {
		t.Errorf("trace to %s (group with a deny rule): %+v, want dropped by rule pdeny 7", b.ip(), r)
	}
	// The same destination on another port is not denied.
	if r := run(b.ip(), "--port", "443"); r.Verdict != "forwarded" || !r.Tunnel {
		t.Errorf("trace to %s:443: %+v, want forwarded", b.ip(), r)
	}

	// An address no endpoint has.
	r = run("198.19.9.77", "-p", "udp", "--port", "53")
	if r.Verdict != "dropped" || r.KnownDestination || !strings.Contains(r.Summary, "198.19.9.77 is not a known endpoint") {
		t.Errorf("trace to an unknown address: %+v", r)
	}

	// netplugin's inspect server answers the same question.
	q := url.Values{"endpoint": {a.id}, "dst": {b.ip()}, "proto": {"tcp"}, "port": {"80"}}
	h0 := tb.Hosts[0]
	resp, err := h0.HTTPClient().Get(h0.InspectURL() + "/inspect/trace?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var direct trace.Result
	if err := json.Unmarshal(body, &direct); err != nil || direct.Verdict != "dropped" || direct.Rule == "" {
		t.Errorf("netplugin /inspect/trace: %d %s (%v)", resp.StatusCode, body, err)
	}

	// Bad input: a clear error, exit non-zero.
	for _, args := range [][]string{{"trace", a.id, "not-an-ip"}, {"trace", "-p", "sctp", a.id, c.ip()}, {"trace", "no-such-endpoint", c.ip()}} {
		out, err := tb.Netctl(args...)
		if err == nil {
			t.Errorf("netctl %v succeeded:\n%s", args, out)
		} else {
			t.Logf("netctl %v: %s", args, strings.TrimSpace(out))
		}
	}
}
