package daemonflags

import (
	"crypto/tls"
	"errors"
	"fmt"

	"github.com/urfave/cli"

	"github.com/contiv/netplugin/utils/tlsutil"
)

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
