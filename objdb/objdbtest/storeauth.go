package objdbtest

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/contiv/netplugin/utils/tlsutil"
)

// EtcdTLSOptions configure StartEtcdTLS.
type EtcdTLSOptions struct {
	// ClientCertAuth starts etcd with --client-cert-auth: every client
	// must present a certificate signed by the PKI's CA.
	ClientCertAuth bool
}

// StartEtcdTLS runs the etcd server binary serving https on a loopback
// port with pki's server certificate (docs/security.md, "The store"),
// stopped on t.Cleanup. Server.Endpoint is "https://127.0.0.1:port".
func StartEtcdTLS(t testing.TB, pki *PKI, opt EtcdTLSOptions) Server {
	t.Helper()
	p := newEtcdProc(t)
	p.scheme = "https"
	p.extra = []string{"--cert-file", pki.ServerCert, "--key-file", pki.ServerKey}
	if opt.ClientCertAuth {
		// etcd asks for client certificates whenever it has a trusted CA.
		p.extra = append(p.extra, "--client-cert-auth", "--trusted-ca-file", pki.CA)
	}
	cfg, err := tlsutil.ClientConfig(pki.CA, pki.ClientCert, pki.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	p.health = &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: cfg}}
	startEtcdProc(t, p)
	return Server{
		Endpoint:         "https://" + p.clientAddr,
		Addr:             p.clientAddr,
		Restart:          p.restart,
		NewProxyEndpoint: func(a string) string { return "https://" + a },
		Signal:           p.signal,
	}
}

// ConsulACLAgent is a consul agent with ACLs on, default deny, serving
// https (and http on another port for its readiness probe).
type ConsulACLAgent struct {
	Server
	// HTTPSEndpoint is "https://127.0.0.1:port".
	HTTPSEndpoint string
	// ManagementToken is the agent's initial management token.
	ManagementToken string
}

// StartConsulACL runs a single-server consul agent like StartConsulAgent
// with ACLs enabled (default_policy deny, a fresh management token) and
// an https port with pki's server certificate; with verifyIncoming,
// https clients must present a certificate of the PKI's CA.
func StartConsulACL(t testing.TB, pki *PKI, verifyIncoming bool) ConsulACLAgent {
	t.Helper()
	bin, err := FindConsul()
	RequireComponent(t, "consul agent", err)
	dir := t.TempDir()
	token := fmt.Sprintf("%08x-0000-4000-8000-%012x", os.Getpid(), time.Now().UnixNano()&0xffffffffffff)
	for attempt := 0; ; attempt++ {
		ports, err := freePorts(5)
		if err != nil {
			t.Fatalf("consul agent: reserve ports: %v", err)
		}
		hcl := fmt.Sprintf(`acl { enabled = true
default_policy = "deny"
down_policy = "deny"
tokens { initial_management = %q }
}
ports { https = %d }
tls { defaults {
ca_file = %q
cert_file = %q
key_file = %q
verify_incoming = %v
} }`, token, ports[4], pki.CA, pki.ServerCert, pki.ServerKey, verifyIncoming)
		cfgFile := filepath.Join(dir, "acl.hcl")
		if err := os.WriteFile(cfgFile, []byte(hcl), 0o600); err != nil {
			t.Fatal(err)
		}
		a := &consulAgent{bin: bin, dir: filepath.Join(dir, "data"), ports: ports[:4], out: &lockedBuffer{},
			extra: []string{"-config-file", cfgFile}}
		err = a.start()
		if err == nil {
			t.Cleanup(a.stop)
			https := "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[4]))
			t.Logf("consul agent with ACLs up on %s and %s", a.addr(), https)
			return ConsulACLAgent{
				Server:          Server{Endpoint: a.addr(), Addr: a.addr(), NewProxyEndpoint: func(addr string) string { return addr }},
				HTTPSEndpoint:   https,
				ManagementToken: token,
			}
		}
		if attempt >= 2 {
			t.Fatalf("consul agent did not start: %v\nagent output:\n%s", err, a.out.String())
		}
		t.Logf("consul agent start attempt %d failed (%v); retrying with new ports", attempt+1, err)
	}
}
