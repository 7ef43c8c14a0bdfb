package daemonflags

import (
	"github.com/urfave/cli"

	"github.com/contiv/netplugin/objdb/dial"
)

// storeAuthFlags are the store credential flags (docs/security.md, "The
// store"), each with its CONTIV_<BIN>_* environment twin.
func storeAuthFlags(bin string) []cli.Flag {
	env := func(s string) string { return "CONTIV_" + bin + "_" + s }
	return []cli.Flag{
		cli.StringFlag{Name: "etcd-cacert", EnvVar: env("ETCD_CACERT"), Usage: "PEM CAs the etcd servers' certificates are checked against (https:// endpoints)"},
		cli.StringFlag{Name: "etcd-cert", EnvVar: env("ETCD_CERT"), Usage: "PEM client certificate for etcd's --client-cert-auth (with --etcd-key)"},
		cli.StringFlag{Name: "etcd-key", EnvVar: env("ETCD_KEY"), Usage: "PEM key of --etcd-cert"},
		cli.StringFlag{Name: "etcd-username", EnvVar: env("ETCD_USERNAME"), Usage: "etcd user (with --etcd-password-file)"},
		cli.StringFlag{Name: "etcd-password-file", EnvVar: env("ETCD_PASSWORD_FILE"), Usage: "file holding the etcd user's password (mode 0600)"},
		cli.StringFlag{Name: "consul-cacert", EnvVar: env("CONSUL_CACERT"), Usage: "PEM CAs the consul agents' certificates are checked against; talks https"},
		cli.StringFlag{Name: "consul-cert", EnvVar: env("CONSUL_CERT"), Usage: "PEM client certificate for consul's verify_incoming (with --consul-key)"},
		cli.StringFlag{Name: "consul-key", EnvVar: env("CONSUL_KEY"), Usage: "PEM key of --consul-cert"},
		cli.StringFlag{Name: "consul-token-file", EnvVar: env("CONSUL_TOKEN_FILE"), Usage: "file holding the consul ACL token (mode 0600)"},
	}
}

// storeAuthFromContext reads the store credential flags.
func storeAuthFromContext(c *cli.Context) dial.Auth {
	return dial.Auth{
		EtcdCACert: c.String("etcd-cacert"), EtcdCert: c.String("etcd-cert"), EtcdKey: c.String("etcd-key"),
		EtcdUsername: c.String("etcd-username"), EtcdPasswordFile: c.String("etcd-password-file"),
		ConsulCACert: c.String("consul-cacert"), ConsulCert: c.String("consul-cert"), ConsulKey: c.String("consul-key"),
		ConsulTokenFile: c.String("consul-token-file"),
	}
}
