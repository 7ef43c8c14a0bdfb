package embedetcd

import (
	"fmt"
	"net"
	"net/url"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/contiv/netplugin/objdb"
)

// checkSecurity refuses settings that would expose the store: https
// without a certificate, a certificate for http URLs only, or plain
// http on an address other than loopback unless Insecure is set
// (docs/security.md, "The store").
func (cfg Config) checkSecurity(curl, purl *url.URL) error {
	if (cfg.CertFile == "") != (cfg.KeyFile == "") {
		return fmt.Errorf("embedded etcd: %w: the certificate and key files go together", objdb.ErrInvalid)
	}
	if cfg.ClientCAFile != "" && cfg.CertFile == "" {
		return fmt.Errorf("embedded etcd: %w: a client CA needs a server certificate and key", objdb.ErrInvalid)
	}
	for _, u := range []struct {
		what string
		u    *url.URL
	}{{"client", curl}, {"peer", purl}} {
		switch {
		case u.u.Scheme == "https" && cfg.CertFile == "":
			return fmt.Errorf("embedded etcd: %w: %s URL %s is https but no certificate and key are given", objdb.ErrInvalid, u.what, u.u)
		case u.u.Scheme == "http" && !isLoopback(u.u.Hostname()) && !cfg.Insecure:
			return fmt.Errorf("embedded etcd: %w: %s URL %s serves plain http on an address other than loopback: "+
				"anyone who reaches it reads and writes the store; serve https with a certificate and client CA, "+
				"or allow it explicitly (--embedded-etcd-insecure)", objdb.ErrInvalid, u.what, u.u)
		}
	}
	if cfg.CertFile != "" && curl.Scheme != "https" && purl.Scheme != "https" {
		return fmt.Errorf("embedded etcd: %w: a certificate is given but the client URL %s is http", objdb.ErrInvalid, curl)
	}
	return nil
}

// applyTLS sets the server's TLS for the https URLs.
func (cfg Config) applyTLS(ec *embed.Config, cu, pu url.URL) {
	info := transport.TLSInfo{CertFile: cfg.CertFile, KeyFile: cfg.KeyFile,
		TrustedCAFile: cfg.ClientCAFile, ClientCertAuth: cfg.ClientCAFile != ""}
	if cu.Scheme == "https" {
		ec.ClientTLSInfo = info
		ec.ClientAutoTLS = false
	}
	if pu.Scheme == "https" {
		ec.PeerTLSInfo = info
	}
}

// isLoopback reports whether host is a loopback address or "localhost".
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
