package testbed

import (
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/contiv/netplugin/objdb/objdbtest"
	"github.com/contiv/netplugin/utils/tlsutil"
)

// The store's TLS (docs/security.md, "The store"). Unless
// Config.InsecureStore, the etcd the testbed runs (a process at StoreIP,
// or netmaster's embedded etcd) serves https and asks every client for a
// certificate of the store CA (--client-cert-auth); the daemons get
// --etcd-cacert, --etcd-cert and --etcd-key. The consul store serves only
// https with verify_incoming and ACLs on default-deny (consulacl.go); the
// daemons get --consul-cacert, --consul-cert, --consul-key and a
// --consul-token-file whose token a policy limits to contiv's keys,
// sessions and services. The three-member etcd cluster (etcdcluster.go)
// serves TLS with client certificates too.

// storeTLS reports whether the testbed's etcd serves TLS.
func (tb *Testbed) storeTLS() bool { return tb.StorePKI != nil }

// setupStorePKI writes the store PKI into the testbed folder when the
// configuration asks for a TLS store.
func (tb *Testbed) setupStorePKI(t testing.TB) {
	t.Helper()
	cfg := tb.Config
	if cfg.InsecureStore {
		return
	}
	ips := []string{StoreIP}
	for i := 0; i < 3; i++ {
		ips = append(ips, EtcdMemberIP(i))
	}
	for i := 0; i < max(cfg.Netmasters, 1); i++ {
		ips = append(ips, MasterIP(i))
	}
	p, err := objdbtest.WritePKI(filepath.Join(tb.Dir, "store-pki"), ips, nil)
	if err != nil {
		t.Fatalf("testbed: store PKI: %v", err)
	}
	tb.StorePKI = p
}

// storeScheme is the scheme of the etcd client URL.
func (tb *Testbed) storeScheme() string {
	if tb.storeTLS() {
		return "https"
	}
	return "http"
}

// storeAuthArgs are the daemons' store credential flags for files under
// dir as the daemon sees it (tb.StorePKI.Dir for a process of the test
// machine).
func (tb *Testbed) storeAuthArgs(dir string) []string {
	if !tb.storeTLS() {
		return nil
	}
	p := tb.StorePKI
	at := func(f string) string { return filepath.Join(dir, filepath.Base(f)) }
	if tb.Config.Store == ExternalConsul {
		return []string{"--consul-cacert", at(p.CA), "--consul-cert", at(p.ClientCert), "--consul-key", at(p.ClientKey),
			"--consul-token-file", at(tb.consulTokenFile())}
	}
	return []string{"--etcd-cacert", at(p.CA), "--etcd-cert", at(p.ClientCert), "--etcd-key", at(p.ClientKey)}
}

// embeddedEtcdArgs are netmaster's flags for its embedded etcd's TLS, or
// --embedded-etcd-insecure (the etcd serves a management address).
func (tb *Testbed) embeddedEtcdArgs() []string {
	if !tb.storeTLS() {
		return []string{"--embedded-etcd-insecure"}
	}
	p := tb.StorePKI
	return []string{"--embedded-etcd-cert-file", p.ServerCert, "--embedded-etcd-key-file", p.ServerKey,
		"--embedded-etcd-client-ca-file", p.CA}
}

// etcdServerTLSArgs are the etcd process's TLS flags.
func (tb *Testbed) etcdServerTLSArgs() []string {
	if !tb.storeTLS() {
		return nil
	}
	p := tb.StorePKI
	return []string{"--cert-file", p.ServerCert, "--key-file", p.ServerKey, "--client-cert-auth", "--trusted-ca-file", p.CA}
}

// storeClientTLS is the test process's TLS for the store (nil without
// TLS).
func (tb *Testbed) storeClientTLS() (*tls.Config, error) {
	if !tb.storeTLS() {
		return nil, nil
	}
	p := tb.StorePKI
	return tlsutil.ClientConfig(p.CA, p.ClientCert, p.ClientKey)
}

// copyStoreClientFiles copies the CA and client certificate and key into
// dir (for a daemon that sees only part of the file system, as a managed
// plugin) and returns dir.
func (tb *Testbed) copyStoreClientFiles(dir string) (string, error) {
	if !tb.storeTLS() {
		return dir, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("store client files: %w", err)
	}
	p := tb.StorePKI
	files := []string{p.CA, p.ClientCert, p.ClientKey}
	if tb.Config.Store == ExternalConsul {
		files = append(files, tb.consulTokenFile())
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("store client files: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o600); err != nil {
			return "", fmt.Errorf("store client files: %w", err)
		}
	}
	return dir, nil
}
