package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/test/testbed"
)

// TestPathMTUProblemIsLogged: host 1's underlay link takes only 1400-byte
// packets. Host 0 (whose VXLAN endpoints make 1500-byte encapsulated packets)
// logs a path-MTU problem naming host 1's VTEP; host 1, whose endpoint MTU
// follows its own link, finds its path fine.
func TestPathMTUProblemIsLogged(t *testing.T) {
	tb := testbed.New(t, testbed.Config{Hosts: 2, NetMode: "vlan", FwdMode: "bridge", SkipNetplugin: true})
	h0, h1 := tb.Hosts[0], tb.Hosts[1]
	if out, err := h1.Exec("ip", "link", "set", testbed.UnderlayIf, "mtu", "1400"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, h := range tb.Hosts {
		h.StartNetplugin(t)
	}
	tb.WaitNetplugins(t, 2, 60*time.Second)
	wantLog := func(h *testbed.Host, needles ...string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			logs := h.Logs()
			found := true
			for _, n := range needles {
				found = found && strings.Contains(logs, n)
			}
			if found {
				for _, l := range strings.Split(logs, "\n") {
					if strings.Contains(l, needles[0]) {
						t.Logf("%s: %s", h.Name, l)
					}
				}
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("%s: no log line with %q in:\n%s", h.Name, needles, logs)
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	wantLog(h0, "PATH MTU PROBLEM", h1.IP, "answers 64-byte probes but not 1500-byte ones", "at least 1500 bytes")
	wantLog(h1, "path MTU check: 1400-byte VXLAN packets reach the peer")
}
