package e2e

import (
	"context"
	"crypto/tls"
	"net/http"
	"testing"
	"time"

	"github.com/contiv/netplugin/test/testbed"
)

// TestOfnetRPCOverTLS: with --rpc-tls-* on netmaster and the netplugins,
// the ofnet JSON-RPC between the master and the agents is mutual TLS:
// endpoints still reach the other host (the remote endpoint was relayed
// over it), and a client without a certificate is refused by the master's
// RPC port (docs/operations.md, "TLS and tokens").
func TestOfnetRPCOverTLS(t *testing.T) {
	ips := []string{testbed.MasterIP(0), testbed.MasterUnderlayIP(0)}
	for i := 0; i < 2; i++ {
		ips = append(ips, testbed.HostIP(i), testbed.HostCtrlIP(i))
	}
	p := testbed.NewPKI(t, ips...)
	args := []string{"--rpc-tls-cert-file", p.Cert, "--rpc-tls-key-file", p.Key, "--rpc-tls-ca-file", p.CA}
	tb := testbed.New(t, testbed.Config{Hosts: 2, NetmasterArgs: args, NetpluginArgs: args})
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
	tc := tls.Client(conn, &tls.Config{RootCAs: p.Pool, ServerName: testbed.MasterIP(0)})
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
