// Package cli is netplugin's command line (docs/daemons.md §1.1, §1.3): every
// flag, alias and CONTIV_NETPLUGIN_* variable of the original, plus the OVS
// settings a test bed needs (datapath type, OVSDB socket) and the attach
// socket. cmd/netplugin only calls App.
package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/sirupsen/logrus"
	"github.com/urfave/cli"

	"github.com/contiv/netplugin/mgmtfn/k8splugin/cniapi"
	"github.com/contiv/netplugin/mgmtfn/mesosplugin"
	"github.com/contiv/netplugin/netplugin/daemon"
	"github.com/contiv/netplugin/utils/daemonflags"
	"github.com/contiv/netplugin/utils/netutils"
	"github.com/contiv/netplugin/utils/secretfile"
	"github.com/contiv/netplugin/utils/tlsutil"
	"github.com/contiv/netplugin/utils/version"
)

// Runner starts the daemon with the parsed configuration; tests replace it.
type Runner func(ctx context.Context, cfg daemon.Config, log *logrus.Entry) error

// App returns the netplugin CLI application.
func App(run Runner) *cli.App {
	env := func(s string) string { return "CONTIV_NETPLUGIN_" + s }
	return daemonflags.App(daemonflags.AppSpec[daemon.Config]{
		Name:  "netplugin",
		Usage: "Contiv netplugin: the per-host network agent",
		Bin:   "NETPLUGIN",
		Flags: append([]cli.Flag{
			cli.StringFlag{Name: "host, host-label", EnvVar: env("HOST"), Usage: "identity of this host (default: the kernel hostname)"},
			cli.StringFlag{Name: "vtep-ip", EnvVar: env("VTEP_IP"), Usage: "VXLAN tunnel source address (default: the host's address)"},
			cli.StringFlag{Name: "ctrl-ip", EnvVar: env("CONTROL_IP"), Usage: "address registered for the netplugin service (default: the host's address)"},
			cli.StringFlag{Name: "vlan-uplinks, vlan-if", EnvVar: env("VLAN_UPLINKS"), Usage: "comma-separated uplink interfaces of the VLAN bridge (required with --netmode vlan)"},
			cli.IntFlag{Name: "vxlan-port", EnvVar: env("VXLAN_PORT"), Value: 4789, Usage: "VXLAN UDP port"},
			cli.StringFlag{Name: "ovs-datapath", EnvVar: env("OVS_DATAPATH"), Value: "system", Usage: "OVS datapath type of the bridges: system (kernel) or netdev (userspace)"},
			cli.StringFlag{Name: "ovsdb-socket", EnvVar: env("OVSDB_SOCKET"), Value: "/var/run/openvswitch/db.sock", Usage: "OVSDB server endpoint: a unix socket path, unix:PATH or tcp:IP:PORT"},
			cli.StringFlag{Name: "attach-socket", EnvVar: env("ATTACH_SOCKET"), Value: daemon.DefaultAttachSocket, Usage: "unix socket of the endpoint attach API"},
			cli.StringFlag{Name: "name, plugin-name", EnvVar: env("PLUGIN_NAME"), Value: "netplugin", Usage: "docker network and IPAM driver name, as netmaster's --name (docker and swarm-mode)"},
			cli.StringFlag{Name: "docker-plugin-dir", EnvVar: env("DOCKER_PLUGIN_DIR"), Value: "/run/docker/plugins", Usage: "directory of the docker plugin socket <name>.sock"},
			cli.StringFlag{Name: "docker-socket", EnvVar: env("DOCKER_SOCKET"), Value: "/var/run/docker.sock", Usage: "the Docker Engine's API socket"},
			cli.StringFlag{Name: "cni-socket", EnvVar: env("CNI_SOCKET"), Value: cniapi.DefaultSocket, Usage: "unix socket of the Kubernetes CNI server (kubernetes mode)"},
			cli.StringFlag{Name: "cni-state-dir", EnvVar: env("CNI_STATE_DIR"), Value: daemon.DefaultCNIStateDir, Usage: "directory of the CNI server's attachment records (kubernetes mode)"},
			cli.StringFlag{Name: "mesos-socket", EnvVar: env("MESOS_SOCKET"), Value: mesosplugin.DefaultSocket, Usage: "unix socket of the Mesos CNI server for netcontiv (any mode; \"\" serves none)"},
			cli.StringFlag{Name: "mesos-state-dir", EnvVar: env("MESOS_STATE_DIR"), Value: daemon.DefaultMesosStateDir, Usage: "directory of the Mesos CNI server's attachment records"},
			cli.StringFlag{Name: "k8s-config", EnvVar: env("K8S_CONFIG"), Usage: "kubernetes mode: the API server's settings, a kubeconfig or the original's contiv.json (default: in-cluster when KUBERNETES_SERVICE_HOST is set, else none)"},
			cli.StringFlag{Name: "inspect-address", EnvVar: env("INSPECT_ADDRESS"), Value: daemon.DefaultInspectAddress, Usage: "address of the REST inspect server (loopback by default; another address needs --inspect-tls-* and --inspect-token-file, or --insecure-inspect)"},
			cli.StringFlag{Name: "inspect-tls-cert-file", EnvVar: env("INSPECT_TLS_CERT_FILE"), Usage: "serve the inspect server over HTTPS with this PEM certificate (with --inspect-tls-key-file)"},
			cli.StringFlag{Name: "inspect-tls-key-file", EnvVar: env("INSPECT_TLS_KEY_FILE"), Usage: "PEM key of --inspect-tls-cert-file"},
			cli.StringFlag{Name: "inspect-token-file", EnvVar: env("INSPECT_TOKEN_FILE"), Usage: "file (mode 0600) holding the bearer token the inspect server requires"},
			cli.BoolFlag{Name: "insecure-inspect", EnvVar: env("INSECURE_INSPECT"), Usage: "serve the inspect server on a non-loopback --inspect-address without TLS and token (unsafe)"},
			cli.BoolFlag{Name: "host-access", EnvVar: env("HOST_ACCESS"), Usage: "routing mode: containers reach the host and, masqueraded by it, what is beyond it through contivh0 (adds a host NAT rule)"},
			cli.StringFlag{Name: "ovs-unixctl", EnvVar: env("OVS_UNIXCTL"), Usage: "ovs-vswitchd's control socket, for packet traces (default: found next to --ovsdb-socket)"},
			cli.StringFlag{Name: "netmaster-ca-file", EnvVar: env("NETMASTER_CA_FILE"), Usage: "call netmaster over HTTPS, trusting these PEM CAs"},
			cli.StringFlag{Name: "netmaster-cert-file", EnvVar: env("NETMASTER_CERT_FILE"), Usage: "PEM client certificate presented to netmaster (with --netmaster-key-file)"},
			cli.StringFlag{Name: "netmaster-key-file", EnvVar: env("NETMASTER_KEY_FILE"), Usage: "PEM key of --netmaster-cert-file"},
			cli.StringFlag{Name: "netmaster-token-file", EnvVar: env("NETMASTER_TOKEN_FILE"), Usage: "file holding the bearer token sent to netmaster"},
		}, append(daemonflags.RPCTLSFlags("NETPLUGIN", "netmaster"), daemonflags.RPCLimitFlags("NETPLUGIN")...)...),
		Parse: ConfigFromContext,
		Run: func(ctx context.Context, cfg daemon.Config, log *logrus.Entry) error {
			cfg.Metrics = daemonflags.NewRegistry()
			return run(ctx, cfg, log)
		},
	})
}

