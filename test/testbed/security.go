package testbed

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/contiv/netplugin/utils/certgen"
	"github.com/contiv/netplugin/utils/tlsutil"
)

// The cluster's certificates (docs/security.md, "Certificates and
// roles"): every testbed makes its own CA, one master certificate for the
// addresses of every netmaster, and one agent certificate per host (its
// --host name, control and VTEP addresses), and runs every daemon with
// the ofnet RPC's mutual TLS, the secure default. Config.InsecureRPC runs
// them with --insecure-rpc instead (for the test of that flag only).

// newPKI writes the testbed's CA and master certificate under Dir/pki.
func (tb *Testbed) newPKI() error {
	var ips []net.IP
	for i := 0; i < 3; i++ {
		ips = append(ips, net.ParseIP(MasterIP(i)), net.ParseIP(MasterUnderlayIP(i)))
	}
	c, err := certgen.WriteCluster(tb.PKIDir(), ips, nil)
	if err != nil {
		return fmt.Errorf("testbed PKI: %w", err)
	}
	tb.PKI = c
	return nil
}

// PKIDir holds the testbed's certificates.
func (tb *Testbed) PKIDir() string { return filepath.Join(tb.Dir, "pki") }

// masterRPCArgs are netmaster's ofnet RPC flags.
func (tb *Testbed) masterRPCArgs() []string {
	if tb.Config.InsecureRPC {
		return []string{"--insecure-rpc"}
	}
	return tb.PKI.MasterArgs()
}

// agentRPCArgs are host h's ofnet RPC flags; its certificate is issued on
// first use.
func (tb *Testbed) agentRPCArgs(h *Host) ([]string, error) {
	if tb.Config.InsecureRPC {
		return []string{"--insecure-rpc"}, nil
	}
	tb.pkiMu.Lock()
	defer tb.pkiMu.Unlock()
	// The host's files live in its own folder (a managed plugin sees only
	// that one), the CA's copy included.
	dir := filepath.Join(h.Dir, "pki")
	ca := filepath.Join(dir, "ca.pem")
	if _, ok := tb.PKI.Agents[h.Name]; !ok {
		if err := tb.PKI.AddAgent(dir, h.Name, []net.IP{net.ParseIP(h.IP), net.ParseIP(h.CtrlIP)}); err != nil {
			return nil, fmt.Errorf("agent certificate of %s: %w", h.Name, err)
		}
		if err := os.WriteFile(ca, tb.PKI.CA.CertPEM(), 0o644); err != nil {
			return nil, fmt.Errorf("CA copy of %s: %w", h.Name, err)
		}
	}
	f := tb.PKI.Agents[h.Name]
	return []string{"--rpc-tls-cert-file", f.Cert, "--rpc-tls-key-file", f.Key, "--rpc-tls-ca-file", ca}, nil
}

// AgentCert is host h's agent certificate and key (issued on first use).
func (tb *Testbed) AgentCert(h *Host) (certgen.Files, error) {
	if _, err := tb.agentRPCArgs(h); err != nil {
		return certgen.Files{}, err
	}
	tb.pkiMu.Lock()
	defer tb.pkiMu.Unlock()
	return tb.PKI.Agents[h.Name], nil
}

// InspectURL is the base URL of the host's inspect server as seen from
// inside the host (its default address, loopback); use it with
// Host.HTTPClient.
func (h *Host) InspectURL() string { return "http://127.0.0.1:9090" }

// Outsider is a namespace on the underlay and the management network that
// is not part of the cluster: a hostile neighbour (test/e2e
// TestHostileNeighbour).
type Outsider struct {
	NS     string
	IP     string // on the underlay
	MgmtIP string // on the management network
}

// AddOutsider plugs a new namespace into the underlay (198.18.0.<200+n>)
// and the management network (198.18.1.<200+n>); it is removed with the
// testbed.
func (tb *Testbed) AddOutsider(t testing.TB) *Outsider {
	t.Helper()
	n := int(tb.outsiders.Add(1))
	if n > 50 {
		t.Fatal("testbed: too many outsiders")
	}
	o := &Outsider{NS: fmt.Sprintf("%so%d", tb.Prefix, n), IP: fmt.Sprintf("198.18.0.%d", 200+n), MgmtIP: fmt.Sprintf("198.18.1.%d", 200+n)}
	if err := addNetNS(o.NS); err != nil {
		t.Fatalf("testbed: outsider: %v", err)
	}
	if err := tb.plugMgmt(o.NS, fmt.Sprintf("o%dm", n), o.MgmtIP); err != nil {
		t.Fatalf("testbed: outsider management: %v", err)
	}
	if err := tb.plugUnderlay(o.NS, fmt.Sprintf("o%du", n), o.IP); err != nil {
		t.Fatalf("testbed: outsider underlay: %v", err)
	}
	return o
}

// DialContext dials from inside the outsider's namespace.
func (o *Outsider) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return dialIn(o.NS)(ctx, network, addr)
}

// HTTPClient returns a client whose connections start in the outsider's
// namespace.
func (o *Outsider) HTTPClient() *http.Client { return nsHTTPClient(o.NS) }

// Exec runs a command inside the outsider's namespace.
func (o *Outsider) Exec(name string, args ...string) (string, error) {
	return nsExec(o.NS, name, args...)
}

