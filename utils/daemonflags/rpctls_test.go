package daemonflags_test

import (
	"flag"
	"strings"
	"testing"

	"github.com/urfave/cli"

	"github.com/contiv/netplugin/utils/daemonflags"
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

func TestRPCTLSNoneGivenIsPlain(t *testing.T) {
	srv, cl, err := daemonflags.RPCTLSFromContext(rpcContext(t))
	if srv != nil || cl != nil || err != nil {
		t.Fatalf("got %v %v %v", srv, cl, err)
	}
}

func TestRPCTLSFlagsGoTogether(t *testing.T) {
	srv, cl, err := daemonflags.RPCTLSFromContext(rpcContext(t, "--rpc-tls-cert-file", "c.pem", "--rpc-tls-key-file", "k.pem"))
	if err == nil || !strings.Contains(err.Error(), "go together") || srv != nil || cl != nil {
		t.Fatalf("got %v %v %v", srv, cl, err)
	}
}

func TestRPCTLSMissingFile(t *testing.T) {
	_, _, err := daemonflags.RPCTLSFromContext(rpcContext(t, "--rpc-tls-cert-file", "/nonexistent/c.pem",
		"--rpc-tls-key-file", "/nonexistent/k.pem", "--rpc-tls-ca-file", "/nonexistent/ca.pem"))
	if err == nil || !strings.Contains(err.Error(), "ofnet RPC TLS") {
		t.Fatalf("got %v", err)
	}
}

func TestRPCTLSEnvironmentTwin(t *testing.T) {
	t.Setenv("CONTIV_TEST_RPC_TLS_KEY_FILE", "k.pem")
	_, _, err := daemonflags.RPCTLSFromContext(rpcContext(t, "--rpc-tls-cert-file", "c.pem"))
	if err == nil || !strings.Contains(err.Error(), "go together") {
		t.Fatalf("got %v", err)
	}
	_, _, err = daemonflags.RPCTLSFromContext(rpcContext(t, "--rpc-tls-cert-file", "/nonexistent/c.pem", "--rpc-tls-ca-file", "/nonexistent/ca.pem"))
	if err == nil || !strings.Contains(err.Error(), "ofnet RPC TLS") {
		t.Fatalf("key from the environment not read: %v", err)
	}
}
