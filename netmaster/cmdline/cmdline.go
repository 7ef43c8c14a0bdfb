// Package cmdline is netmaster's command line (docs/daemons.md §1.1, §1.2):
// every flag, alias and CONTIV_NETMASTER_* variable of the original, plus
// the embedded-etcd and leader-TTL settings. cmd/netmaster only calls App.
package cmdline

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/urfave/cli"

	"github.com/contiv/netplugin/netmaster/auth"
	"github.com/contiv/netplugin/netmaster/migrate/migratecmd"
	"github.com/contiv/netplugin/netmaster/server"
	"github.com/contiv/netplugin/ofnet/ofmaster"
	"github.com/contiv/netplugin/utils/daemonflags"
	"github.com/contiv/netplugin/utils/netutils"
	"github.com/contiv/netplugin/utils/tlsutil"
	"github.com/contiv/netplugin/utils/version"
)

// NewLeader builds the leader's work from the parsed configuration.
type NewLeader func(cfg server.Config, log *logrus.Entry) (server.Leader, error)

// App returns the netmaster CLI application.
func App(newLeader NewLeader) *cli.App {
	env := func(s string) string { return "CONTIV_NETMASTER_" + s }
	app := daemonflags.App(daemonflags.AppSpec[server.Config]{
		Name:  "netmaster",
		Usage: "Contiv netmaster: the network control plane",
		Bin:   "NETMASTER",
		Flags: append([]cli.Flag{
			cli.StringFlag{Name: "infra, infra-type", EnvVar: env("INFRA"), Value: "default", Usage: "infrastructure type: default or aci"},
			cli.StringFlag{Name: "name, plugin-name", EnvVar: env("PLUGIN_NAME"), Value: "netplugin", Usage: "docker network and IPAM driver name (docker and swarm-mode)"},
			cli.StringFlag{Name: "docker-socket", EnvVar: env("DOCKER_SOCKET"), Value: "/var/run/docker.sock", Usage: "the Docker Engine's API socket (docker mode)"},
			cli.StringFlag{Name: "external-address, listen-url", EnvVar: env("EXTERNAL_ADDRESS"), Value: "0.0.0.0:9999", Usage: "ip:port the REST API listens on"},
			cli.StringFlag{Name: "internal-address, control-url", EnvVar: env("INTERNAL_ADDRESS"), Usage: "ip:port identifying this netmaster (default <host ip>:<external port>)"},
			cli.StringFlag{Name: "embedded-etcd-dir", EnvVar: env("EMBEDDED_ETCD_DIR"), Usage: "run an in-process etcd keeping its data in this directory, serving on the first --etcd-endpoints URL"},
			cli.StringFlag{Name: "embedded-etcd-peer-url", EnvVar: env("EMBEDDED_ETCD_PEER_URL"), Value: "http://127.0.0.1:2380", Usage: "raft peer URL of the embedded etcd"},
			cli.StringFlag{Name: "embedded-etcd-cert-file", EnvVar: env("EMBEDDED_ETCD_CERT_FILE"), Usage: "PEM certificate the embedded etcd serves https:// URLs with (with --embedded-etcd-key-file)"},
			cli.StringFlag{Name: "embedded-etcd-key-file", EnvVar: env("EMBEDDED_ETCD_KEY_FILE"), Usage: "PEM key of --embedded-etcd-cert-file"},
			cli.StringFlag{Name: "embedded-etcd-client-ca-file", EnvVar: env("EMBEDDED_ETCD_CLIENT_CA_FILE"), Usage: "the embedded etcd requires client certificates signed by these PEM CAs"},
			cli.BoolFlag{Name: "embedded-etcd-insecure", EnvVar: env("EMBEDDED_ETCD_INSECURE"), Usage: "allow the embedded etcd to serve plain http on an address other than loopback (anyone reaching it owns the store)"},
			cli.DurationFlag{Name: "leader-ttl", EnvVar: env("LEADER_TTL"), Value: server.DefaultLeaderTTL, Usage: "how long the leader lock outlives a dead leader"},
			cli.DurationFlag{Name: "http-read-header-timeout", EnvVar: env("HTTP_READ_HEADER_TIMEOUT"), Value: server.DefaultHTTPLimits.ReadHeaderTimeout, Usage: "REST API: time allowed for a request's headers"},
			cli.DurationFlag{Name: "http-read-timeout", EnvVar: env("HTTP_READ_TIMEOUT"), Value: server.DefaultHTTPLimits.ReadTimeout, Usage: "REST API: time allowed for a whole request, headers and body"},
			cli.DurationFlag{Name: "http-write-timeout", EnvVar: env("HTTP_WRITE_TIMEOUT"), Value: server.DefaultHTTPLimits.WriteTimeout, Usage: "REST API: time allowed from the end of a request's headers to the end of its answer"},
			cli.DurationFlag{Name: "http-idle-timeout", EnvVar: env("HTTP_IDLE_TIMEOUT"), Value: server.DefaultHTTPLimits.IdleTimeout, Usage: "REST API: an idle connection is closed after this long"},
			cli.Int64Flag{Name: "http-max-body-bytes", EnvVar: env("HTTP_MAX_BODY_BYTES"), Value: server.DefaultHTTPLimits.MaxBodyBytes, Usage: "REST API: largest request body accepted"},
			cli.StringFlag{Name: "tls-cert-file", EnvVar: env("TLS_CERT_FILE"), Usage: "serve HTTPS with this PEM certificate (with --tls-key-file); default plain HTTP"},
			cli.StringFlag{Name: "tls-key-file", EnvVar: env("TLS_KEY_FILE"), Usage: "PEM private key of --tls-cert-file"},
			cli.StringFlag{Name: "tls-client-ca-file", EnvVar: env("TLS_CLIENT_CA_FILE"), Usage: "require client certificates signed by these PEM CAs"},
			cli.StringFlag{Name: "tls-ca-file", EnvVar: env("TLS_CA_FILE"), Usage: "PEM CAs a follower trusts for the leader's certificate (default: system roots)"},
			cli.StringFlag{Name: "auth-token-file", EnvVar: env("AUTH_TOKEN_FILE"), Usage: "bearer tokens, one \"token,name,role\" line each (role admin or read-only; file mode 0600); needs --tls-cert-file unless --external-address is loopback; default no authentication"},
			cli.BoolFlag{Name: "insecure-auth-tokens", EnvVar: env("INSECURE_AUTH_TOKENS"), Usage: "accept --auth-token-file without TLS on an address other than loopback (tokens travel in clear)"},
			cli.IntFlag{Name: "ofnet-max-nodes", EnvVar: env("OFNET_MAX_NODES"), Value: ofmaster.DefaultMaxNodes, Usage: "ofnet master: registered agents at most (two per host)"},
			cli.IntFlag{Name: "ofnet-max-endpoints", EnvVar: env("OFNET_MAX_ENDPOINTS"), Value: ofmaster.DefaultMaxEndpoints, Usage: "ofnet master: endpoints in its table at most"},
		}, append(daemonflags.RPCTLSFlags("NETMASTER", "the agents"), daemonflags.RPCLimitFlags("NETMASTER")...)...),
		Parse: ConfigFromContext,
		Run: func(ctx context.Context, cfg server.Config, log *logrus.Entry) error {
			cfg.Metrics = daemonflags.NewRegistry()
			if cfg.RPCTLS == nil {
				log.Warn(daemonflags.InsecureRPCWarning)
			}
			leader, err := newLeader(cfg, log)
			if err != nil {
				return err
			}
			d, err := server.New(cfg, leader, log)
			if err != nil {
				return err
			}
			return d.Run(ctx)
		},
	})
	// `netmaster migrate` carries an original cluster's store over
	// (docs/upgrade.md).
	app.Commands = append(app.Commands, migratecmd.Command())
	return app
}

