package cmdline

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contiv/netplugin/utils/daemonflags"
)

func tokenFile(t *testing.T, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(p, []byte("0123456789abcdef0123,ops,admin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTokenFileNeedsTLS: a token file on a plain HTTP listener others can
// reach is refused unless --insecure-auth-tokens; loopback is accepted.
func TestTokenFileNeedsTLS(t *testing.T) {
	tok := tokenFile(t, 0o600)
	args := []string{"--mode", "test", "--netmode", "vxlan", "--fwdmode", "routing",
		"--internal-address", "198.18.1.1:9999", "--auth-token-file", tok}
	_, code, msg := parse(t, nil, append(args, "--external-address", "198.18.1.1:9999")...)
	if code != daemonflags.ExitInvalid || !strings.Contains(msg, "tokens would travel in clear") {
		t.Fatalf("non-loopback without TLS: exit %d %q", code, msg)
	}
	for _, extra := range [][]string{
		{"--external-address", "127.0.0.1:9999"},
		{"--external-address", "198.18.1.1:9999", "--insecure-auth-tokens"},
	} {
		cfg, _, msg := parse(t, nil, append(args, extra...)...)
		if !strings.Contains(msg, "parsed") || cfg.Tokens == nil || cfg.Tokens.Len() != 1 {
			t.Fatalf("%v: %q", extra, msg)
		}
	}
	_, _, msg = parse(t, map[string]string{"CONTIV_NETMASTER_INSECURE_AUTH_TOKENS": "true"},
		append(args, "--external-address", "198.18.1.1:9999")...)
	if !strings.Contains(msg, "parsed") {
		t.Fatalf("insecure flag from the environment: %q", msg)
	}
}

// TestTokenFileMode: a token file others can read is refused.
func TestTokenFileMode(t *testing.T) {
	_, code, msg := parse(t, nil, append(append([]string{}, base...), "--auth-token-file", tokenFile(t, 0o644))...)
	if code != daemonflags.ExitInvalid || !strings.Contains(msg, "chmod 600") {
		t.Fatalf("exit %d %q", code, msg)
	}
}

// TestStoreAuthFlags: the store credential flags and their environment
// twins reach the configuration.
func TestStoreAuthFlags(t *testing.T) {
	cfg, _, msg := parse(t, map[string]string{"CONTIV_NETMASTER_ETCD_CACERT": "/ca.pem", "CONTIV_NETMASTER_ETCD_PASSWORD_FILE": "/pw"},
		append(append([]string{}, base...), "--etcd-cert", "/c.pem", "--etcd-key", "/k.pem", "--etcd-username", "nm",
			"--embedded-etcd-cert-file", "/s.pem", "--embedded-etcd-insecure")...)
	if !strings.Contains(msg, "parsed") {
		t.Fatalf("%q", msg)
	}
	a := cfg.Common.StoreAuth
	if a.EtcdCACert != "/ca.pem" || a.EtcdCert != "/c.pem" || a.EtcdKey != "/k.pem" || a.EtcdUsername != "nm" ||
		a.EtcdPasswordFile != "/pw" || cfg.EmbeddedEtcdTLS.CertFile != "/s.pem" || !cfg.EmbeddedEtcdTLS.Insecure {
		t.Fatalf("parsed %+v %+v", a, cfg.EmbeddedEtcdTLS)
	}
}
