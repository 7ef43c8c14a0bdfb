package cmdline

import (
	"errors"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/netmaster/server"
	"github.com/contiv/netplugin/utils/certgen"
	"github.com/contiv/netplugin/utils/daemonflags"
	"github.com/contiv/netplugin/utils/daemonflags/apptest"
)

// parse runs the app's flag parsing and validation without starting the
// daemon: the leader constructor reports the parsed config and stops.
func parse(t *testing.T, env map[string]string, args ...string) (server.Config, int, string) {
	t.Helper()
	var got server.Config
	app := App(func(cfg server.Config, _ *logrus.Entry) (server.Leader, error) {
		got = cfg
		return nil, errors.New("parsed")
	})
	code, msg := apptest.Run(t, app, withRPCTLS(t, env), args...)
	return got, code, msg
}

// withRPCTLS adds the ofnet RPC's certificate flags (environment twins)
// to env: netmaster refuses to start without them.
func withRPCTLS(t *testing.T, env map[string]string) map[string]string {
	t.Helper()
	c, err := certgen.WriteCluster(t.TempDir(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{"CONTIV_NETMASTER_RPC_TLS_CERT_FILE": c.Master.Cert,
		"CONTIV_NETMASTER_RPC_TLS_KEY_FILE": c.Master.Key, "CONTIV_NETMASTER_RPC_TLS_CA_FILE": c.CAFile}
	for k, v := range env {
		out[k] = v
	}
	return out
}

var base = []string{"--mode", "test", "--netmode", "vxlan", "--fwdmode", "routing",
	"--external-address", "127.0.0.1:9999", "--internal-address", "127.0.0.1:9999"}

func TestValidFlagsAndAliases(t *testing.T) {
	cfg, code, msg := parse(t, nil, "--plugin-mode", "Docker", "--network-mode", "vlan", "--forward-mode", "bridge",
		"--listen-url", "127.0.0.1:9998", "--control-url", "127.0.0.1:9997", "--infra-type", "ACI",
		"--etcd", "http://127.0.0.1:2379,http://127.0.0.1:2381", "--leader-ttl", "3s")
	if code != 1 || !strings.Contains(msg, "parsed") {
		t.Fatalf("exit %d %q", code, msg)
	}
	if cfg.Common.Mode != "docker" || cfg.Common.NetMode != "vlan" || cfg.Common.FwdMode != "bridge" ||
		cfg.ExternalAddress != "127.0.0.1:9998" || cfg.InternalAddress != "127.0.0.1:9997" || cfg.Infra != "aci" ||
		len(cfg.Common.EtcdEndpoints) != 2 || cfg.LeaderTTL.Seconds() != 3 || cfg.PluginName != "netplugin" {
		t.Fatalf("parsed %+v", cfg)
	}
}

func TestEnvironmentAndDefaults(t *testing.T) {
	cfg, _, msg := parse(t, map[string]string{
		"CONTIV_NETMASTER_MODE": "kubernetes", "CONTIV_NETMASTER_NET_MODE": "vxlan",
		"CONTIV_NETMASTER_FORWARD_MODE": "routing", "CONTIV_NETMASTER_INTERNAL_ADDRESS": "127.0.0.1:9999",
		"CONTIV_NETMASTER_EMBEDDED_ETCD_DIR": "/tmp/x",
	})
	if !strings.Contains(msg, "parsed") {
		t.Fatalf("%q", msg)
	}
	if cfg.Common.Mode != "kubernetes" || cfg.ExternalAddress != "0.0.0.0:9999" || cfg.EmbeddedEtcdDir != "/tmp/x" ||
		cfg.LeaderTTL != server.DefaultLeaderTTL || cfg.Infra != "default" || cfg.Common.LogLevel != "INFO" ||
		cfg.HTTP != server.DefaultHTTPLimits {
		t.Fatalf("parsed %+v", cfg)
	}
	// A flag wins over its environment twin.
	cfg, _, _ = parse(t, map[string]string{"CONTIV_NETMASTER_MODE": "kubernetes"}, base...)
	if cfg.Common.Mode != "test" {
		t.Fatalf("flag did not win over env: %q", cfg.Common.Mode)
	}
}

// TestHTTPLimits: the REST server limits are flags with environment
// twins.
func TestHTTPLimits(t *testing.T) {
	cfg, _, msg := parse(t, map[string]string{"CONTIV_NETMASTER_HTTP_READ_TIMEOUT": "7s", "CONTIV_NETMASTER_HTTP_MAX_BODY_BYTES": "65536"},
		append(base, "--http-write-timeout", "9s", "--http-idle-timeout", "11s", "--http-read-header-timeout", "2s")...)
	if !strings.Contains(msg, "parsed") {
		t.Fatalf("%q", msg)
	}
	want := server.HTTPLimits{ReadHeaderTimeout: 2e9, ReadTimeout: 7e9, WriteTimeout: 9e9, IdleTimeout: 11e9, MaxBodyBytes: 65536}
	if cfg.HTTP != want {
		t.Fatalf("HTTP limits %+v, want %+v", cfg.HTTP, want)
	}
}

func TestInvalidFlagsExit22(t *testing.T) {
	with := func(extra ...string) []string { return append(append([]string{}, base...), extra...) }
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--netmode", "vxlan", "--fwdmode", "routing"}, "mode is not set"},
		{with("--mode", "mesos"), `unknown "mesos" mode`},
		{with("--fwdmode", "bridge"), "--netmode vxlan requires --fwdmode routing"},
		{with("--infra", "opflex"), `invalid --infra "opflex"`},
		{with("--external-address", "127.0.0.1"), "--external-address"},
		{with("--external-address", "127.0.0.1:0"), "port must be 1-65535"},
		{with("--internal-address", "[::1]:9999"), "--internal-address"},
		{with("--log-level", "loud"), "invalid --log-level"},
		{with("--leader-ttl", "500ms"), "invalid --leader-ttl"},
		{with("--http-read-timeout", "0s"), "invalid --http-read-timeout"},
		{with("--http-write-timeout", "1ms"), "invalid --http-write-timeout"},
		{with("--http-max-body-bytes", "10"), "invalid --http-max-body-bytes"},
		{with("--etcd", "http://a:1", "--consul", "b:2"), "ambiguous store"},
		{with("extra-arg"), "unexpected arguments"},
	}
	for _, tc := range cases {
		_, code, msg := parse(t, nil, tc.args...)
		if code != daemonflags.ExitInvalid || !strings.Contains(msg, tc.want) {
			t.Errorf("%v: exit %d %q, want 22 and %q", tc.args, code, msg, tc.want)
		}
	}
}
