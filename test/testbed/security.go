package testbed

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/contiv/netplugin/utils/certgen"
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
