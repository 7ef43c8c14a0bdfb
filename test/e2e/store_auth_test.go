package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/test/testbed"
)

// TestStoreClientCertAuth: the testbed's etcd runs with --client-cert-auth
// (its secure default): the cluster works end to end with the store
// certificates (containers on two hosts exchange ICMP, TCP and UDP), and
// a netplugin or netmaster given a certificate of another CA, or none,
// refuses to start with a message that says why (docs/security.md, "The
// store").
func TestStoreClientCertAuth(t *testing.T) {
	tb := testbed.New(t, testbed.Config{Hosts: 2, NetMode: "vlan", FwdMode: "bridge", Store: testbed.ExternalEtcd})
	if tb.StorePKI == nil {
		t.Fatal("the testbed's etcd does not serve TLS by default")
	}
	netctl(t, tb, "net", "create", "--subnet", "198.19.21.0/24", "--gateway", "198.19.21.254", "sa1")
	a := attachNew(t, tb.Hosts[0], "saa", "default", "sa1", "")
	b := attachNew(t, tb.Hosts[1], "sab", "default", "sa1", "")
	if err := pingOK(a, b, 20*time.Second); err != nil {
		t.Fatal(err)
	}

	p := tb.StorePKI
	swap := func(args []string, cert, key string) []string {
		out := append([]string(nil), args...)
		for i := 0; i+1 < len(out); i++ {
			switch out[i] {
			case "--etcd-cert":
				out[i+1] = cert
			case "--etcd-key":
				out[i+1] = key
			}
		}
		return out
	}
	drop := func(args []string, flags ...string) []string {
		var out []string
		for i := 0; i < len(args); i++ {
			skip := false
			for _, f := range flags {
				if args[i] == f {
					skip = true
				}
			}
			if skip {
				i++
				continue
			}
			out = append(out, args[i])
		}
		return out
	}
	h := tb.Hosts[0]
	// A second netplugin on host 0, with host 0's name and RPC certificate
	// (its role check passes) and sockets of its own: it stops at the store
	// before touching OVS.
	base := append(h.NetpluginArgs(), "--attach-socket", h.Dir+"/sa-attach.sock",
		"--cni-socket", h.Dir+"/sa-cni.sock", "--mesos-socket", h.Dir+"/sa-mesos.sock")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"foreign certificate", swap(base, p.ForeignCert, p.ForeignKey), "refused the client certificate"},
		{"no certificate", drop(base, "--etcd-cert", "--etcd-key"), "asks for a client certificate and none is configured"},
	}
	for _, tc := range cases {
		out, err := h.Exec(append([]string{"timeout", "60", tb.Bins.Netplugin}, tc.args...)...)
		if err == nil || strings.Contains(err.Error(), "exit status 124") || !strings.Contains(out, tc.want) {
			t.Errorf("netplugin with %s: %v, want a quick exit saying %q:\n%s", tc.name, err, tc.want, tail(out, 20))
		} else {
			t.Logf("netplugin with %s: %s", tc.name, lastLine(out))
		}
	}
	nm := []string{"--mode", "test", "--netmode", "vlan", "--fwdmode", "bridge",
		"--external-address", "127.0.0.1:19999", "--internal-address", "127.0.0.1:19999"}
	nm = append(nm, swap(tb.StoreArgs(), p.ForeignCert, p.ForeignKey)...)
	nm = append(nm, tb.PKI.MasterArgs()...)
	out, err := h.Exec(append([]string{"timeout", "60", tb.Bins.Netmaster}, nm...)...)
	if err == nil || strings.Contains(err.Error(), "exit status 124") || !strings.Contains(out, "refused the client certificate") {
		t.Errorf("netmaster with a foreign certificate: %v:\n%s", err, tail(out, 20))
	} else {
		t.Logf("netmaster with a foreign certificate: %s", lastLine(out))
	}
	// The cluster still works.
	if err := pingOK(b, a, 20*time.Second); err != nil {
		t.Fatal(err)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