// ConfigFromContext reads and validates every netplugin flag.
func ConfigFromContext(c *cli.Context) (daemon.Config, error) {
	common, err := daemonflags.FromContext(c)
	if err != nil {
		return daemon.Config{}, err
	}
	cfg := daemon.Config{
		Common:           common,
		HostLabel:        strings.TrimSpace(c.String("host")),
		VtepIP:           strings.TrimSpace(c.String("vtep-ip")),
		CtrlIP:           strings.TrimSpace(c.String("ctrl-ip")),
		VlanUplinks:      daemonflags.SplitList(c.String("vlan-uplinks")),
		VxlanPort:        c.Int("vxlan-port"),
		OVSDatapath:      strings.ToLower(strings.TrimSpace(c.String("ovs-datapath"))),
		OVSDBSocket:      c.String("ovsdb-socket"),
		AttachSocket:     c.String("attach-socket"),
		InspectAddress:   c.String("inspect-address"),
		OVSUnixctl:       c.String("ovs-unixctl"),
		DockerPluginName: strings.TrimSpace(c.String("name")),
		DockerPluginDir:  c.String("docker-plugin-dir"),
		DockerSocket:     c.String("docker-socket"),
		CNISocket:        c.String("cni-socket"),
		CNIStateDir:      c.String("cni-state-dir"),
		MesosSocket:      c.String("mesos-socket"),
		MesosStateDir:    c.String("mesos-state-dir"),
		K8sConfig:        c.String("k8s-config"),
		HostAccess:       c.Bool("host-access"),
		Version:          version.Get().Version,
	}
	if ca, cert, key := c.String("netmaster-ca-file"), c.String("netmaster-cert-file"), c.String("netmaster-key-file"); ca != "" || cert != "" || key != "" {
		tc, err := tlsutil.ClientConfig(ca, cert, key)
		if err != nil {
			return cfg, fmt.Errorf("netmaster TLS settings: %w", err)
		}
		cfg.MasterTLS = tc
	}
	if cfg.RPCLimits, err = daemonflags.RPCLimitsFromContext(c); err != nil {
		return cfg, err
	}
	if p := c.String("netmaster-token-file"); p != "" {
		b, err := secretfile.Read(p)
		if err != nil {
			return cfg, fmt.Errorf("--netmaster-token-file: %w", err)
		}
		if cfg.MasterToken = strings.TrimSpace(string(b)); cfg.MasterToken == "" || strings.ContainsAny(cfg.MasterToken, " \t\n,") {
			return cfg, fmt.Errorf("--netmaster-token-file %s: want one token (no spaces or commas)", p)
		}
	}
	if cfg.HostLabel == "" {
		h, err := os.Hostname()
		if err != nil {
			return cfg, fmt.Errorf("--host not given and the hostname is unknown: %w", err)
		}
		cfg.HostLabel = h
	}
	if strings.Contains(cfg.HostLabel, "/") {
		return cfg, fmt.Errorf("invalid --host %q: must not contain '/'", cfg.HostLabel)
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"vtep-ip", &cfg.VtepIP}, {"ctrl-ip", &cfg.CtrlIP}} {
		if *f.v == "" {
			ip, err := netutils.DefaultAddr()
			if err != nil {
				return cfg, fmt.Errorf("--%s not given and no default host address: %w", f.name, err)
			}
			*f.v = ip
		}
		if ip := net.ParseIP(*f.v); ip == nil || ip.To4() == nil {
			return cfg, fmt.Errorf("invalid --%s %q: must be an IPv4 address", f.name, *f.v)
		}
	}
	if cfg.RPCServerTLS, cfg.RPCClientTLS, cfg.InsecureRPC, err = daemonflags.RPCTLSFromContext(c, tlsutil.RoleAgent, cfg.HostLabel); err != nil {
		return cfg, err
	}
	if err := inspectSecurity(c, &cfg); err != nil {
		return cfg, err
	}
	if cfg.Common.NetMode == "vlan" && len(cfg.VlanUplinks) == 0 {
		return cfg, fmt.Errorf("--vlan-uplinks is required with --netmode vlan")
	}
	if cfg.VxlanPort < 1 || cfg.VxlanPort > 65535 {
		return cfg, fmt.Errorf("invalid --vxlan-port %d: must be 1-65535", cfg.VxlanPort)
	}
	switch cfg.OVSDatapath {
	case "system", "netdev":
	default:
		return cfg, fmt.Errorf("invalid --ovs-datapath %q: must be system or netdev", cfg.OVSDatapath)
	}
	if cfg.OVSDBSocket == "" {
		return cfg, fmt.Errorf("--ovsdb-socket must not be empty")
	}
	if cfg.DockerPluginName == "" || strings.ContainsAny(cfg.DockerPluginName, "/\x00 ") {
		return cfg, fmt.Errorf("invalid --name %q: must be a non-empty name without '/' or spaces", cfg.DockerPluginName)
	}
	if !strings.HasPrefix(cfg.DockerPluginDir, "/") {
		return cfg, fmt.Errorf("invalid --docker-plugin-dir %q: must be an absolute path", cfg.DockerPluginDir)
	}
	for _, f := range []struct{ name, v string }{{"cni-socket", cfg.CNISocket}, {"cni-state-dir", cfg.CNIStateDir},
		{"mesos-socket", cfg.MesosSocket}, {"mesos-state-dir", cfg.MesosStateDir}} {
		if f.name == "mesos-socket" && f.v == "" {
			continue
		}
		if !filepath.IsAbs(f.v) {
			return cfg, fmt.Errorf("invalid --%s %q: must be an absolute path", f.name, f.v)
		}
	}
	if cfg.K8sConfig != "" && !filepath.IsAbs(cfg.K8sConfig) {
		return cfg, fmt.Errorf("invalid --k8s-config %q: must be an absolute path", cfg.K8sConfig)
	}
	if _, _, err := net.SplitHostPort(cfg.InspectAddress); err != nil {
		return cfg, fmt.Errorf("invalid --inspect-address %q: %w", cfg.InspectAddress, err)
	}
	return cfg, nil
}

