package ops

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// pki is a test CA with a server certificate for one IP and a client
// certificate, written as PEM files.
type pki struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
	pool                                             *x509.CertPool
	client                                           tls.Certificate
}

func newPKI(t *testing.T, ip string) *pki {
	t.Helper()
	dir := t.TempDir()
	p := &pki{}
	caKey := genKey(t)
	caTpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "contiv test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTpl, caTpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	p.CA = writePEM(t, dir, "ca.pem", "CERTIFICATE", caDER)
	p.pool = x509.NewCertPool()
	p.pool.AddCert(caCert)
	leaf := func(name string, serial int64, usage x509.ExtKeyUsage, ips []net.IP) (string, string, tls.Certificate) {
		key := genKey(t)
		tpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: ips}
		der, err := x509.CreateCertificate(rand.Reader, tpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kb, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		c := writePEM(t, dir, name+".pem", "CERTIFICATE", der)
		k := writePEM(t, dir, name+"-key.pem", "EC PRIVATE KEY", kb)
		pair, err := tls.LoadX509KeyPair(c, k)
		if err != nil {
			t.Fatal(err)
		}
		return c, k, pair
	}
	p.ServerCert, p.ServerKey, _ = leaf("server", 2, x509.ExtKeyUsageServerAuth, []net.IP{net.ParseIP(ip)})
	p.ClientCert, p.ClientKey, p.client = leaf("client", 3, x509.ExtKeyUsageClientAuth, nil)
	return p
}

// clientTLS trusts the CA and, with cert, presents the client certificate.
func (p *pki) clientTLS(cert bool) *tls.Config {
	c := &tls.Config{RootCAs: p.pool, MinVersion: tls.VersionTLS12}
	if cert {
		c.Certificates = []tls.Certificate{p.client}
	}
	return c
}

func genKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func writePEM(t *testing.T, dir, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
