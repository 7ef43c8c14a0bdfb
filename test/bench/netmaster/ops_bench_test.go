package netmaster

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/contiv/netplugin/netmaster/auth"
	"github.com/contiv/netplugin/netmaster/master"
	"github.com/contiv/netplugin/objdb/etcd"
	"github.com/contiv/netplugin/objdb/objdbmetrics"
	"github.com/contiv/netplugin/objdb/objdbtest"
	"github.com/contiv/netplugin/utils/httpmetrics"
)

const benchAdminToken = "bench-admin-token-0123456789"

// leaderHandler starts a leader term on a fresh store root; with reg, the
// store, the HTTP layer and the term are measured into it, as netmaster
// does with metrics on (docs/operations.md).
func leaderHandler(b *testing.B, reg *prometheus.Registry) http.Handler {
	b.Helper()
	srv := objdbtest.StartEmbeddedEtcd(b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := etcd.New(ctx, etcd.Config{Endpoints: []string{srv.Endpoint}, Root: objdbtest.UniqueRoot(b), Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	cfg := master.Config{FwdMode: "bridge", ClusterMode: "test"}
	kv := objdbmetrics.Wrap(st, nil)
	if reg != nil {
		cfg.Metrics = reg
		kv = objdbmetrics.Wrap(st, reg)
	}
	lctx, lcancel := context.WithCancel(context.Background())
	b.Cleanup(lcancel)
	h, err := master.New(cfg, quiet()).Start(lctx, kv)
	if err != nil {
		b.Fatal(err)
	}
	if reg != nil {
		h = httpmetrics.New(reg).Wrap(h)
	}
	return h
}

// client posts to one test server.
type client struct {
	url   string
	hc    *http.Client
	token string
}

func (c *client) do(method, path, body string) error {
	req, err := http.NewRequest(method, c.url+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, msg)
	}
	return nil
}

// BenchmarkRESTTLSTokens lists networks at concurrency 16 through plain
// HTTP and through HTTPS with bearer tokens, in alternating rounds of one
// run, on one leader. conn-per-request answers one request per connection,
// as netmaster's listeners do, so every HTTPS request pays a handshake;
// keep-alive reuses connections. Reported: requests/s of each and their
// ratio (tls/plain).
//
//	go test ./test/bench/netmaster -run '^$' -bench RESTTLSTokens -benchtime 4000x
func BenchmarkRESTTLSTokens(b *testing.B) {
	b.Run("conn-per-request", func(b *testing.B) { benchTLS(b, false) })
	b.Run("keep-alive", func(b *testing.B) { benchTLS(b, true) })
}

func benchTLS(b *testing.B, keepAlive bool) {
	h := leaderHandler(b, nil)
	toks, err := auth.Parse(strings.NewReader(benchAdminToken + ",bench,admin\n"))
	if err != nil {
		b.Fatal(err)
	}
	plainSrv := httptest.NewUnstartedServer(h)
	plainSrv.Config.SetKeepAlivesEnabled(keepAlive)
	plainSrv.Start()
	defer plainSrv.Close()
	tlsSrv := httptest.NewUnstartedServer(toks.Middleware(h, nil))
	tlsSrv.Config.SetKeepAlivesEnabled(keepAlive)
	tlsSrv.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	plainTr := &http.Transport{DisableKeepAlives: !keepAlive, MaxIdleConnsPerHost: 64}
	defer plainTr.CloseIdleConnections()
	plain := &client{url: plainSrv.URL, hc: &http.Client{Transport: plainTr}}
	tlsTr := tlsSrv.Client().Transport.(*http.Transport).Clone()
	tlsTr.DisableKeepAlives, tlsTr.MaxIdleConnsPerHost = !keepAlive, 64
	defer tlsTr.CloseIdleConnections()
	secure := &client{url: tlsSrv.URL, hc: &http.Client{Transport: tlsTr}, token: benchAdminToken}
	if err := plain.do("POST", "/api/v1/networks/default:net/", `{"tenantName":"default","networkName":"net","encap":"vxlan","subnet":"10.1.1.0/24"}`); err != nil {
		b.Fatal(err)
	}
	var tPlain, tTLS time.Duration
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(500, b.N-done)
		for _, c := range []struct {
			cl  *client
			sum *time.Duration
		}{{plain, &tPlain}, {secure, &tTLS}} {
			_, d, err := run(n, 16, func(int) error { return c.cl.do("GET", "/api/v1/networks/", "") })
			if err != nil {
				b.Fatal(err)
			}
			*c.sum += d
		}
		done += n
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/tPlain.Seconds(), "plain-req/s")
	b.ReportMetric(float64(b.N)/tTLS.Seconds(), "tls+token-req/s")
	b.ReportMetric(tPlain.Seconds()/tTLS.Seconds(), "tls/plain")
}

// BenchmarkCreateEndpointMetrics creates and deletes endpoints at
// concurrency 16 on two leaders, one with metrics off and one with them on
// (HTTP, store and term collectors), in alternating rounds of one run.
// Reported: creates/s of each and their ratio (on/off).
//
//	go test ./test/bench/netmaster -run '^$' -bench CreateEndpointMetrics -benchtime 2000x
func BenchmarkCreateEndpointMetrics(b *testing.B) {
	var cls [2]*client
	for i, reg := range []*prometheus.Registry{nil, prometheus.NewRegistry()} {
		srv := httptest.NewServer(leaderHandler(b, reg))
		defer srv.Close()
		tr := &http.Transport{MaxIdleConnsPerHost: 64}
		defer tr.CloseIdleConnections()
		cls[i] = &client{url: srv.URL, hc: &http.Client{Transport: tr}}
		if err := cls[i].do("POST", "/api/v1/networks/default:net/", `{"tenantName":"default","networkName":"net","encap":"vxlan","subnet":"10.1.1.0/24"}`); err != nil {
			b.Fatal(err)
		}
	}
	var tCreate [2]time.Duration
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(250, b.N-done)
		base := done
		for i, c := range cls {
			_, d, err := run(n, 16, func(j int) error {
				return c.do("POST", "/plugin/createEndpoint", fmt.Sprintf(`{"TenantName":"default","NetworkName":"net","ConfigEP":{"Container":"c%d","Host":"h1"}}`, base+j))
			})
			if err != nil {
				b.Fatal(err)
			}
			tCreate[i] += d
		}
		for _, c := range cls {
			if _, _, err := run(n, 16, func(j int) error {
				return c.do("POST", "/plugin/deleteEndpoint", fmt.Sprintf(`{"TenantName":"default","NetworkName":"net","EndpointID":"c%d"}`, base+j))
			}); err != nil {
				b.Fatal(err)
			}
		}
		done += n
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/tCreate[0].Seconds(), "off-creates/s")
	b.ReportMetric(float64(b.N)/tCreate[1].Seconds(), "on-creates/s")
	b.ReportMetric(tCreate[0].Seconds()/tCreate[1].Seconds(), "on/off")
}
