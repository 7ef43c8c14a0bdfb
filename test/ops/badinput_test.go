package ops

import (
	"bufio"
	"fmt"
	"io"
	"net"
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
		{"oversize body", map[string]string{"Authorization": "Bearer " + adminToken, "Accept": "application/problem+json"},
			`{"tenantName":"default","networkName":"big","subnet":"198.18.43.0/24","encap":"vxlan","pad":"` + strings.Repeat("x", 128<<10) + `"}`, 413, ""},
	} {
		req, err := http.NewRequest("POST", "http://"+nm.Addr+"/api/v1/networks/default:big/", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range c.hdr {
			req.Header[k] = []string{v}
		}
		code, body, err := exchangeWhileWriting(nm.Addr, req)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if code != c.code || !strings.Contains(body, c.inBody) {
			t.Errorf("%s: %d %q, want %d with %q", c.name, code, body, c.code, c.inBody)
		}
	}
	if _, err := getNetwork(nm.Addr, "default:big"); err == nil {
		t.Errorf("the refused network default:big exists")
	}
	if code, body := get(t, "http://"+nm.Addr+"/readyz"); code != 200 {
		t.Fatalf("netmaster not ready after the refusals: %d %s", code, body)
	}
}

// exchangeWhileWriting sends req on a connection of its own and reads the
// answer while the request is still being written. A server that refuses an
// oversize request answers before reading all of it and then closes; a
// client that only reads after its write (net/http's Transport on a loaded
// machine) can see that close as a reset and lose the answer.
func exchangeWhileWriting(addr string, req *http.Request) (int, string, error) {
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return 0, "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		return 0, "", err
	}
	req.Close = true
	go func() { _ = req.Write(conn) }() // a write cut short by the refusal is expected
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return 0, "", fmt.Errorf("read answer: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil && len(b) == 0 && resp.ContentLength != 0 {
		return resp.StatusCode, "", fmt.Errorf("read answer body: %w", err)
	}
	return resp.StatusCode, string(b), nil
}

// getNetwork reads one network through the REST API with the admin token.
func getNetwork(addr, key string) (string, error) {
	req, err := http.NewRequest("GET", "http://"+addr+"/api/v1/networks/"+key+"/", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%d %s", resp.StatusCode, b)
	}
	return string(b), nil
}
