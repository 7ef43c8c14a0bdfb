package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/test/testbed"
)

// TestOfnetRPCOverTLS: the testbed runs the secure default, the ofnet
// JSON-RPC between the master and the agents over mutual TLS with role
// certificates: endpoints still reach the other host (the remote endpoint
// was relayed over it), and a client without a certificate is refused by
// the master's RPC port (docs/security.md, "Listeners").
func TestOfnetRPCOverTLS(t *testing.T) {
	tb := testbed.New(t, testbed.Config{Hosts: 2})
	netctl(t, tb, "net", "create", "--subnet", "198.19.11.0/24", "--gateway", "198.19.11.254", "rt1")
	a := attachNew(t, tb.Hosts[0], "ra", "default", "rt1", "")
	b := attachNew(t, tb.Hosts[1], "rb", "default", "rt1", "")
	if err := pingOK(a, b, 20*time.Second); err != nil {
		t.Fatal(err)
	}

	// The master's RPC port speaks TLS and wants a client certificate.
	dial := tb.HTTPClient().Transport.(*http.Transport).DialContext
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := dial(ctx, "tcp", testbed.MasterIP(0)+":9001")
	if err != nil {
		t.Fatalf("dial the ofnet master: %v", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	roots := x509.NewCertPool()
	roots.AddCert(tb.PKI.CA.Cert)
	tc := tls.Client(conn, &tls.Config{RootCAs: roots, ServerName: testbed.MasterIP(0)})
	err = tc.Handshake()
	if err == nil {
		// TLS 1.3: the refusal of the missing certificate comes with the
		// first read.
		_, _ = tc.Write([]byte(`{"method":"OfnetMaster.RegisterNode","params":[{}],"id":1}`))
		_, err = tc.Read(make([]byte, 64))
	}
	if err == nil {
		t.Fatal("the ofnet master answered a client without a certificate")
	}
	t.Logf("client without a certificate: %v", err)
}

// TestInsecureRPCFlag is the test of --insecure-rpc itself: both daemons
// start, say loudly that the RPC is unprotected, and the cluster works.
func TestInsecureRPCFlag(t *testing.T) {
	tb := testbed.New(t, testbed.Config{Hosts: 2, InsecureRPC: true})
	netctl(t, tb, "net", "create", "--subnet", "198.19.12.0/24", "--gateway", "198.19.12.254", "ri1")
	a := attachNew(t, tb.Hosts[0], "ia", "default", "ri1", "")
	b := attachNew(t, tb.Hosts[1], "ib", "default", "ri1", "")
	if err := pingOK(a, b, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	for name, logs := range map[string]string{"netmaster": tb.Masters[0].Logs(), "netplugin": tb.Hosts[0].Logs()} {
		if !strings.Contains(logs, "INSECURE: --insecure-rpc") {
			t.Errorf("%s did not warn about --insecure-rpc", name)
		}
	}
}
