// Package dial opens the objdb backend the daemons' store flags select
// (docs/daemons.md §1.1): --etcd-endpoints or --consul-endpoints, never
// both; neither means etcd at http://127.0.0.1:2379.
package dial

import (
	"context"
	"fmt"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/consul"
	"github.com/contiv/netplugin/objdb/etcd"
	"github.com/contiv/netplugin/utils/secretfile"
	"github.com/contiv/netplugin/utils/tlsutil"
)

// DefaultEtcdEndpoint is used when no store flag is given.
const DefaultEtcdEndpoint = "http://127.0.0.1:2379"

// Config is the store selection of a daemon.
type Config struct {
	EtcdEndpoints   []string // URLs; elements may be comma lists
	ConsulEndpoints []string // host:port (a leading http:// is accepted)
	Root            string   // objdb.DefaultRoot when empty
	Logger          *logrus.Entry
	// Auth are the store credentials (none when zero).
	Auth Auth
}

// Auth names the files holding the store credentials of the daemons'
// --etcd-* and --consul-* flags (docs/security.md, "The store"). Password
// and token files must be readable by their owner only (secretfile).
type Auth struct {
	EtcdCACert, EtcdCert, EtcdKey string // PEM files; https:// endpoints
	EtcdUsername                  string
	EtcdPasswordFile              string
	ConsulCACert, ConsulCert      string // PEM files; https to the agent
	ConsulKey                     string
	ConsulTokenFile               string // ACL token
}

func (a Auth) etcdSet() bool {
	return a.EtcdCACert != "" || a.EtcdCert != "" || a.EtcdKey != "" || a.EtcdUsername != "" || a.EtcdPasswordFile != ""
}

func (a Auth) consulSet() bool {
	return a.ConsulCACert != "" || a.ConsulCert != "" || a.ConsulKey != "" || a.ConsulTokenFile != ""
}

// EtcdConfig loads the etcd credentials into an etcd.Config (TLS,
// Username, Password). Unreadable or badly protected files are an error
// wrapping objdb.ErrInvalid that names the flag.
func (a Auth) EtcdConfig() (etcd.Config, error) {
	var cfg etcd.Config
	if (a.EtcdCert == "") != (a.EtcdKey == "") {
		return cfg, fmt.Errorf("%w: --etcd-cert and --etcd-key go together", objdb.ErrInvalid)
	}
	if (a.EtcdUsername == "") != (a.EtcdPasswordFile == "") {
		return cfg, fmt.Errorf("%w: --etcd-username and --etcd-password-file go together", objdb.ErrInvalid)
	}
	if a.EtcdCACert != "" || a.EtcdCert != "" {
		t, err := tlsutil.ClientConfig(a.EtcdCACert, a.EtcdCert, a.EtcdKey)
		if err != nil {
			return cfg, fmt.Errorf("%w: etcd TLS (--etcd-cacert, --etcd-cert, --etcd-key): %v", objdb.ErrInvalid, err)
		}
		cfg.TLS = t
	}
	if a.EtcdPasswordFile != "" {
		pw, err := secretfile.ReadToken(a.EtcdPasswordFile)
		if err != nil {
			return cfg, fmt.Errorf("%w: --etcd-password-file: %v", objdb.ErrInvalid, err)
		}
		cfg.Username, cfg.Password = a.EtcdUsername, pw
	}
	return cfg, nil
}

// ConsulConfig loads the consul credentials into a consul.Config (TLS,
// Token), with errors as EtcdConfig's.
func (a Auth) ConsulConfig() (consul.Config, error) {
	var cfg consul.Config
	if (a.ConsulCert == "") != (a.ConsulKey == "") {
		return cfg, fmt.Errorf("%w: --consul-cert and --consul-key go together", objdb.ErrInvalid)
	}
	if a.ConsulCACert != "" || a.ConsulCert != "" {
		t, err := tlsutil.ClientConfig(a.ConsulCACert, a.ConsulCert, a.ConsulKey)
		if err != nil {
			return cfg, fmt.Errorf("%w: consul TLS (--consul-cacert, --consul-cert, --consul-key): %v", objdb.ErrInvalid, err)
		}
		cfg.TLS = t
	}
	if a.ConsulTokenFile != "" {
		tok, err := secretfile.ReadToken(a.ConsulTokenFile)
		if err != nil {
			return cfg, fmt.Errorf("%w: --consul-token-file: %v", objdb.ErrInvalid, err)
		}
		cfg.Token = tok
	}
	return cfg, nil
}

// Open connects to the selected store. Bad flags are an error wrapping
// objdb.ErrInvalid; an unreachable store one wrapping objdb.ErrUnavailable.
func Open(ctx context.Context, cfg Config) (objdb.Store, error) {
	etcdEPs, consulEPs := nonEmpty(cfg.EtcdEndpoints), nonEmpty(cfg.ConsulEndpoints)
	switch {
	case len(etcdEPs) > 0 && len(consulEPs) > 0:
		return nil, fmt.Errorf("%w: both etcd (%s) and consul (%s) endpoints given: ambiguous store selection",
			objdb.ErrInvalid, strings.Join(etcdEPs, ","), strings.Join(consulEPs, ","))
	case len(consulEPs) > 0:
		if cfg.Auth.etcdSet() {
			return nil, fmt.Errorf("%w: etcd credentials given but the store is consul", objdb.ErrInvalid)
		}
		cc, err := cfg.Auth.ConsulConfig()
		if err != nil {
			return nil, err
		}
		cc.Endpoints, cc.Root, cc.Logger = consulEPs, cfg.Root, cfg.Logger
		return consul.New(ctx, cc)
	case len(etcdEPs) == 0:
		etcdEPs = []string{DefaultEtcdEndpoint}
	}
	if cfg.Auth.consulSet() {
		return nil, fmt.Errorf("%w: consul credentials given but the store is etcd", objdb.ErrInvalid)
	}
	ec, err := cfg.Auth.EtcdConfig()
	if err != nil {
		return nil, err
	}
	ec.Endpoints, ec.Root, ec.Logger = etcdEPs, cfg.Root, cfg.Logger
	return etcd.New(ctx, ec)
}

// nonEmpty drops empty elements (flags given as "" or ",").
func nonEmpty(in []string) []string {
	var out []string
	for _, s := range in {
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}
