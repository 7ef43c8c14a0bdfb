package ops

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBadInputCutOff: with tokens on, a malformed token, an oversize
// header and an oversize body are each refused with a clear status by the
// real netmaster binary (the read timeout of slow clients is tested in
// netmaster/server).
func TestBadInputCutOff(t *testing.T) {
	b := bins(t)
	tokFile := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokFile, []byte(adminToken+",ops,admin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	nm := startNetmaster(t, b.Netmaster, "http", "--auth-token-file", tokFile, "--http-max-body-bytes", "65536")
	hc := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for _, c := range []struct {
		name   string
		hdr    map[string]string
		body   string
		code   int
		inBody string
	}{
		{"malformed token", map[string]string{"Authorization": "Bearer a b"}, "{}", 401, "malformed Authorization header"},
		{"token with a comma", map[string]string{"Authorization": "Bearer abc,def0123456789"}, "{}", 401, "malformed"},
		{"oversize header", map[string]string{"Authorization": "Bearer " + adminToken, "X-Pad": strings.Repeat("a", 2<<20)}, "{}", 431, ""},
		{"oversize body", map[string]string{"Authorization": "Bearer " + adminToken},
			`{"tenantName":"default","networkName":"big","subnet":"198.18.43.0/24","encap":"vxlan","pad":"` + strings.Repeat("x", 128<<10) + `"}`, 413, ""},
	} {
		req, err := http.NewRequest("POST", "http://"+nm.Addr+"/api/v1/networks/default:big/", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range c.hdr {
			req.Header[k] = []string{v}
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		body := readAll(t, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code || !strings.Contains(body, c.inBody) {
			t.Errorf("%s: %d %q, want %d with %q", c.name, resp.StatusCode, body, c.code, c.inBody)
		}
	}
	if code, body := get(t, "http://"+nm.Addr+"/readyz"); code != 200 {
		t.Fatalf("netmaster not ready after the refusals: %d %s", code, body)
	}
}
