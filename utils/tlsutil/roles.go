package tlsutil

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Role is what a certificate may do on the ofnet RPC (docs/security.md,
// "Certificates and roles"): the master role serves the agents and calls
// them; the agent role serves the masters and calls them. A certificate
// carries its role as a URI SAN: urn:contiv:master, or
// urn:contiv:agent:<host> with the host name netplugin runs with (--host).
type Role string

// The roles.
const (
	RoleMaster Role = "master"
	RoleAgent  Role = "agent"
)

// URI SANs of the roles.
const (
	MasterURI      = "urn:contiv:master"
	AgentURIPrefix = "urn:contiv:agent:"
)

// RoleURI is the URI SAN of role (host: the agent's host name; ignored for
// the master).
func RoleURI(role Role, host string) (*url.URL, error) {
	s := MasterURI
	if role == RoleAgent {
		if host == "" || strings.ContainsAny(host, "/: \t\n") {
			return nil, fmt.Errorf("agent certificate: invalid host name %q", host)
		}
		s = AgentURIPrefix + host
	} else if role != RoleMaster {
		return nil, fmt.Errorf("unknown role %q", role)
	}
	return url.Parse(s)
}

// ErrNoRole is returned by CertRole for a certificate without exactly one
// contiv role.
var ErrNoRole = errors.New("tlsutil: certificate carries no contiv role")

// CertRole reads the role of c from its URI SANs; host is the agent's
// host name. A certificate with no role, or with more than one, has none.
func CertRole(c *x509.Certificate) (role Role, host string, err error) {
	n := 0
	for _, u := range c.URIs {
		s := u.String()
		switch {
		case s == MasterURI:
			role, host = RoleMaster, ""
			n++
		case strings.HasPrefix(s, AgentURIPrefix) && len(s) > len(AgentURIPrefix):
			role, host = RoleAgent, strings.TrimPrefix(s, AgentURIPrefix)
			n++
		}
	}
	if n != 1 {
		return "", "", fmt.Errorf("certificate %q: %w (want one of %s, %s<host>)", c.Subject.CommonName, ErrNoRole, MasterURI, AgentURIPrefix)
	}
	return role, host, nil
}

// RequirePeerRole makes cfg (server or client side) refuse a peer whose
// verified certificate does not carry role; with host set, an agent peer
// must also carry that host name. It returns cfg.
func RequirePeerRole(cfg *tls.Config, role Role, host string) *tls.Config {
	prev := cfg.VerifyConnection
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if prev != nil {
			if err := prev(cs); err != nil {
				return err
			}
		}
		if len(cs.PeerCertificates) == 0 {
			return fmt.Errorf("tlsutil: the peer presented no certificate; want role %s", role)
		}
		got, h, err := CertRole(cs.PeerCertificates[0])
		if err != nil {
			return err
		}
		if got != role {
			return fmt.Errorf("tlsutil: the peer's certificate has role %s; want %s", got, role)
		}
		if host != "" && role == RoleAgent && h != host {
			return fmt.Errorf("tlsutil: the peer's certificate is agent %q; want %q", h, host)
		}
		return nil
	}
	return cfg
}

// OwnRole reads the role of the first certificate of cfg (the one it
// presents).
func OwnRole(cfg *tls.Config) (Role, string, error) {
	if len(cfg.Certificates) == 0 || len(cfg.Certificates[0].Certificate) == 0 {
		return "", "", errors.New("tlsutil: no certificate configured")
	}
	leaf := cfg.Certificates[0].Leaf
	if leaf == nil {
		var err error
		if leaf, err = x509.ParseCertificate(cfg.Certificates[0].Certificate[0]); err != nil {
			return "", "", fmt.Errorf("parse own certificate: %w", err)
		}
	}
	return CertRole(leaf)
}
