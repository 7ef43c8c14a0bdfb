package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/netplugin/daemon"
	"github.com/contiv/netplugin/utils/certgen"
	"github.com/contiv/netplugin/utils/daemonflags"
	"github.com/contiv/netplugin/utils/daemonflags/apptest"
)

// parse runs flag parsing and validation; the runner reports the parsed
// config instead of starting the daemon.
func parse(t *testing.T, env map[string]string, args ...string) (daemon.Config, int, string) {
	t.Helper()
	var got daemon.Config
	app := App(func(_ context.Context, cfg daemon.Config, _ *logrus.Entry) error {
		got = cfg
		return errors.New("parsed")
	})
	code, msg := apptest.Run(t, app, withRPCTLS(t, env, args), args...)
	return got, code, msg
}

// withRPCTLS adds the agent RPC's certificate flags (environment twins)
// to env, for the host the arguments name: netplugin refuses to start
// without them.
func withRPCTLS(t *testing.T, env map[string]string, args []string) map[string]string {
	t.Helper()
	host := env["CONTIV_NETPLUGIN_HOST"]
	for i, a := range args {
		if (a == "--host" || a == "--host-label") && i+1 < len(args) {
			host = strings.TrimSpace(args[i+1])
		}
	}
	if host == "" {
		host, _ = os.Hostname()
	}
	dir := t.TempDir()
	c, err := certgen.WriteCluster(dir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	if host != "" && !strings.ContainsAny(host, "/: ") {
		if err := c.AddAgent(dir, host, nil); err != nil {
			t.Fatal(err)
		}
		f := c.Agents[host]
		out = map[string]string{"CONTIV_NETPLUGIN_RPC_TLS_CERT_FILE": f.Cert,
			"CONTIV_NETPLUGIN_RPC_TLS_KEY_FILE": f.Key, "CONTIV_NETPLUGIN_RPC_TLS_CA_FILE": c.CAFile}
	}
	for k, v := range env {
		out[k] = v
	}
	return out
}

var base = []string{"--mode", "test", "--netmode", "vxlan", "--fwdmode", "routing",
	"--vtep-ip", "198.18.0.11", "--ctrl-ip", "198.18.0.12", "--host", "h1"}

func TestFlagsAliasesAndExtras(t *testing.T) {
	cfg, code, msg := parse(t, nil, "--plugin-mode", "Docker", "--network-mode", "vlan", "--forward-mode", "bridge",
		"--host-label", "node7", "--vtep-ip", "198.18.0.11", "--ctrl-ip", "198.18.0.12", "--vlan-if", "eth2,eth3",
		"--vxlan-port", "8472", "--ovs-datapath", "NETDEV", "--ovsdb-socket", "/tmp/db.sock",
		"--attach-socket", "/tmp/a.sock", "--inspect-address", "127.0.0.1:9191", "--etcd", "http://198.18.0.1:2379")
	if code != 1 || !strings.Contains(msg, "parsed") {
		t.Fatalf("exit %d %q", code, msg)
	}
	if cfg.Common.Mode != "docker" || cfg.Common.NetMode != "vlan" || cfg.Common.FwdMode != "bridge" ||
		cfg.HostLabel != "node7" || cfg.VtepIP != "198.18.0.11" || cfg.CtrlIP != "198.18.0.12" ||
		strings.Join(cfg.VlanUplinks, ",") != "eth2,eth3" || cfg.VxlanPort != 8472 || cfg.OVSDatapath != "netdev" ||
		cfg.OVSDBSocket != "/tmp/db.sock" || cfg.AttachSocket != "/tmp/a.sock" || cfg.InspectAddress != "127.0.0.1:9191" ||
		len(cfg.Common.EtcdEndpoints) != 1 {
		t.Fatalf("parsed %+v", cfg)
	}
}

func TestEnvironmentAndDefaults(t *testing.T) {
	cfg, _, msg := parse(t, map[string]string{
		"CONTIV_NETPLUGIN_MODE": "kubernetes", "CONTIV_NETPLUGIN_NET_MODE": "vlan",
		"CONTIV_NETPLUGIN_FORWARD_MODE": "bridge", "CONTIV_NETPLUGIN_VLAN_UPLINKS": "eth9",
		"CONTIV_NETPLUGIN_HOST": "envhost", "CONTIV_NETPLUGIN_VTEP_IP": "198.18.0.21",
		"CONTIV_NETPLUGIN_CONTROL_IP": "198.18.0.22", "CONTIV_NETPLUGIN_OVS_DATAPATH": "netdev",
	})
	if !strings.Contains(msg, "parsed") {
		t.Fatalf("%q", msg)
	}
	if cfg.Common.Mode != "kubernetes" || cfg.HostLabel != "envhost" || cfg.VtepIP != "198.18.0.21" ||
		cfg.CtrlIP != "198.18.0.22" || cfg.VlanUplinks[0] != "eth9" || cfg.VxlanPort != 4789 ||
		cfg.OVSDatapath != "netdev" || cfg.OVSDBSocket != "/var/run/openvswitch/db.sock" ||
		cfg.AttachSocket != daemon.DefaultAttachSocket || cfg.InspectAddress != daemon.DefaultInspectAddress || cfg.Common.LogLevel != "INFO" {
		t.Fatalf("parsed %+v", cfg)
	}
	cfg, _, _ = parse(t, map[string]string{"CONTIV_NETPLUGIN_HOST": "envhost"}, base...)
	if cfg.HostLabel != "h1" {
		t.Fatalf("flag did not win over env: %q", cfg.HostLabel)
	}
}

func TestInvalidFlagsExit22(t *testing.T) {
	with := func(extra ...string) []string { return append(append([]string{}, base...), extra...) }
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--netmode", "vxlan", "--fwdmode", "routing"}, "mode is not set"},
		{with("--fwdmode", "bridge"), "--netmode vxlan requires --fwdmode routing"},
		{with("--netmode", "vlan"), "--vlan-uplinks is required with --netmode vlan"},
		{with("--vtep-ip", "not-an-ip"), `invalid --vtep-ip "not-an-ip"`},
		{with("--ctrl-ip", "::1"), `invalid --ctrl-ip "::1"`},
		{with("--vxlan-port", "70000"), "invalid --vxlan-port 70000"},
		{with("--ovs-datapath", "dpdk"), `invalid --ovs-datapath "dpdk"`},
		{with("--host", "a/b"), `invalid --host "a/b"`},
		{with("--inspect-address", "9090"), `invalid --inspect-address "9090"`},
		{with("--log-level", "loud"), "invalid --log-level"},
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

func TestCNIFlags(t *testing.T) {
	cfg, _, _ := parse(t, nil, base...)
	if cfg.CNISocket != "/run/contiv/contiv-cni.sock" || cfg.CNIStateDir != daemon.DefaultCNIStateDir {
		t.Fatalf("defaults: %q %q", cfg.CNISocket, cfg.CNIStateDir)
	}
	var code int
	var msg string
	cfg, code, msg = parse(t, map[string]string{"CONTIV_NETPLUGIN_CNI_STATE_DIR": "/tmp/cni-rec"},
		append(base, "--cni-socket", "/tmp/cni.sock")...)
	if code != 1 || !strings.Contains(msg, "parsed") || cfg.CNISocket != "/tmp/cni.sock" || cfg.CNIStateDir != "/tmp/cni-rec" || cfg.K8sConfig != "" {
		t.Fatalf("exit %d %q, parsed %+v", code, msg, cfg)
	}
	cfg, _, _ = parse(t, map[string]string{"CONTIV_NETPLUGIN_K8S_CONFIG": "/etc/contiv/kubeconfig"}, base...)
	if cfg.K8sConfig != "/etc/contiv/kubeconfig" {
		t.Fatalf("K8S_CONFIG: %q", cfg.K8sConfig)
	}
	for _, bad := range [][]string{{"--cni-socket", "run/cni.sock"}, {"--cni-state-dir", ""}, {"--k8s-config", "kubeconfig"}} {
		_, code, msg := parse(t, nil, append(append([]string{}, base...), bad...)...)
		if code != daemonflags.ExitInvalid || !strings.Contains(msg, bad[0]) {
			t.Errorf("%v: exit %d %q", bad, code, msg)
		}
	}
}

// TestInspectSecurity: the inspect server stays on loopback unless TLS and
// a token (or --insecure-inspect, the flag's own test) are given.
func TestInspectSecurity(t *testing.T) {
	dir := t.TempDir()
	ca, err := certgen.NewCA("ca", 0)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ca.Issue(certgen.Request{CommonName: "inspect"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := certgen.WritePair(dir, "inspect", p)
	if err != nil {
		t.Fatal(err)
	}
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(dir, "token-open")
	if err := os.WriteFile(open, []byte("s3cret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	with := func(extra ...string) []string { return append(append([]string{}, base...), extra...) }
	tlsArgs := []string{"--inspect-tls-cert-file", f.Cert, "--inspect-tls-key-file", f.Key}
	for _, c := range []struct {
		args []string
		want string // "" : parsed
	}{
		{with("--inspect-address", "198.18.0.11:9090"), "not a loopback address"},
		{with("--inspect-address", ":9090"), "not a loopback address"},
		{with(append(tlsArgs, "--inspect-address", "198.18.0.11:9090")...), "not a loopback address"},
		{with("--inspect-address", "198.18.0.11:9090", "--inspect-token-file", tok), "needs --inspect-tls-cert-file"},
		{with(append(tlsArgs, "--inspect-address", "198.18.0.11:9090", "--inspect-token-file", open)...), "readable by group or others"},
		{with(append(tlsArgs, "--inspect-address", "198.18.0.11:9090", "--inspect-token-file", tok)...), ""},
		{with("--inspect-address", "198.18.0.11:9090", "--insecure-inspect"), ""},
		{with("--inspect-address", "[::1]:9090"), ""},
	} {
		cfg, code, msg := parse(t, nil, c.args...)
		if c.want == "" {
			if code != 1 || !strings.Contains(msg, "parsed") {
				t.Errorf("%v: exit %d %q", c.args, code, msg)
			}
			continue
		}
		if code != daemonflags.ExitInvalid || !strings.Contains(msg, c.want) {
			t.Errorf("%v: exit %d %q, want %q", c.args, code, msg, c.want)
		}
		_ = cfg
	}
	cfg, _, _ := parse(t, nil, with(append(tlsArgs, "--inspect-address", "198.18.0.11:9090", "--inspect-token-file", tok)...)...)
	if cfg.InspectTLS == nil || cfg.InspectToken != "s3cret" {
		t.Errorf("TLS %v token %q", cfg.InspectTLS, cfg.InspectToken)
	}
}