// RESTCreds are the files and tokens of netmaster's REST API when
// Config.SecureREST runs it the way docs/security.md ("Deploying with TLS
// everywhere", step 4) tells production to: HTTPS with a certificate of
// the testbed CA, client certificates of that CA required
// (--tls-client-ca-file), and bearer tokens (--auth-token-file) with an
// admin and a read-only token.
type RESTCreds struct {
	CA                    string // the testbed CA (tb.PKI.CAFile)
	ServerCert, ServerKey string // netmaster's HTTPS certificate (no role; every master address)
	ClientCert, ClientKey string // netctl's and the test process's client certificate (no role)
	TokenFile             string // netmaster's --auth-token-file
	AdminToken, ReadToken string
	AdminTokenFile        string // the admin token alone (netctl --token-file, netplugin --netmaster-token-file)
	ReadTokenFile         string // the read-only token alone
	dir                   string
}

// setupREST writes the REST credentials under Dir/rest when
// Config.SecureREST.
func (tb *Testbed) setupREST() error {
	if !tb.Config.SecureREST {
		return nil
	}
	dir := filepath.Join(tb.Dir, "rest")
	var ips []net.IP
	for i := 0; i < 3; i++ {
		ips = append(ips, net.ParseIP(MasterIP(i)))
	}
	srv, err := tb.PKI.CA.Issue(certgen.Request{CommonName: "netmaster-rest", IPs: ips})
	if err != nil {
		return fmt.Errorf("REST server certificate: %w", err)
	}
	sf, err := certgen.WritePair(dir, "rest-server", srv)
	if err != nil {
		return fmt.Errorf("REST server certificate: %w", err)
	}
	cli, err := tb.PKI.CA.Issue(certgen.Request{CommonName: "netctl"})
	if err != nil {
		return fmt.Errorf("REST client certificate: %w", err)
	}
	cf, err := certgen.WritePair(dir, "rest-client", cli)
	if err != nil {
		return fmt.Errorf("REST client certificate: %w", err)
	}
	r := &RESTCreds{CA: tb.PKI.CAFile, ServerCert: sf.Cert, ServerKey: sf.Key, ClientCert: cf.Cert, ClientKey: cf.Key,
		AdminToken: "adm-" + randomHex(16), ReadToken: "ro-" + randomHex(16), dir: dir}
	write := func(name, content string) (string, error) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			return "", fmt.Errorf("REST secrets: %w", err)
		}
		return p, nil
	}
	if r.TokenFile, err = write("tokens", fmt.Sprintf("%s,testbed-admin,admin\n%s,testbed-reader,read-only\n", r.AdminToken, r.ReadToken)); err != nil {
		return err
	}
	if r.AdminTokenFile, err = write("admin-token", r.AdminToken+"\n"); err != nil {
		return err
	}
	if r.ReadTokenFile, err = write("read-token", r.ReadToken+"\n"); err != nil {
		return err
	}
	tb.REST = r
	return nil
}

// restScheme is the scheme of netmaster's REST API.
func (tb *Testbed) restScheme() string {
	if tb.REST != nil {
		return "https"
	}
	return "http"
}

// masterRESTArgs are netmaster's REST TLS and token flags.
func (tb *Testbed) masterRESTArgs() []string {
	r := tb.REST
	if r == nil {
		return nil
	}
	return []string{"--tls-cert-file", r.ServerCert, "--tls-key-file", r.ServerKey,
		"--tls-client-ca-file", r.CA, "--tls-ca-file", r.CA, "--auth-token-file", r.TokenFile}
}

// netpluginRESTArgs are host h's flags for reaching netmaster's REST API:
// the testbed CA, its agent certificate as client certificate, and the
// admin token (netplugin creates networks and endpoints through the API).
func (tb *Testbed) netpluginRESTArgs(h *Host) []string {
	r := tb.REST
	if r == nil {
		return nil
	}
	f, err := tb.AgentCert(h)
	if err != nil {
		return []string{"--netmaster-cert-file", "/nonexistent: " + err.Error()}
	}
	return []string{"--netmaster-ca-file", r.CA, "--netmaster-cert-file", f.Cert, "--netmaster-key-file", f.Key,
		"--netmaster-token-file", r.AdminTokenFile}
}

// netctlArgs are netctl's global flags for the REST API's TLS and token.
func (tb *Testbed) netctlArgs() []string {
	r := tb.REST
	if r == nil {
		return nil
	}
	return []string{"--tls-ca-file", r.CA, "--tls-cert-file", r.ClientCert, "--tls-key-file", r.ClientKey,
		"--token-file", r.AdminTokenFile}
}

// RESTClientTLS is the TLS configuration of a legitimate REST client
// (the testbed CA, the client certificate), nil without SecureREST.
func (tb *Testbed) RESTClientTLS() (*tls.Config, error) {
	if tb.REST == nil {
		return nil, nil
	}
	return tlsutil.ClientConfig(tb.REST.CA, tb.REST.ClientCert, tb.REST.ClientKey)
}

// bearer adds the admin token to every request that carries no
// Authorization header of its own.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("Authorization") != "" || r.Header.Get("X-Auth-Token") != "" {
		return b.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// CloseIdleConnections passes on to the transport.
func (b bearer) CloseIdleConnections() {
	if c, ok := b.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// restHTTPClient is an HTTP client opened in namespace ns that, with
// SecureREST, speaks TLS with the client certificate and sends the admin
// token.
func (tb *Testbed) restHTTPClient(ns string) (*http.Client, error) {
	hc := nsHTTPClient(ns)
	if tb.REST == nil {
		return hc, nil
	}
	cfg, err := tb.RESTClientTLS()
	if err != nil {
		return nil, fmt.Errorf("REST client TLS: %w", err)
	}
	tr := hc.Transport.(*http.Transport)
	tr.TLSClientConfig = cfg
	hc.Transport = bearer{token: tb.REST.AdminToken, next: tr}
	return hc, nil
}

// failing is a transport whose every request fails with err.
type failing struct{ err error }

func (f failing) RoundTrip(*http.Request) (*http.Response, error) { return nil, f.err }
