package objdbtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// PKI is a store CA with a server certificate, a client certificate, and
// a client certificate of a foreign CA (for refusal tests), as PEM files
// readable by their owner only.
type PKI struct {
	Dir                   string
	CA                    string // the store CA's certificate
	ServerCert, ServerKey string // server (and client) use, for the IPs given
	ClientCert, ClientKey string // client use, CN "contiv"
	ForeignCert           string // client certificate signed by another CA
	ForeignKey            string
	ForeignCA             string
}

// WritePKI writes a PKI into dir. The server certificate covers ips and
// names (127.0.0.1 and localhost are always added: tests reach stores
// through loopback proxies). The server certificate also allows client
// use, as etcd's own gateway presents it to the server.
func WritePKI(dir string, ips []string, names []string) (*PKI, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pki dir: %w", err)
	}
	p := &PKI{Dir: dir}
	ca, caKey, err := writeCA(dir, "ca", "contiv store CA")
	if err != nil {
		return nil, err
	}
	p.CA = filepath.Join(dir, "ca.pem")
	addrs := []net.IP{net.IPv4(127, 0, 0, 1)}
	for _, ip := range ips {
		a := net.ParseIP(ip)
		if a == nil {
			return nil, fmt.Errorf("pki: bad IP %q", ip)
		}
		addrs = append(addrs, a)
	}
	both := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	if p.ServerCert, p.ServerKey, err = writeLeaf(dir, "server", "contiv store", ca, caKey, both, addrs, append([]string{"localhost"}, names...)); err != nil {
		return nil, err
	}
	client := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	if p.ClientCert, p.ClientKey, err = writeLeaf(dir, "client", "contiv", ca, caKey, client, nil, nil); err != nil {
		return nil, err
	}
	fca, fcaKey, err := writeCA(dir, "foreign-ca", "foreign CA")
	if err != nil {
		return nil, err
	}
	p.ForeignCA = filepath.Join(dir, "foreign-ca.pem")
	if p.ForeignCert, p.ForeignKey, err = writeLeaf(dir, "foreign", "contiv", fca, fcaKey, client, nil, nil); err != nil {
		return nil, err
	}
	return p, nil
}

// NewPKI is WritePKI into a temporary folder for loopback stores.
func NewPKI(t testing.TB, ips ...string) *PKI {
	t.Helper()
	p, err := WritePKI(t.TempDir(), ips, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// nextSerial is a random 62-bit serial number.
func nextSerial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}

func writePEM(path, typ string, der []byte) error {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	return nil
}

func writeCA(dir, name, cn string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: %w", err)
	}
	tpl := &x509.Certificate{SerialNumber: nextSerial(), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(365 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &k.PublicKey, k)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: %w", err)
	}
	return cert, k, writePEM(filepath.Join(dir, name+".pem"), "CERTIFICATE", der)
}

func writeLeaf(dir, name, cn string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, eku []x509.ExtKeyUsage,
	ips []net.IP, names []string) (certPath, keyPath string, err error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", fmt.Errorf("pki: %w", err)
	}
	tpl := &x509.Certificate{SerialNumber: nextSerial(), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(365 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: eku, IPAddresses: ips, DNSNames: names}
	der, err := x509.CreateCertificate(rand.Reader, tpl, ca, &k.PublicKey, caKey)
	if err != nil {
		return "", "", fmt.Errorf("pki: %w", err)
	}
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return "", "", fmt.Errorf("pki: %w", err)
	}
	certPath, keyPath = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	if err := writePEM(certPath, "CERTIFICATE", der); err != nil {
		return "", "", err
	}
	return certPath, keyPath, writePEM(keyPath, "EC PRIVATE KEY", kb)
}