// inspectSecurity reads the inspect server's TLS, token and insecure
// flags: on loopback they are optional; anywhere else TLS and a token are
// required unless --insecure-inspect (docs/security.md, "Listeners").
func inspectSecurity(c *cli.Context, cfg *daemon.Config) error {
	host, _, err := net.SplitHostPort(cfg.InspectAddress)
	if err != nil {
		return fmt.Errorf("invalid --inspect-address %q: %w", cfg.InspectAddress, err)
	}
	cert, key, tokenFile := c.String("inspect-tls-cert-file"), c.String("inspect-tls-key-file"), c.String("inspect-token-file")
	cfg.InsecureInspect = c.Bool("insecure-inspect")
	if cert != "" || key != "" {
		if cfg.InspectTLS, err = tlsutil.ServerConfig(cert, key, ""); err != nil {
			return fmt.Errorf("inspect server TLS: %w", err)
		}
	}
	if tokenFile != "" {
		if cfg.InspectTLS == nil && !cfg.InsecureInspect {
			return errors.New("--inspect-token-file needs --inspect-tls-cert-file and --inspect-tls-key-file (or --insecure-inspect): a token is not sent over plain HTTP")
		}
		if cfg.InspectToken, err = readTokenFile(tokenFile); err != nil {
			return fmt.Errorf("--inspect-token-file: %w", err)
		}
	}
	ip := net.ParseIP(host)
	loopback := host == "localhost" || (ip != nil && ip.IsLoopback())
	if !loopback && !cfg.InsecureInspect && (cfg.InspectTLS == nil || cfg.InspectToken == "") {
		return fmt.Errorf("--inspect-address %q is not a loopback address: give --inspect-tls-cert-file, --inspect-tls-key-file and --inspect-token-file, or --insecure-inspect", cfg.InspectAddress)
	}
	return nil
}

// readTokenFile reads one bearer token from a file only its owner can read.
func readTokenFile(p string) (string, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return "", err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s is readable by group or others (mode %v): chmod 600 it", p, fi.Mode().Perm())
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" || strings.ContainsAny(tok, " \t\n,") {
		return "", fmt.Errorf("%s: want one token (no spaces or commas)", p)
	}
	return tok, nil
}
