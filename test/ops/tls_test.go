package ops

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/netplugin/masterclient"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/dial"
)

const (
	adminToken  = "admin-token-5a1c7e0f2b9d"
	readerToken = "reader-token-3e8b61d04c7a"
)

// storeSnapshot lists every key and version of the netmaster's store.
func storeSnapshot(t *testing.T, st objdb.Store) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kvs, err := st.List(ctx, "")
	if err != nil {
		t.Fatalf("list the store: %v", err)
	}
	var b strings.Builder
	for _, kv := range kvs {
		fmt.Fprintf(&b, "%s@%d=%s\n", kv.Key, kv.Version, kv.Value)
	}
	return b.String()
}

// TestTLSAndTokens: netmaster on HTTPS with a token file; netctl with the
// CA works and without it fails clearly; a read-only token lists but its
// POST gets 403; a wrong token gets 401; refused requests leave the store
// unchanged; netplugin's /plugin client speaks HTTPS with a token
// (docs/operations.md, "TLS and tokens").
func TestTLSAndTokens(t *testing.T) {
	b := bins(t)
	ip := loopbackIP()
	p := newPKI(t, ip)
	tokFile := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokFile, []byte("# test tokens\n"+adminToken+",ops,admin\n"+readerToken+",viewer,read-only\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	nm := startNetmasterAt(t, b.Netmaster, ip, "https", p.clientTLS(false),
		"--tls-cert-file", p.ServerCert, "--tls-key-file", p.ServerKey, "--auth-token-file", tokFile)
	url := "https://" + nm.Addr
	netctl := func(args ...string) (string, string, int) {
		t.Helper()
		return run(t, b.Netctl, append([]string{"--netmaster", url}, args...)...)
	}

	// With the CA and the admin token: create and list.
	if out, errOut, code := netctl("--tls-ca-file", p.CA, "--token", adminToken, "net", "create", "-s", "198.18.41.0/24", "tn1"); code != 0 {
		t.Fatalf("netctl net create over HTTPS: exit %d\n%s%s", code, out, errOut)
	}
	// The same through the environment variables.
	t.Setenv("NETCTL_TLS_CA_FILE", p.CA)
	t.Setenv("NETCTL_TOKEN", readerToken)
	out, errOut, code := netctl("net", "ls")
	if code != 0 || !strings.Contains(out, "tn1") {
		t.Fatalf("read-only netctl net ls: exit %d\n%s%s", code, out, errOut)
	}
	os.Unsetenv("NETCTL_TLS_CA_FILE")
	os.Unsetenv("NETCTL_TOKEN")

	// Without the CA: a clear error naming the certificate.
	out, errOut, code = netctl("--token", adminToken, "net", "ls")
	if code == 0 || !strings.Contains(errOut, "certificate") || !strings.Contains(errOut, "--tls-ca-file") {
		t.Fatalf("netctl without the CA: exit %d, want a certificate error naming --tls-ca-file\n%s%s", code, out, errOut)
	}
	// The original's --insecure flow still reaches the HTTPS netmaster.
	if out, errOut, code := netctl("--insecure", "--token", adminToken, "net", "ls"); code != 0 || !strings.Contains(out, "tn1") {
		t.Fatalf("netctl --insecure: exit %d\n%s%s", code, out, errOut)
	}
	// netctl version: client and server, over HTTPS with the CA, no token.
	if out, errOut, code := netctl("--tls-ca-file", p.CA, "version"); code != 0 || !strings.Contains(out, "Server Version:") {
		t.Fatalf("netctl version over HTTPS: exit %d\n%s%s", code, out, errOut)
	}

	st, err := dial.Open(context.Background(), dial.Config{EtcdEndpoints: []string{nm.EtcdURL}})
	if err != nil {
		t.Fatalf("open the store: %v", err)
	}
	defer st.Close()
	before := storeSnapshot(t, st)

	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: p.clientTLS(false), DisableKeepAlives: true}}
	do := func(method, path, auth, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		return resp.StatusCode, readAll(t, resp.Body)
	}
	netBody := `{"tenantName":"default","networkName":"tn2","subnet":"198.18.42.0/24","encap":"vxlan"}`
	for _, c := range []struct {
		name, method, path, auth, body string
		code                           int
	}{
		{"read-only lists", "GET", "/api/v1/networks/", "Bearer " + readerToken, "", 200},
		{"read-only POST", "POST", "/api/v1/networks/default:tn2/", "Bearer " + readerToken, netBody, 403},
		{"read-only DELETE", "DELETE", "/api/v1/networks/default:tn1/", "Bearer " + readerToken, "", 403},
		{"wrong token", "GET", "/api/v1/networks/", "Bearer wrong-token-00000000000", "", 401},
		{"wrong token POST", "POST", "/api/v1/networks/default:tn2/", "Bearer wrong-token-00000000000", netBody, 401},
		{"no token", "POST", "/api/v1/networks/default:tn2/", "", netBody, 401},
		{"malformed", "POST", "/api/v1/networks/default:tn2/", "Basic YWRtaW46YWRtaW4=", netBody, 401},
		{"no token on /metrics", "GET", "/metrics", "", "", 401},
		{"health needs none", "GET", "/readyz", "", "", 200},
		{"version needs none", "GET", "/version", "", "", 200},
	} {
		if code, body := do(c.method, c.path, c.auth, c.body); code != c.code {
			t.Errorf("%s: %s %s = %d %q, want %d", c.name, c.method, c.path, code, body, c.code)
		}
	}
	if out, errOut, code := netctl("--tls-ca-file", p.CA, "--token", readerToken, "net", "create", "-s", "198.18.42.0/24", "tn2"); code == 0 || !strings.Contains(out+errOut, "Access denied") {
		t.Errorf("read-only netctl net create: exit %d, want a 403 refusal\n%s%s", code, out, errOut)
	}
	if out, errOut, code := netctl("--tls-ca-file", p.CA, "--token", "wrong-token-00000000000", "net", "ls"); code == 0 || !strings.Contains(out+errOut, "401 Unauthorized") {
		t.Errorf("netctl with a wrong token: exit %d, want a 401 refusal\n%s%s", code, out, errOut)
	}
	if after := storeSnapshot(t, st); after != before {
		t.Fatalf("refused requests changed the store:\nbefore:\n%s\nafter:\n%s", before, after)
	}

	// netplugin's /plugin client: HTTPS with its token; refused without.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	mcTLS := &tls.Config{RootCAs: p.pool, MinVersion: tls.VersionTLS12}
	var resp masterclient.AllocAddressResponse
	req := masterclient.AllocAddressRequest{NetworkID: "tn1.default"}
	err = masterclient.New(st, masterclient.WithTLS(mcTLS), masterclient.WithRetry(1, 0)).Post(ctx, "allocAddress", req, &resp)
	var se *masterclient.StatusError
	if !errors.As(err, &se) || se.StatusCode != 401 {
		t.Fatalf("/plugin/allocAddress without a token: %v, want 401", err)
	}
	if err := masterclient.New(st, masterclient.WithTLS(mcTLS), masterclient.WithToken(adminToken)).Post(ctx, "allocAddress", req, &resp); err != nil || !strings.HasPrefix(resp.IPv4Address, "198.18.41.") {
		t.Fatalf("/plugin/allocAddress over HTTPS with a token: %+v %v", resp, err)
	}
}

// TestTLSClientCertificates: with --tls-client-ca-file netmaster refuses
// a client without a certificate and serves one with.
func TestTLSClientCertificates(t *testing.T) {
	b := bins(t)
	ip := loopbackIP()
	p := newPKI(t, ip)
	nm := startNetmasterAt(t, b.Netmaster, ip, "https", p.clientTLS(true),
		"--tls-cert-file", p.ServerCert, "--tls-key-file", p.ServerKey, "--tls-client-ca-file", p.CA)
	url := "https://" + nm.Addr
	if out, errOut, code := run(t, b.Netctl, "--netmaster", url, "--tls-ca-file", p.CA, "net", "ls"); code == 0 {
		t.Fatalf("netctl without a client certificate succeeded:\n%s%s", out, errOut)
	}
	if out, errOut, code := run(t, b.Netctl, "--netmaster", url, "--tls-ca-file", p.CA,
		"--tls-cert-file", p.ClientCert, "--tls-key-file", p.ClientKey, "tenant", "ls"); code != 0 || !strings.Contains(out, "default") {
		t.Fatalf("netctl with a client certificate: exit %d\n%s%s", code, out, errOut)
	}
}
