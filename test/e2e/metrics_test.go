package e2e

import (
	"encoding/json"
	"fmt"
	"io"
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
	tb := testbed.New(t, testbed.Config{Hosts: 2})
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
    static_configs:
      - targets: ['%s:9090', '%s:9090']
`, m.Addr(), tb.Hosts[0].CtrlIP, tb.Hosts[1].CtrlIP)
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
	for _, target := range []string{m.URL() + "/metrics", "http://" + tb.Hosts[0].CtrlIP + ":9090/metrics"} {
		resp, err := hc.Get(target)
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
