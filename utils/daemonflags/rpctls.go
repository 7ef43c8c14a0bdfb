package daemonflags

import (
	"crypto/tls"
	"errors"
	"fmt"

	"github.com/urfave/cli"

	"github.com/contiv/netplugin/utils/tlsutil"
)

// RPCTLSFlags returns the flags RPCTLSFromContext reads, each with its
// CONTIV_<BIN>_* environment twin (see Flags); peer names the other end of
// the RPC in the help text ("the agents", "netmaster").
func RPCTLSFlags(bin, peer string) []cli.Flag {
	env := func(s string) string { return "CONTIV_" + bin + "_" + s }
	return []cli.Flag{
		cli.StringFlag{Name: "rpc-tls-cert-file", EnvVar: env("RPC_TLS_CERT_FILE"), Usage: "mutual TLS on the ofnet RPC with " + peer + ": this PEM certificate (with --rpc-tls-key-file, --rpc-tls-ca-file)"},
		cli.StringFlag{Name: "rpc-tls-key-file", EnvVar: env("RPC_TLS_KEY_FILE"), Usage: "PEM key of --rpc-tls-cert-file"},
		cli.StringFlag{Name: "rpc-tls-ca-file", EnvVar: env("RPC_TLS_CA_FILE"), Usage: "PEM CAs the ofnet RPC certificates of " + peer + " are checked against"},
	}
}

// RPCTLSFromContext reads --rpc-tls-cert-file, --rpc-tls-key-file and
// --rpc-tls-ca-file, the mutual TLS of the ofnet RPC between netmaster and
// the agents (docs/daemons.md §1): the configuration serving the RPC and
// the one calling it, both nil when none of the flags is given.
func RPCTLSFromContext(c *cli.Context) (srv, client *tls.Config, err error) {
	cert, key, ca := c.String("rpc-tls-cert-file"), c.String("rpc-tls-key-file"), c.String("rpc-tls-ca-file")
	if cert == "" && key == "" && ca == "" {
		return nil, nil, nil
	}
	if cert == "" || key == "" || ca == "" {
		return nil, nil, errors.New("--rpc-tls-cert-file, --rpc-tls-key-file and --rpc-tls-ca-file go together")
	}
	if srv, err = tlsutil.ServerConfig(cert, key, ca); err != nil {
		return nil, nil, fmt.Errorf("ofnet RPC TLS: %w", err)
	}
	if client, err = tlsutil.ClientConfig(ca, cert, key); err != nil {
		return nil, nil, fmt.Errorf("ofnet RPC TLS: %w", err)
	}
	return srv, client, nil
}
