// Package tlsutil builds the TLS settings of the daemons and netctl from
// PEM files (docs/operations.md, "TLS and tokens").
package tlsutil

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
)

// CertPool reads a PEM bundle of CA certificates.
func CertPool(caFile string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("read CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("CA file %s: no PEM certificate in it", caFile)
	}
	return pool, nil
}

// ServerConfig serves certFile/keyFile; with clientCAFile, every client
// must present a certificate signed by one of its CAs.
func ServerConfig(certFile, keyFile, clientCAFile string) (*tls.Config, error) {
	if certFile == "" || keyFile == "" {
		return nil, errors.New("a TLS certificate needs both the certificate and the key file")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("load TLS certificate %s with key %s: %w", certFile, keyFile, err)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	if clientCAFile != "" {
		pool, err := CertPool(clientCAFile)
		if err != nil {
			return nil, fmt.Errorf("client CA: %w", err)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// ClientConfig trusts caFile ("" = the system roots) and presents
// certFile/keyFile when both are given.
func ClientConfig(caFile, certFile, keyFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pool, err := CertPool(caFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("a client certificate needs both the certificate and the key file")
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("load client certificate %s with key %s: %w", certFile, keyFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// Failure is why a TLS connection failed, as ClassifyError tells it.
type Failure int

// Failures ClassifyError tells apart.
const (
	// NotTLS: the error is not a TLS failure (refused, timed out, ...).
	NotTLS Failure = iota
	// ServerUntrusted: the peer's certificate did not verify against the
	// CAs this side trusts.
	ServerUntrusted
	// RefusedByPeer: the peer ended the handshake with an alert, as a
	// server does with a client certificate it does not trust or when
	// none was sent and it asks for one.
	RefusedByPeer
	// PlainPeer: the peer did not answer in TLS (an http:// server).
	PlainPeer
)

// ClassifyError tells a TLS failure of a client connection from other
// errors, from the error types crypto/tls returns (a received alert is a
// *net.OpError whose Op is "remote error").
func ClassifyError(err error) Failure {
	var verr *tls.CertificateVerificationError
	if errors.As(err, &verr) {
		return ServerUntrusted
	}
	var rec tls.RecordHeaderError
	if errors.As(err, &rec) {
		return PlainPeer
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "remote error" {
		return RefusedByPeer
	}
	return NotTLS
}

// HasClientCert reports whether cfg presents a client certificate.
func HasClientCert(cfg *tls.Config) bool {
	return cfg != nil && (len(cfg.Certificates) > 0 || cfg.GetClientCertificate != nil)
}
