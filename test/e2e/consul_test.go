package e2e

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/test/testbed"
	"github.com/contiv/netplugin/utils/tlsutil"
)

// TestConsulHostLoss: on a consul store, containers on two hosts ping each
// other; when one host stops, the other keeps its tunnel port past the
// service TTL (consul sessions, not etcd leases, expire the host's
// registrations here; the host is still in the cluster), and drops the port
// and its endpoint's flows once the host leaves the cluster.
func TestConsulHostLoss(t *testing.T) {
	tb := testbed.New(t, testbed.Config{Hosts: 2, NetMode: "vlan", FwdMode: "bridge", Store: testbed.ExternalConsul})
	netctl(t, tb, "net", "create", "--encap", "vxlan", "--subnet", "198.19.13.0/24", "--gateway", "198.19.13.254", "cx")
	a := attachNew(t, tb.Hosts[0], "ca", "default", "cx", "")
	b := attachNew(t, tb.Hosts[1], "cb", "default", "cx", "")
	if err := pingOK(a, b, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	gone, peer := tb.Hosts[1], tb.Hosts[0]
	gone.StopHost(t)
	headlessKept(t, []*testbed.Host{peer}, "vxif"+strings.ReplaceAll(gone.IP, ".", ""))
	leaveCluster(t, tb, gone)
	start := time.Now()
	if err := waitNoPort(peer, "contivVxlanBridge", "vxif"+strings.ReplaceAll(gone.IP, ".", ""), 30*time.Second); err != nil {
		t.Error(err)
	}
	if err := waitNoFlowMentions(peer, "contivVxlanBridge", []string{b.res.MacAddress}, 30*time.Second); err != nil {
		t.Error(err)
	}
	took := time.Since(start)
	t.Logf("host %s dropped by its peer %v after it left the cluster", gone.Name, took.Round(100*time.Millisecond))
	if took > 15*time.Second {
		t.Errorf("the peer dropped the departed host after %v: more than 15 s", took)
	}
}

// TestConsulACL: the testbed's consul serves https only with
// verify_incoming and ACLs on default-deny, and the daemons' token is
// limited by a policy to contiv's keys, sessions and services
// (testbed/consulacl.go, docs/security.md "The store"). The cluster works
// end to end on it (ICMP, TCP and UDP between containers on two hosts);
// the agent refuses reads without a token and writes outside contiv's
// prefix with the daemons' token; a netplugin and a netmaster given a
// wrong token exit at start saying the token was refused (objdb.ErrAuth).
func TestConsulACL(t *testing.T) {
	tb := testbed.New(t, testbed.Config{Hosts: 2, NetMode: "vlan", FwdMode: "bridge", Store: testbed.ExternalConsul})
	if tb.ConsulToken == "" || tb.StorePKI == nil {
		t.Fatal("the testbed's consul does not run with TLS and ACLs by default")
	}
	netctl(t, tb, "net", "create", "--subnet", "198.19.22.0/24", "--gateway", "198.19.22.254", "ca1")
	a := attachNew(t, tb.Hosts[0], "cla", "default", "ca1", "")
	b := attachNew(t, tb.Hosts[1], "clb", "default", "ca1", "")
	if err := pingOK(a, b, 20*time.Second); err != nil {
		t.Fatal(err)
	}

	// The agent itself, from a namespace on the management network.
	out := tb.AddOutsider(t)
	p := tb.StorePKI
	cfg, err := tlsutil.ClientConfig(p.CA, p.ClientCert, p.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{DialContext: out.DialContext, TLSClientConfig: cfg, DisableKeepAlives: true}}
	base := fmt.Sprintf("https://%s:%d", testbed.StoreIP, testbed.ConsulPort)
	call := func(method, path, token string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader("x"))
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("X-Consul-Token", token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return resp.StatusCode, strings.TrimSpace(string(body))
	}
	root := strings.TrimPrefix(objdb.DefaultRoot, "/")
	for _, c := range []struct {
		what, method, path, token string
		want                      []int
	}{
		// A listing the token may not see is filtered to nothing (404).
		{"read contiv's keys without a token", "GET", "/v1/kv/" + root + "?recurse", "", []int{http.StatusForbidden, http.StatusNotFound}},
		{"write a contiv key without a token", "PUT", "/v1/kv/" + root + "/evil", "", []int{http.StatusForbidden}},
		{"write outside contiv's prefix with its token", "PUT", "/v1/kv/other/evil", tb.ConsulToken, []int{http.StatusForbidden}},
		{"read the ACL tokens with contiv's token", "GET", "/v1/acl/tokens", tb.ConsulToken, []int{http.StatusForbidden}},
		{"read contiv's keys with its token", "GET", "/v1/kv/" + root + "?keys", tb.ConsulToken, []int{http.StatusOK}},
	} {
		code, body := call(c.method, c.path, c.token)
		if !slices.Contains(c.want, code) {
			t.Errorf("%s: want %d, got %d %s", c.what, c.want, code, body)
		} else {
			t.Logf("%s: %d", c.what, code)
		}
	}
	// Plain http and no client certificate are refused too.
	plain := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{DialContext: out.DialContext, DisableKeepAlives: true}}
	if resp, err := plain.Get(fmt.Sprintf("http://%s:%d/v1/kv/%s?keys", testbed.StoreIP, testbed.ConsulPort, root)); err == nil {
		if resp.StatusCode == http.StatusOK {
			t.Errorf("plain http read answered 200")
		}
		resp.Body.Close()
	}
	noCert := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{DialContext: out.DialContext,
		TLSClientConfig: &tls.Config{RootCAs: cfg.RootCAs}, DisableKeepAlives: true}}
	if resp, err := noCert.Get(base + "/v1/kv/" + root + "?keys"); err == nil {
		resp.Body.Close()
		t.Errorf("https without a client certificate answered %s", resp.Status)
	}

	// A wrong token stops both daemons at start.
	wrong := filepath.Join(t.TempDir(), "wrong-token")
	if err := os.WriteFile(wrong, []byte("00000000-1111-4222-8333-444444444444\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	swap := func(args []string) []string {
		out := append([]string(nil), args...)
		for i := 0; i+1 < len(out); i++ {
			if out[i] == "--consul-token-file" {
				out[i+1] = wrong
			}
		}
		return out
	}
	const want = "refused the ACL token"
	h := tb.Hosts[0]
	np := append(swap(h.NetpluginArgs()), "--attach-socket", h.Dir+"/ca-attach.sock",
		"--cni-socket", h.Dir+"/ca-cni.sock", "--mesos-socket", h.Dir+"/ca-mesos.sock")
	o, err := h.Exec(append([]string{"timeout", "60", tb.Bins.Netplugin}, np...)...)
	if err == nil || strings.Contains(err.Error(), "exit status 124") || !strings.Contains(o, want) {
		t.Errorf("netplugin with a wrong consul token: %v, want a quick exit saying %q:\n%s", err, want, tail(o, 20))
	} else {
		t.Logf("netplugin with a wrong consul token: %s", lastLine(o))
	}
	nm := []string{"--mode", "test", "--netmode", "vlan", "--fwdmode", "bridge",
		"--external-address", "127.0.0.1:19999", "--internal-address", "127.0.0.1:19999"}
	nm = append(nm, swap(tb.StoreArgs())...)
	nm = append(nm, tb.PKI.MasterArgs()...)
	o, err = h.Exec(append([]string{"timeout", "60", tb.Bins.Netmaster}, nm...)...)
	if err == nil || strings.Contains(err.Error(), "exit status 124") || !strings.Contains(o, want) {
		t.Errorf("netmaster with a wrong consul token: %v, want a quick exit saying %q:\n%s", err, want, tail(o, 20))
	} else {
		t.Logf("netmaster with a wrong consul token: %s", lastLine(o))
	}
	// The cluster still works.
	if err := pingOK(b, a, 20*time.Second); err != nil {
		t.Fatal(err)
	}
}
