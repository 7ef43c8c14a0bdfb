// Package daemonflags holds the flag group netmaster and netplugin share
// (docs/daemons.md §1.1): cluster mode, network and forwarding mode, store
// endpoints and logging, each with its CONTIV_<BIN>_* environment twin.
package daemonflags

import (
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli"

	"github.com/contiv/netplugin/objdb/dial"
)

// ExitInvalid is the exit status of any flag validation error (EINVAL).
const ExitInvalid = 22

// Cluster modes.
const (
	ModeDocker     = "docker"
	ModeKubernetes = "kubernetes"
	ModeSwarm      = "swarm-mode"
	ModeTest       = "test"
)

// Common is the shared configuration after parsing.
type Common struct {
	Mode            string
	NetMode         string
	FwdMode         string
	EtcdEndpoints   []string
	ConsulEndpoints []string
	// StoreAuth are the store credentials (files named by the flags).
	StoreAuth dial.Auth
	LogLevel  string
	JSONLog   bool
	Syslog    bool
	SyslogURL string
}

// Flags returns the shared flags; bin is "NETMASTER" or "NETPLUGIN".
func Flags(bin string) []cli.Flag {
	env := func(s string) string { return "CONTIV_" + bin + "_" + s }
	return append([]cli.Flag{
		cli.StringFlag{Name: "mode, plugin-mode, cluster-mode", EnvVar: env("MODE"), Usage: "cluster mode: docker, kubernetes or swarm-mode"},
		cli.StringFlag{Name: "netmode, network-mode", EnvVar: env("NET_MODE"), Usage: "network mode: vlan or vxlan"},
		cli.StringFlag{Name: "fwdmode, forward-mode", EnvVar: env("FORWARD_MODE"), Usage: "forwarding mode: bridge or routing"},
		cli.StringFlag{Name: "etcd-endpoints, etcd", EnvVar: env("ETCD_ENDPOINTS"), Usage: "comma-separated etcd URLs (default http://127.0.0.1:2379)"},
		cli.StringFlag{Name: "consul-endpoints, consul", EnvVar: env("CONSUL_ENDPOINTS"), Usage: "comma-separated consul addresses"},
		cli.StringFlag{Name: "log-level", EnvVar: env("LOG_LEVEL"), Value: "INFO", Usage: "log level: panic, fatal, error, warn, info or debug"},
		cli.BoolFlag{Name: "use-json-log, json-log", EnvVar: env("USE_JSON_LOG"), Usage: "log in JSON"},
		cli.BoolFlag{Name: "use-syslog, syslog", EnvVar: env("USE_SYSLOG"), Usage: "also log to syslog"},
		cli.StringFlag{Name: "syslog-url", EnvVar: env("SYSLOG_URL"), Value: "udp://127.0.0.1:514", Usage: "syslog address proto://host:port"},
	}, storeAuthFlags(bin)...)
}

// FromContext reads and validates the shared flags.
func FromContext(c *cli.Context) (Common, error) {
	cfg := Common{
		Mode:            strings.ToLower(strings.TrimSpace(c.String("mode"))),
		NetMode:         strings.ToLower(strings.TrimSpace(c.String("netmode"))),
		FwdMode:         strings.ToLower(strings.TrimSpace(c.String("fwdmode"))),
		EtcdEndpoints:   SplitList(c.String("etcd-endpoints")),
		ConsulEndpoints: SplitList(c.String("consul-endpoints")),
		StoreAuth:       storeAuthFromContext(c),
		LogLevel:        c.String("log-level"),
		JSONLog:         c.Bool("use-json-log"),
		Syslog:          c.Bool("use-syslog"),
		SyslogURL:       c.String("syslog-url"),
	}
	return cfg, cfg.Validate()
}

// Validate checks the modes and their combination.
func (c Common) Validate() error {
	switch c.Mode {
	case "":
		return errors.New("mode is not set: --mode must be docker, kubernetes or swarm-mode")
	case ModeDocker, ModeKubernetes, ModeSwarm, ModeTest:
	default:
		return fmt.Errorf("unknown %q mode: --mode must be docker, kubernetes or swarm-mode", c.Mode)
	}
	switch c.NetMode {
	case "":
		return errors.New("network mode is not set: --netmode must be vlan or vxlan")
	case "vlan", "vxlan":
	default:
		return fmt.Errorf("invalid network mode %q: --netmode must be vlan or vxlan", c.NetMode)
	}
	switch c.FwdMode {
	case "":
		return errors.New("forwarding mode is not set: --fwdmode must be bridge or routing")
	case "bridge", "routing":
	default:
		return fmt.Errorf("invalid forwarding mode %q: --fwdmode must be bridge or routing", c.FwdMode)
	}
	if c.NetMode == "vxlan" && c.FwdMode == "bridge" {
		return errors.New("invalid combination: --netmode vxlan requires --fwdmode routing (valid: vlan+bridge, vlan+routing, vxlan+routing)")
	}
	if len(c.EtcdEndpoints) > 0 && len(c.ConsulEndpoints) > 0 {
		return errors.New("ambiguous store: give --etcd-endpoints or --consul-endpoints, not both")
	}
	return nil
}

// SplitList splits a comma list, dropping empty elements.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
