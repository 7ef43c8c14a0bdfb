package ops

import (
	"crypto/tls"
	"crypto/x509"
	"testing"

	"github.com/contiv/netplugin/test/testbed"
)

// pki is the testbed's test CA and certificate for one IP, named for the
// roles these tests give it: the same certificate (server and client use)
// serves netmaster and identifies the client.
type pki struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
	pool                                             *x509.CertPool
	client                                           tls.Certificate
}

func newPKI(t *testing.T, ip string) *pki {
	t.Helper()
	tp := testbed.NewPKI(t, ip)
	pair, err := tls.LoadX509KeyPair(tp.Cert, tp.Key)
	if err != nil {
		t.Fatal(err)
	}
	return &pki{CA: tp.CA, ServerCert: tp.Cert, ServerKey: tp.Key, ClientCert: tp.Cert, ClientKey: tp.Key,
		pool: tp.Pool, client: pair}
}

// clientTLS trusts the CA and, with cert, presents the client certificate.
func (p *pki) clientTLS(cert bool) *tls.Config {
	c := &tls.Config{RootCAs: p.pool, MinVersion: tls.VersionTLS12}
	if cert {
		c.Certificates = []tls.Certificate{p.client}
	}
	return c
}
