package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/objdb/objdbtest"
	"github.com/contiv/netplugin/test/testbed"
	"github.com/contiv/netplugin/utils/certgen"
)

// promPort is where the test's Prometheus server listens, on the master
// namespace's loopback.
const promPort = 19090

// TestPrometheusScrapesDaemons: a real Prometheus server scrapes the
// netmaster and both netplugins; after two endpoints are attached its
// query API returns the leadership, endpoint, OpenFlow, flow, attach and
// HTTP series; "promtool check metrics" passes on both daemons' output
// (docs/operations.md, "Metrics").
func TestPrometheusScrapesDaemons(t *testing.T) {
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		objdbtest.RequireComponent(t, "prometheus (Debian package prometheus, scripts/install-deps.sh)", err)
		return
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		objdbtest.RequireComponent(t, "promtool (Debian package prometheus)", err)
		return
	}
	// The netplugins' metrics leave the host only over HTTPS with a
	// bearer token (docs/security.md, "Listeners").
	pkiDir := t.TempDir()
	ca, err := certgen.NewCA("inspect CA", 0)
	if err != nil {
		t.Fatal(err)
	}
	caFiles, err := certgen.WriteCA(pkiDir, ca)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.Issue(certgen.Request{CommonName: "netplugin inspect",
		IPs: []net.IP{net.ParseIP(testbed.HostCtrlIP(0)), net.ParseIP(testbed.HostCtrlIP(1))}})
	if err != nil {
		t.Fatal(err)
	}
	inspectFiles, err := certgen.WritePair(pkiDir, "inspect", pair)
	if err != nil {
		t.Fatal(err)
	}
	const inspectToken = "metrics-reader-7f3a"
	tokenFile := filepath.Join(pkiDir, "token")
	if err := os.WriteFile(tokenFile, []byte(inspectToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tb := testbed.New(t, testbed.Config{Hosts: 2, NetpluginHostArgs: func(h *testbed.Host) []string {
		return []string{"--inspect-address", h.CtrlIP + ":9090", "--inspect-tls-cert-file", inspectFiles.Cert,
			"--inspect-tls-key-file", inspectFiles.Key, "--inspect-token-file", tokenFile}
	}})
	netctl(t, tb, "net", "create", "--subnet", "198.19.7.0/24", "--gateway", "198.19.7.254", "pm1")
	attachNew(t, tb.Hosts[0], "pa", "default", "pm1", "")
	attachNew(t, tb.Hosts[1], "pb", "default", "pm1", "")

	m := tb.Masters[0]
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: netmaster
    static_configs:
      - targets: ['%s']
  - job_name: netplugin
    scheme: https
    tls_config:
      ca_file: %s
    authorization:
      credentials_file: %s
    static_configs:
      - targets: ['%s:9090', '%s:9090']
`, m.Addr(), caFiles.Cert, tokenFile, tb.Hosts[0].CtrlIP, tb.Hosts[1].CtrlIP)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "config", cfgPath).CombinedOutput(); err != nil {
		t.Fatalf("promtool check config: %v\n%s", err, out)
	}
	logPath := tb.StartProcess(t, m.NS, "prometheus", promBin, "--config.file="+cfgPath,
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address=127.0.0.1:"+strconv.Itoa(promPort),
		"--log.level=warn")

	hc := tb.HTTPClient()
	// promtool on each daemon's exposition.
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	hcs := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: hc.Transport.(*http.Transport).DialContext, TLSClientConfig: &tls.Config{RootCAs: roots}, DisableKeepAlives: true}}
	for _, target := range []string{m.URL() + "/metrics", "https://" + tb.Hosts[0].CtrlIP + ":9090/metrics"} {
		req, err := http.NewRequest(http.MethodGet, target, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+inspectToken)
		resp, err := hcs.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", target, err)
		}
		text, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = strings.NewReader(string(text))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics %s: %v\n%s", target, err, out)
		}
	}

	query := func(q string) ([]float64, error) {
		resp, err := hc.Get(fmt.Sprintf("http://127.0.0.1:%d/api/v1/query?query=%s", promPort, url.QueryEscape(q)))
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		var r struct {
			Status string
			Data   struct {
				Result []struct {
					Value [2]any `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			return nil, err
		}
		var out []float64
		for _, s := range r.Data.Result {
			v, _ := strconv.ParseFloat(fmt.Sprint(s.Value[1]), 64)
			out = append(out, v)
		}
		return out, nil
	}
	checks := []struct {
		q    string
		want []float64
	}{
		{`sum(up{job=~"netmaster|netplugin"})`, []float64{3}},
		{`contiv_netmaster_leader`, []float64{1}},
		{`sum(contiv_netmaster_endpoints)`, []float64{2}},
		{`contiv_netmaster_ipam_pool_used_addresses{network="pm1"}`, []float64{3}},
		{`sum(contiv_netplugin_local_endpoints)`, []float64{2}},
		{`sum(contiv_netplugin_openflow_connected)`, []float64{4}},
		{`count(sum by (instance) (contiv_netplugin_flows{table="Policy"}) > 0)`, []float64{2}},
		{`sum(contiv_netplugin_endpoint_operation_duration_seconds_count{operation="attach",result="success"})`, []float64{2}},
		{`sum(contiv_http_requests_total{job="netmaster",route="/plugin/createEndpoint",code="200"})`, []float64{2}},
		{`count(contiv_store_request_duration_seconds_count{operation="get"})`, []float64{3}},
	}
	deadline := time.Now().Add(40 * time.Second)
	for _, c := range checks {
		for {
			got, err := query(c.q)
			if err == nil && fmt.Sprint(got) == fmt.Sprint(c.want) {
				break
			}
			if time.Now().After(deadline) {
				log, _ := os.ReadFile(logPath)
				t.Fatalf("query %s = %v (err %v), want %v\nprometheus log:\n%s", c.q, got, err, c.want, log)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
}
