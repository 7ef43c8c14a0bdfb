package daemonflags_test

import (
	"flag"
	"strings"
	"testing"

	"github.com/urfave/cli"

	"github.com/contiv/netplugin/utils/certgen"
	"github.com/contiv/netplugin/utils/daemonflags"
	"github.com/contiv/netplugin/utils/tlsutil"
)

func rpcContext(t *testing.T, args ...string) *cli.Context {
	t.Helper()
	set := flag.NewFlagSet("t", flag.ContinueOnError)
	for _, f := range daemonflags.RPCTLSFlags("TEST", "the peer") {
		f.Apply(set)
	}
	if err := set.Parse(args); err != nil {
		t.Fatal(err)
	}
	return cli.NewContext(cli.NewApp(), set, nil)
}

func TestRPCTLSNoneGivenIsRefused(t *testing.T) {
	srv, cl, insecure, err := daemonflags.RPCTLSFromContext(rpcContext(t), tlsutil.RoleAgent, "h1")
	if err == nil || !strings.Contains(err.Error(), "--insecure-rpc") || srv != nil || cl != nil || insecure {
		t.Fatalf("got %v %v %v %v", srv, cl, insecure, err)
	}
	srv, cl, insecure, err = daemonflags.RPCTLSFromContext(rpcContext(t, "--insecure-rpc"), tlsutil.RoleAgent, "h1")
	if err != nil || srv != nil || cl != nil || !insecure {
		t.Fatalf("--insecure-rpc: got %v %v %v %v", srv, cl, insecure, err)
	}
	_, _, _, err = daemonflags.RPCTLSFromContext(rpcContext(t, "--insecure-rpc", "--rpc-tls-ca-file", "ca.pem"), tlsutil.RoleAgent, "h1")
	if err == nil {
		t.Fatal("--insecure-rpc with --rpc-tls-ca-file accepted")
	}
}

// TestRPCTLSRoles: a daemon refuses a certificate of the other role or of
// another host.
func TestRPCTLSRoles(t *testing.T) {
	dir := t.TempDir()
	ca, err := certgen.NewCA("ca", 0)
	if err != nil {
		t.Fatal(err)
	}
	caf, err := certgen.WriteCA(dir, ca)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(name string, r certgen.Request) certgen.Files {
		p, err := ca.Issue(r)
		if err != nil {
			t.Fatal(err)
		}
		f, err := certgen.WritePair(dir, name, p)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	m := issue("master", certgen.Request{Role: tlsutil.RoleMaster})
	a := issue("agent", certgen.Request{Role: tlsutil.RoleAgent, Host: "h1"})
	args := func(f certgen.Files) []string {
		return []string{"--rpc-tls-cert-file", f.Cert, "--rpc-tls-key-file", f.Key, "--rpc-tls-ca-file", caf.Cert}
	}
	for _, c := range []struct {
		f    certgen.Files
		role tlsutil.Role
		host string
		ok   bool
	}{
		{m, tlsutil.RoleMaster, "", true},
		{a, tlsutil.RoleAgent, "h1", true},
		{a, tlsutil.RoleMaster, "", false},
		{m, tlsutil.RoleAgent, "h1", false},
		{a, tlsutil.RoleAgent, "h2", false},
	} {
		srv, cl, _, err := daemonflags.RPCTLSFromContext(rpcContext(t, args(c.f)...), c.role, c.host)
		if (err == nil) != c.ok {
			t.Errorf("%s as %s %q: err %v", c.f.Cert, c.role, c.host, err)
		}
		if c.ok && (srv == nil || cl == nil || srv.VerifyConnection == nil || cl.VerifyConnection == nil) {
			t.Errorf("%s as %s: no role check", c.f.Cert, c.role)
		}
	}
}

func TestRPCTLSFlagsGoTogether(t *testing.T) {
	srv, cl, _, err := daemonflags.RPCTLSFromContext(rpcContext(t, "--rpc-tls-cert-file", "c.pem", "--rpc-tls-key-file", "k.pem"), tlsutil.RoleMaster, "")
	if err == nil || !strings.Contains(err.Error(), "go together") || srv != nil || cl != nil {
		t.Fatalf("got %v %v %v", srv, cl, err)
	}
}

func TestRPCTLSMissingFile(t *testing.T) {
	_, _, _, err := daemonflags.RPCTLSFromContext(rpcContext(t, "--rpc-tls-cert-file", "/nonexistent/c.pem",
		"--rpc-tls-key-file", "/nonexistent/k.pem", "--rpc-tls-ca-file", "/nonexistent/ca.pem"), tlsutil.RoleMaster, "")
	if err == nil || !strings.Contains(err.Error(), "ofnet RPC TLS") {
		t.Fatalf("got %v", err)
	}
}

func TestRPCTLSEnvironmentTwin(t *testing.T) {
	t.Setenv("CONTIV_TEST_RPC_TLS_KEY_FILE", "k.pem")
	_, _, _, err := daemonflags.RPCTLSFromContext(rpcContext(t, "--rpc-tls-cert-file", "c.pem"), tlsutil.RoleMaster, "")
	if err == nil || !strings.Contains(err.Error(), "go together") {
		t.Fatalf("got %v", err)
	}
	_, _, _, err = daemonflags.RPCTLSFromContext(rpcContext(t, "--rpc-tls-cert-file", "/nonexistent/c.pem", "--rpc-tls-ca-file", "/nonexistent/ca.pem"), tlsutil.RoleMaster, "")
	if err == nil || !strings.Contains(err.Error(), "ofnet RPC TLS") {
		t.Fatalf("key from the environment not read: %v", err)
	}
}
