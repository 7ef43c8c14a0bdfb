package servicelb

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzServiceSpec feeds arbitrary port and selector entries to the
// serviceLB request checks: they never panic, an accepted port entry has
// the documented shape, and an accepted selector maps its key to its value.
func FuzzServiceSpec(f *testing.F) {
	for _, s := range [][2]string{{"80:8080:TCP", "key1=value1"}, {"80:8080", "a=b=c"}, {":::", "="}, {"65536:1:udp", "k="},
		{"+1:-1:Tcp", "x"}, {"\x00:\xff:UDP", "é=ü"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, port, sel string) {
		if validPort(port) {
			parts := strings.Split(port, ":")
			if len(parts) != 3 {
				t.Fatalf("accepted %q", port)
			}
			for _, n := range parts[:2] {
				if v, err := strconv.Atoi(n); err != nil || v < 1 || v > 65535 || strconv.Itoa(v) != strings.TrimLeft(n, "0") {
					t.Fatalf("accepted port number %q in %q", n, port)
				}
			}
			if p := strings.ToUpper(parts[2]); p != "TCP" && p != "UDP" {
				t.Fatalf("accepted protocol in %q", port)
			}
		}
		m, err := parseSelectors([]string{sel})
		if (err == nil) != (strings.Count(sel, "=") == 1) {
			t.Fatalf("selector %q: %v", sel, err)
		}
		if err == nil {
			k, v, _ := strings.Cut(sel, "=")
			if len(m) != 1 || m[k] != v {
				t.Fatalf("selector %q parsed as %v", sel, m)
			}
		}
	})
}
