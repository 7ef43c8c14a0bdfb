package daemonflags

import (
	"crypto/tls"
	"errors"
	"fmt"

	"github.com/urfave/cli"

	"github.com/contiv/netplugin/utils/tlsutil"
)

// InsecureRPCWarning is logged by a daemon started with --insecure-rpc.
const InsecureRPCWarning = "INSECURE: --insecure-rpc: the ofnet RPC runs without TLS; anyone who reaches its port can change this host's flows (docs/security.md)"

// RPCTLSFlags returns the flags RPCTLSFromContext reads, each with its
// CONTIV_<BIN>_* environment twin (see Flags); peer names the other end of
// the RPC in the help text ("the agents", "netmaster").
func RPCTLSFlags(bin, peer string) []cli.Flag {
	env := func(s string) string { return "CONTIV_" + bin + "_" + s }
	return []cli.Flag{
		cli.StringFlag{Name: "rpc-tls-cert-file", EnvVar: env("RPC_TLS_CERT_FILE"), Usage: "mutual TLS on the ofnet RPC with " + peer + ": this PEM certificate with its role (contiv-certs; with --rpc-tls-key-file, --rpc-tls-ca-file)"},
		cli.StringFlag{Name: "rpc-tls-key-file", EnvVar: env("RPC_TLS_KEY_FILE"), Usage: "PEM key of --rpc-tls-cert-file"},
		cli.StringFlag{Name: "rpc-tls-ca-file", EnvVar: env("RPC_TLS_CA_FILE"), Usage: "PEM CAs the ofnet RPC certificates of " + peer + " are checked against"},
		cli.BoolFlag{Name: "insecure-rpc", EnvVar: env("INSECURE_RPC"), Usage: "run the ofnet RPC with " + peer + " without TLS (unsafe: anyone reaching the port can change flows)"},
	}
}

// RPCTLSFromContext reads --rpc-tls-cert-file, --rpc-tls-key-file,
// --rpc-tls-ca-file and --insecure-rpc, the mutual TLS of the ofnet RPC
// between netmaster and the agents (docs/daemons.md §1, docs/security.md):
// the configuration serving the RPC and the one calling it. self is the
// daemon's role: its certificate must carry it (an agent's with host), and
// peers must carry the other role. Without the files the RPC is refused
// unless --insecure-rpc is given; then both are nil and insecure is true.
func RPCTLSFromContext(c *cli.Context, self tlsutil.Role, host string) (srv, client *tls.Config, insecure bool, err error) {
	cert, key, ca := c.String("rpc-tls-cert-file"), c.String("rpc-tls-key-file"), c.String("rpc-tls-ca-file")
	if c.Bool("insecure-rpc") {
		if cert != "" || key != "" || ca != "" {
			return nil, nil, false, errors.New("--insecure-rpc and --rpc-tls-* exclude each other")
		}
		return nil, nil, true, nil
	}
	if cert == "" && key == "" && ca == "" {
		return nil, nil, false, errors.New("the ofnet RPC needs mutual TLS: give --rpc-tls-cert-file, --rpc-tls-key-file and --rpc-tls-ca-file (contiv-certs makes them), or --insecure-rpc")
	}
	if cert == "" || key == "" || ca == "" {
		return nil, nil, false, errors.New("--rpc-tls-cert-file, --rpc-tls-key-file and --rpc-tls-ca-file go together")
	}
	if srv, err = tlsutil.ServerConfig(cert, key, ca); err != nil {
		return nil, nil, false, fmt.Errorf("ofnet RPC TLS: %w", err)
	}
	if client, err = tlsutil.ClientConfig(ca, cert, key); err != nil {
		return nil, nil, false, fmt.Errorf("ofnet RPC TLS: %w", err)
	}
	role, h, err := tlsutil.OwnRole(srv)
	if err != nil {
		return nil, nil, false, fmt.Errorf("--rpc-tls-cert-file %s: %w", cert, err)
	}
	if role != self {
		return nil, nil, false, fmt.Errorf("--rpc-tls-cert-file %s carries role %s; this daemon needs a %s certificate", cert, role, self)
	}
	if self == tlsutil.RoleAgent && host != "" && h != host {
		return nil, nil, false, fmt.Errorf("--rpc-tls-cert-file %s is agent %q's certificate; this host is %q (--host)", cert, h, host)
	}
	peer := tlsutil.RoleAgent
	if self == tlsutil.RoleAgent {
		peer = tlsutil.RoleMaster
	}
	tlsutil.RequirePeerRole(srv, peer, "")
	tlsutil.RequirePeerRole(client, peer, "")
	return srv, client, false, nil
}