// rpcTLS builds the ofnet RPC's mutual TLS from the --rpc-tls-* flags:
// netmaster presents a master certificate and accepts agent ones only
// (docs/security.md); nil only with --insecure-rpc.
func rpcTLS(c *cli.Context) (*server.RPCTLS, error) {
	srv, cl, _, err := daemonflags.RPCTLSFromContext(c, tlsutil.RoleMaster, "")
	if err != nil || srv == nil {
		return nil, err
	}
	return &server.RPCTLS{Server: srv, Client: cl}, nil
}

// checkTokensTLS refuses bearer tokens on a plain HTTP listener that others
// can reach: the tokens would cross the network in clear
// (docs/security.md, "Tokens"). Loopback is accepted; so is an explicit
// --insecure-auth-tokens, loudly.
func checkTokensTLS(cfg server.Config, extIP net.IP, insecure bool) error {
	if cfg.Tokens == nil && !extIP.IsLoopback() {
		// The original's default, kept for its clients (docs/security.md,
		// "REST API"); said once so that nobody runs it so by accident.
		missing := "no --auth-token-file"
		if cfg.TLS.CertFile == "" {
			missing += ", no --tls-cert-file"
		}
		logrus.Warnf("the REST API on %s answers without authentication (%s): whoever reaches it can change the cluster; "+
			"production runs it with --tls-cert-file, --tls-key-file, --tls-client-ca-file and --auth-token-file (docs/security.md, \"REST API\")",
			cfg.ExternalAddress, missing)
	}
	if cfg.Tokens == nil || cfg.TLS.CertFile != "" || extIP.IsLoopback() {
		return nil
	}
	if !insecure {
		return fmt.Errorf("--auth-token-file without --tls-cert-file on --external-address %s: tokens would travel in clear; "+
			"serve TLS, listen on loopback, or give --insecure-auth-tokens", cfg.ExternalAddress)
	}
	logrus.Warnf("INSECURE: bearer tokens accepted over plain HTTP on %s (--insecure-auth-tokens): anyone on the path can read and replay them", cfg.ExternalAddress)
	return nil
}

