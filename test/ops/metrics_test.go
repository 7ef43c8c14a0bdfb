package ops

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/objdb/objdbtest"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	return resp.StatusCode, readAll(t, resp.Body)
}

// promtool is the path of Prometheus' promtool; missing it skips the
// check, or fails it with CI=true.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		objdbtest.RequireComponent(t, "promtool (Debian package prometheus, scripts/install-deps.sh)", err)
	}
	return p
}

// checkMetricsText runs "promtool check metrics" on an exposition.
func checkMetricsText(t *testing.T, what, text string) {
	t.Helper()
	pt := promtool(t)
	if pt == "" {
		return
	}
	cmd := exec.Command(pt, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil {
		f := filepath.Join(t.TempDir(), "metrics.txt")
		_ = os.WriteFile(f, []byte(text), 0o644)
		t.Fatalf("promtool check metrics on %s: %v\n%s", what, err, out)
	}
}

// TestNetmasterHealthAndMetrics: /healthz and /readyz answer 200 on a
// running leader, /metrics passes promtool and has the leadership, HTTP,
// store and IPAM series (docs/operations.md).
func TestNetmasterHealthAndMetrics(t *testing.T) {
	b := bins(t)
	nm := startNetmaster(t, b.Netmaster, "http")
	base := "http://" + nm.Addr
	if code, body := get(t, base+"/healthz"); code != 200 || body != "healthz check passed\n" {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	if code, body := get(t, base+"/readyz"); code != 200 || body != "[+]store ok\n[+]leader ok\nreadyz check passed\n" {
		t.Fatalf("/readyz: %d %q", code, body)
	}
	out, errOut, code := run(t, b.Netctl, "--netmaster", base, "net", "create", "-s", "198.18.40.0/24", "-g", "198.18.40.254", "n1")
	if code != 0 {
		t.Fatalf("netctl net create: %d %s %s", code, out, errOut)
	}
	get(t, base+"/api/v1/networks/")
	code, text := get(t, base+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{
		"contiv_netmaster_leader 1\n",
		"contiv_netmaster_leadership_changes_total 1\n",
		`contiv_http_requests_total{code="200",method="GET",route="/api/v1/networks/"} 1` + "\n",
		`contiv_http_requests_total{code="200",method="POST",route="/api/v1/networks/{key}/"} 1` + "\n",
		`contiv_http_requests_total{code="200",method="GET",route="/readyz"}`,
		`contiv_http_request_duration_seconds_bucket{code="200",method="GET",route="/api/v1/networks/",le="+Inf"} 1` + "\n",
		`contiv_store_request_duration_seconds_count{operation="put"}`,
		`contiv_store_errors_total{operation="get"} 0` + "\n",
		`contiv_netmaster_ipam_pool_addresses{network="n1",tenant="default"} 254` + "\n",
		`contiv_netmaster_ipam_pool_used_addresses{network="n1",tenant="default"} 1` + "\n",
		"go_goroutines ",
		"process_resident_memory_bytes ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", text)
	}
	checkMetricsText(t, "netmaster /metrics", text)
}
