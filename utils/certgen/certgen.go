// Package certgen makes the certificates of a Contiv cluster's ofnet RPC
// (docs/security.md, "Certificates and roles"): a CA, and certificates
// carrying the master or an agent role, for cmd/contiv-certs, the test bed
// and the quickstart.
package certgen

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/contiv/netplugin/utils/tlsutil"
)

// DefaultValidity is how long a certificate is valid unless told.
const DefaultValidity = 365 * 24 * time.Hour

// CA signs certificates.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

// Pair is a certificate and its key, PEM encoded.
type Pair struct {
	CertPEM, KeyPEM []byte
}

func newKey() (*ecdsa.PrivateKey, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	return k, nil
}

func serial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		return nil, fmt.Errorf("serial number: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil
}

// NewCA makes a self-signed CA named cn (validity 0: ten years).
func NewCA(cn string, validity time.Duration) (*CA, error) {
	if validity <= 0 {
		validity = 10 * DefaultValidity
	}
	k, err := newKey()
	if err != nil {
		return nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tpl := &x509.Certificate{SerialNumber: sn, Subject: pkix.Name{CommonName: cn},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(validity),
		IsCA: true, BasicConstraintsValid: true, MaxPathLenZero: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &k.PublicKey, k)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse CA certificate: %w", err)
	}
	return &CA{Cert: c, Key: k}, nil
}

// CertPEM is the CA certificate in PEM.
func (ca *CA) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw})
}

// KeyPEM is the CA key in PEM.
func (ca *CA) KeyPEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(ca.Key)
	if err != nil {
		return nil, fmt.Errorf("encode CA key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// LoadCA reads a CA written by WriteCA (or any PEM CA with a PKCS#8, EC or
// RSA key).
func LoadCA(certFile, keyFile string) (*CA, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("load CA %s with key %s: %w", certFile, keyFile, err)
	}
	c, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("parse CA %s: %w", certFile, err)
	}
	if !c.IsCA {
		return nil, fmt.Errorf("%s is not a CA certificate", certFile)
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("CA key %s cannot sign", keyFile)
	}
	return &CA{Cert: c, Key: signer}, nil
}

// Request describes one certificate.
type Request struct {
	// Role is the contiv role (tlsutil.RoleMaster or RoleAgent); "" makes
	// a certificate without a role (e.g. for netctl or an HTTPS server).
	Role tlsutil.Role
	// Host is the agent's host name (netplugin --host), for RoleAgent.
	Host string
	// CommonName defaults to "contiv-master" or "contiv-agent-<host>".
	CommonName string
	// IPs and DNSNames are the addresses the certificate serves on.
	IPs      []net.IP
	DNSNames []string
	// Validity 0: DefaultValidity.
	Validity time.Duration
}

// Issue signs a certificate for req, usable as server and client.
func (ca *CA) Issue(req Request) (Pair, error) {
	var uris []*url.URL
	cn := req.CommonName
	switch req.Role {
	case "":
	case tlsutil.RoleMaster, tlsutil.RoleAgent:
		u, err := tlsutil.RoleURI(req.Role, req.Host)
		if err != nil {
			return Pair{}, err
		}
		uris = append(uris, u)
		if cn == "" {
			cn = "contiv-master"
			if req.Role == tlsutil.RoleAgent {
				cn = "contiv-agent-" + req.Host
			}
		}
	default:
		return Pair{}, fmt.Errorf("unknown role %q", req.Role)
	}
	if cn == "" {
		return Pair{}, errors.New("a certificate without a role needs a common name")
	}
	if req.Validity <= 0 {
		req.Validity = DefaultValidity
	}
	k, err := newKey()
	if err != nil {
		return Pair{}, err
	}
	sn, err := serial()
	if err != nil {
		return Pair{}, err
	}
	now := time.Now()
	tpl := &x509.Certificate{SerialNumber: sn, Subject: pkix.Name{CommonName: cn},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(req.Validity),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: req.IPs, DNSNames: req.DNSNames, URIs: uris}
	der, err := x509.CreateCertificate(rand.Reader, tpl, ca.Cert, &k.PublicKey, ca.Key)
	if err != nil {
		return Pair{}, fmt.Errorf("sign certificate %q: %w", cn, err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return Pair{}, fmt.Errorf("encode key of %q: %w", cn, err)
	}
	return Pair{CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})}, nil
}

