package certgen

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"testing"

	"github.com/contiv/netplugin/utils/tlsutil"
)

// TestRoles: issued certificates carry their role, verify against their CA
// and not against another one, and RequirePeerRole tells them apart.
func TestRoles(t *testing.T) {
	ca, err := NewCA("test CA", 0)
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewCA("foreign CA", 0)
	if err != nil {
		t.Fatal(err)
	}
	parse := func(p Pair) *x509.Certificate {
		c, err := tls.X509KeyPair(p.CertPEM, p.KeyPEM)
		if err != nil {
			t.Fatal(err)
		}
		x, err := x509.ParseCertificate(c.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	m, err := ca.Issue(Request{Role: tlsutil.RoleMaster, IPs: []net.IP{net.ParseIP("198.18.1.1")}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := ca.Issue(Request{Role: tlsutil.RoleAgent, Host: "h1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ca.Issue(Request{Role: tlsutil.RoleAgent, Host: "a/b"}); err == nil {
		t.Error("agent host with a slash accepted")
	}
	mc, ac := parse(m), parse(a)
	if r, _, err := tlsutil.CertRole(mc); err != nil || r != tlsutil.RoleMaster {
		t.Errorf("master role = %q, %v", r, err)
	}
	if r, h, err := tlsutil.CertRole(ac); err != nil || r != tlsutil.RoleAgent || h != "h1" {
		t.Errorf("agent role = %q %q, %v", r, h, err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	if _, err := mc.Verify(x509.VerifyOptions{Roots: pool, DNSName: "198.18.1.1"}); err != nil {
		t.Errorf("master certificate does not verify: %v", err)
	}
	foreignPool := x509.NewCertPool()
	foreignPool.AddCert(other.Cert)
	if _, err := ac.Verify(x509.VerifyOptions{Roots: foreignPool}); err == nil {
		t.Error("agent certificate verifies against a foreign CA")
	}
	check := func(role tlsutil.Role, host string, c *x509.Certificate) error {
		cfg := tlsutil.RequirePeerRole(&tls.Config{}, role, host)
		return cfg.VerifyConnection(tls.ConnectionState{PeerCertificates: []*x509.Certificate{c}})
	}
	if err := check(tlsutil.RoleMaster, "", mc); err != nil {
		t.Errorf("master refused as master: %v", err)
	}
	if err := check(tlsutil.RoleMaster, "", ac); err == nil {
		t.Error("agent accepted as master")
	}
	if err := check(tlsutil.RoleAgent, "", mc); err == nil {
		t.Error("master accepted as agent")
	}
	if err := check(tlsutil.RoleAgent, "h2", ac); err == nil {
		t.Error("agent h1 accepted as agent h2")
	}
	if err := check(tlsutil.RoleAgent, "h1", ac); err != nil {
		t.Errorf("agent h1 refused as h1: %v", err)
	}
	plain, err := ca.Issue(Request{CommonName: "netctl"})
	if err != nil {
		t.Fatal(err)
	}
	if err := check(tlsutil.RoleMaster, "", parse(plain)); err == nil {
		t.Error("a certificate without a role accepted as master")
	}
	dir := t.TempDir()
	f, err := WriteCA(dir, ca)
	if err != nil {
		t.Fatal(err)
	}
	back, err := LoadCA(f.Cert, f.Key)
	if err != nil || !back.Cert.Equal(ca.Cert) {
		t.Fatalf("LoadCA: %v", err)
	}
}