// ConfigFromContext reads and validates every netmaster flag.
func ConfigFromContext(c *cli.Context) (server.Config, error) {
	common, err := daemonflags.FromContext(c)
	if err != nil {
		return server.Config{}, err
	}
	cfg := server.Config{
		Common:              common,
		Infra:               strings.ToLower(strings.TrimSpace(c.String("infra"))),
		PluginName:          c.String("name"),
		DockerSocket:        c.String("docker-socket"),
		ExternalAddress:     c.String("external-address"),
		InternalAddress:     c.String("internal-address"),
		EmbeddedEtcdDir:     c.String("embedded-etcd-dir"),
		EmbeddedEtcdPeerURL: c.String("embedded-etcd-peer-url"),
		EmbeddedEtcdTLS: server.EmbeddedEtcdTLS{CertFile: c.String("embedded-etcd-cert-file"),
			KeyFile: c.String("embedded-etcd-key-file"), ClientCAFile: c.String("embedded-etcd-client-ca-file"),
			Insecure: c.Bool("embedded-etcd-insecure")},
		LeaderTTL: c.Duration("leader-ttl"),
		HTTP: server.HTTPLimits{
			ReadHeaderTimeout: c.Duration("http-read-header-timeout"), ReadTimeout: c.Duration("http-read-timeout"),
			WriteTimeout: c.Duration("http-write-timeout"), IdleTimeout: c.Duration("http-idle-timeout"),
			MaxBodyBytes: c.Int64("http-max-body-bytes"),
		},
		Version: version.Get(),
		TLS: server.TLSFiles{CertFile: c.String("tls-cert-file"), KeyFile: c.String("tls-key-file"),
			ClientCAFile: c.String("tls-client-ca-file"), CAFile: c.String("tls-ca-file")},
	}
	if p := c.String("auth-token-file"); p != "" {
		toks, err := auth.LoadFile(p)
		if err != nil {
			return cfg, fmt.Errorf("--auth-token-file: %w", err)
		}
		cfg.Tokens = toks
	}
	if cfg.RPCTLS, err = rpcTLS(c); err != nil {
		return cfg, err
	}
	if cfg.OfnetLimits.RPC, err = daemonflags.RPCLimitsFromContext(c); err != nil {
		return cfg, err
	}
	cfg.OfnetLimits.MaxNodes, cfg.OfnetLimits.MaxEndpoints = c.Int("ofnet-max-nodes"), c.Int("ofnet-max-endpoints")
	if cfg.OfnetLimits.MaxNodes < 1 || cfg.OfnetLimits.MaxEndpoints < 1 {
		return cfg, fmt.Errorf("invalid --ofnet-max-nodes %d or --ofnet-max-endpoints %d: must be at least 1", cfg.OfnetLimits.MaxNodes, cfg.OfnetLimits.MaxEndpoints)
	}
	if (cfg.TLS.CertFile == "") != (cfg.TLS.KeyFile == "") {
		return cfg, fmt.Errorf("--tls-cert-file and --tls-key-file go together")
	}
	if cfg.TLS.CertFile == "" && (cfg.TLS.ClientCAFile != "" || cfg.TLS.CAFile != "") {
		return cfg, fmt.Errorf("--tls-client-ca-file and --tls-ca-file need --tls-cert-file and --tls-key-file")
	}
	switch cfg.Infra {
	case "default", "aci":
	default:
		return cfg, fmt.Errorf("invalid --infra %q: must be default or aci", cfg.Infra)
	}
	if cfg.LeaderTTL < time.Second {
		return cfg, fmt.Errorf("invalid --leader-ttl %v: must be at least 1s", cfg.LeaderTTL)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"http-read-header-timeout", cfg.HTTP.ReadHeaderTimeout}, {"http-read-timeout", cfg.HTTP.ReadTimeout},
		{"http-write-timeout", cfg.HTTP.WriteTimeout}, {"http-idle-timeout", cfg.HTTP.IdleTimeout}} {
		if d.v < 100*time.Millisecond {
			return cfg, fmt.Errorf("invalid --%s %v: must be at least 100ms", d.name, d.v)
		}
	}
	if cfg.HTTP.MaxBodyBytes < 1024 {
		return cfg, fmt.Errorf("invalid --http-max-body-bytes %d: must be at least 1024", cfg.HTTP.MaxBodyBytes)
	}
	extIP, extPort, err := netutils.ParseHostPort("external-address", cfg.ExternalAddress)
	if err != nil {
		return cfg, err
	}
	if err := checkTokensTLS(cfg, extIP, c.Bool("insecure-auth-tokens")); err != nil {
		return cfg, err
	}
	if cfg.InternalAddress == "" {
		ip, err := netutils.DefaultAddr()
		if err != nil {
			return cfg, fmt.Errorf("--internal-address not given and no default host address: %w", err)
		}
		cfg.InternalAddress = net.JoinHostPort(ip, strconv.Itoa(extPort))
	}
	if _, _, err := netutils.ParseHostPort("internal-address", cfg.InternalAddress); err != nil {
		return cfg, err
	}
	if cfg.Common.Mode != daemonflags.ModeDocker && cfg.Common.Mode != daemonflags.ModeSwarm && c.IsSet("name") {
		logrus.Infof("--name %q ignored in %s mode", cfg.PluginName, cfg.Common.Mode)
	}
	return cfg, nil
}