// Files are the paths WriteCA and WritePair wrote.
type Files struct {
	Cert, Key string
}

// WriteCA writes dir/ca.pem (0644) and dir/ca-key.pem (0600).
func WriteCA(dir string, ca *CA) (Files, error) {
	kp, err := ca.KeyPEM()
	if err != nil {
		return Files{}, err
	}
	return write(dir, "ca", Pair{CertPEM: ca.CertPEM(), KeyPEM: kp})
}

// WritePair writes dir/<name>.pem (0644) and dir/<name>-key.pem (0600).
func WritePair(dir, name string, p Pair) (Files, error) {
	return write(dir, name, p)
}

func write(dir, name string, p Pair) (Files, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Files{}, fmt.Errorf("create %s: %w", dir, err)
	}
	f := Files{Cert: filepath.Join(dir, name+".pem"), Key: filepath.Join(dir, name+"-key.pem")}
	if err := os.WriteFile(f.Key, p.KeyPEM, 0o600); err != nil {
		return Files{}, fmt.Errorf("write %s: %w", f.Key, err)
	}
	if err := os.WriteFile(f.Cert, p.CertPEM, 0o644); err != nil {
		return Files{}, fmt.Errorf("write %s: %w", f.Cert, err)
	}
	return f, nil
}

// Cluster is a CA with a master certificate and agent certificates, as
// files (WriteCluster).
type Cluster struct {
	CA     *CA
	CAFile string
	Master Files
	Agents map[string]Files // by host name
}

// WriteCluster writes into dir a new CA, a master certificate for
// masterIPs and, for every host of agents, an agent certificate for its
// addresses.
func WriteCluster(dir string, masterIPs []net.IP, agents map[string][]net.IP) (*Cluster, error) {
	ca, err := NewCA("contiv CA", 0)
	if err != nil {
		return nil, err
	}
	caf, err := WriteCA(dir, ca)
	if err != nil {
		return nil, err
	}
	c := &Cluster{CA: ca, CAFile: caf.Cert, Agents: map[string]Files{}}
	p, err := ca.Issue(Request{Role: tlsutil.RoleMaster, IPs: masterIPs})
	if err != nil {
		return nil, err
	}
	if c.Master, err = WritePair(dir, "master", p); err != nil {
		return nil, err
	}
	for host, ips := range agents {
		if err := c.AddAgent(dir, host, ips); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// AddAgent issues and writes the agent certificate of host.
func (c *Cluster) AddAgent(dir, host string, ips []net.IP) error {
	p, err := c.CA.Issue(Request{Role: tlsutil.RoleAgent, Host: host, IPs: ips})
	if err != nil {
		return err
	}
	f, err := WritePair(dir, "agent-"+host, p)
	if err != nil {
		return err
	}
	c.Agents[host] = f
	return nil
}

// MasterArgs are netmaster's --rpc-tls-* flags for c.
func (c *Cluster) MasterArgs() []string {
	return []string{"--rpc-tls-cert-file", c.Master.Cert, "--rpc-tls-key-file", c.Master.Key, "--rpc-tls-ca-file", c.CAFile}
}

// AgentArgs are netplugin's --rpc-tls-* flags for host.
func (c *Cluster) AgentArgs(host string) []string {
	f := c.Agents[host]
	return []string{"--rpc-tls-cert-file", f.Cert, "--rpc-tls-key-file", f.Key, "--rpc-tls-ca-file", c.CAFile}
}
