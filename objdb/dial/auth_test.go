package dial

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/objdbtest"
	"github.com/contiv/netplugin/utils/tlsutil"
)

func secretFile(t *testing.T, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(content+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// roundTrip proves a working store: a put read back.
func roundTrip(t *testing.T, st objdb.Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := st.Put(ctx, "authtest/k", []byte("v")); err != nil {
		t.Fatalf("put: %v", err)
	}
	kv, err := st.Get(ctx, "authtest/k")
	if err != nil || string(kv.Value) != "v" {
		t.Fatalf("get: %q %v", kv.Value, err)
	}
}

// refused opens the store and wants an error wrapping want whose text
// contains every part of msg, well before the test's own deadline.
func refused(t *testing.T, name string, cfg Config, want error, msg ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := Open(ctx, cfg)
	if err == nil {
		st.Close()
		t.Errorf("%s: store opened; want %v", name, want)
		return
	}
	if !errors.Is(err, want) || ctx.Err() != nil {
		t.Errorf("%s: got %v; want an error wrapping %v", name, err, want)
		return
	}
	for _, m := range msg {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("%s: %q does not say %q", name, err, m)
		}
	}
	t.Logf("%s: %v", name, err)
}

// TestEtcdClientCertAuth runs a real etcd with --client-cert-auth: the
// right CA and certificate work; no certificate, a certificate of another
// CA, or a server certificate the client does not trust fail at once
// with objdb.ErrAuth and a message that says why.
func TestEtcdClientCertAuth(t *testing.T) {
	pki := objdbtest.NewPKI(t)
	srv := objdbtest.StartEtcdTLS(t, pki, objdbtest.EtcdTLSOptions{ClientCertAuth: true})
	eps := []string{srv.Endpoint}
	good := Auth{EtcdCACert: pki.CA, EtcdCert: pki.ClientCert, EtcdKey: pki.ClientKey}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := Open(ctx, Config{EtcdEndpoints: eps, Auth: good, Root: "/authtest"})
	if err != nil {
		t.Fatalf("right certificate: %v", err)
	}
	roundTrip(t, st)
	st.Close()

	refused(t, "no client certificate", Config{EtcdEndpoints: eps, Auth: Auth{EtcdCACert: pki.CA}},
		objdb.ErrAuth, srv.Endpoint, "asks for a client certificate", "--etcd-cert")
	refused(t, "foreign client certificate", Config{EtcdEndpoints: eps,
		Auth: Auth{EtcdCACert: pki.CA, EtcdCert: pki.ForeignCert, EtcdKey: pki.ForeignKey}},
		objdb.ErrAuth, "etcd at "+srv.Endpoint+" refused the client certificate")
	refused(t, "server not trusted", Config{EtcdEndpoints: eps,
		Auth: Auth{EtcdCACert: pki.ForeignCA, EtcdCert: pki.ClientCert, EtcdKey: pki.ClientKey}},
		objdb.ErrAuth, "is not trusted", "--etcd-cacert")
	refused(t, "TLS files with an http endpoint", Config{EtcdEndpoints: []string{"http://" + srv.Addr}, Auth: good},
		objdb.ErrInvalid, "use https://")
	refused(t, "certificate without key", Config{EtcdEndpoints: eps, Auth: Auth{EtcdCACert: pki.CA, EtcdCert: pki.ClientCert}},
		objdb.ErrInvalid, "--etcd-cert and --etcd-key go together")
}

// TestEtcdPasswordAuth runs a real etcd with auth enabled: the right
// user and password work; a wrong password or none fails with
// objdb.ErrAuth; a password file others can read is refused.
func TestEtcdPasswordAuth(t *testing.T) {
	pki := objdbtest.NewPKI(t)
	srv := objdbtest.StartEtcdTLS(t, pki, objdbtest.EtcdTLSOptions{})
	tlsCfg, err := tlsutil.ClientConfig(pki.CA, "", "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint}, TLS: tlsCfg, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []func() error{
		func() error { _, err := admin.UserAdd(ctx, "root", "root-pw-1"); return err },
		func() error { _, err := admin.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := admin.UserAdd(ctx, "contiv", "right-password"); return err },
		func() error { _, err := admin.RoleAdd(ctx, "contiv"); return err },
		func() error {
			_, err := admin.RoleGrantPermission(ctx, "contiv", "/authtest", clientv3.GetPrefixRangeEnd("/authtest"), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := admin.UserGrantRole(ctx, "contiv", "contiv"); return err },
		func() error { _, err := admin.AuthEnable(ctx); return err },
	} {
		if err := step(); err != nil {
			admin.Close()
			t.Fatalf("set up etcd auth: %v", err)
		}
	}
	admin.Close()

	eps := []string{srv.Endpoint}
	st, err := Open(ctx, Config{EtcdEndpoints: eps, Root: "/authtest",
		Auth: Auth{EtcdCACert: pki.CA, EtcdUsername: "contiv", EtcdPasswordFile: secretFile(t, "right-password", 0o600)}})
	if err != nil {
		t.Fatalf("right password: %v", err)
	}
	roundTrip(t, st)
	st.Close()

	refused(t, "wrong password", Config{EtcdEndpoints: eps, Root: "/authtest",
		Auth: Auth{EtcdCACert: pki.CA, EtcdUsername: "contiv", EtcdPasswordFile: secretFile(t, "wrong", 0o600)}},
		objdb.ErrAuth, `refused user "contiv"`, "authentication failed")
	refused(t, "no user", Config{EtcdEndpoints: eps, Root: "/authtest", Auth: Auth{EtcdCACert: pki.CA}},
		objdb.ErrAuth, "refused this client")
	refused(t, "outside the user's permission", Config{EtcdEndpoints: eps, Root: "/other",
		Auth: Auth{EtcdCACert: pki.CA, EtcdUsername: "contiv", EtcdPasswordFile: secretFile(t, "right-password", 0o600)}},
		objdb.ErrAuth, "permission denied")
	refused(t, "password file readable by others", Config{EtcdEndpoints: eps,
		Auth: Auth{EtcdCACert: pki.CA, EtcdUsername: "contiv", EtcdPasswordFile: secretFile(t, "right-password", 0o644)}},
		objdb.ErrInvalid, "--etcd-password-file", "chmod 600")
}

// TestConsulACLAndTLS runs a real consul agent with ACLs on default-deny
// and https with verify_incoming: the CA, a client certificate and the
// right token work; a wrong token, no token or a foreign certificate fail
// with objdb.ErrAuth saying why.
func TestConsulACLAndTLS(t *testing.T) {
	pki := objdbtest.NewPKI(t)
	agent := objdbtest.StartConsulACL(t, pki, true)
	eps := []string{agent.HTTPSEndpoint}
	tlsFiles := Auth{ConsulCACert: pki.CA, ConsulCert: pki.ClientCert, ConsulKey: pki.ClientKey}
	withToken := func(a Auth, tok string) Auth { a.ConsulTokenFile = secretFile(t, tok, 0o600); return a }

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := Open(ctx, Config{ConsulEndpoints: eps, Root: "/authtest", Auth: withToken(tlsFiles, agent.ManagementToken)})
	if err != nil {
		t.Fatalf("right token: %v", err)
	}
	roundTrip(t, st)
	st.Close()

	refused(t, "wrong token", Config{ConsulEndpoints: eps, Auth: withToken(tlsFiles, "00000000-1111-4222-8333-444444444444")},
		objdb.ErrAuth, "refused the ACL token")
	refused(t, "no token", Config{ConsulEndpoints: eps, Auth: tlsFiles},
		objdb.ErrAuth, "without ACL token", "--consul-token-file")
	refused(t, "foreign client certificate", Config{ConsulEndpoints: eps,
		Auth: withToken(Auth{ConsulCACert: pki.CA, ConsulCert: pki.ForeignCert, ConsulKey: pki.ForeignKey}, agent.ManagementToken)},
		objdb.ErrAuth, "refused the client certificate")
	refused(t, "server not trusted", Config{ConsulEndpoints: eps,
		Auth: withToken(Auth{ConsulCACert: pki.ForeignCA, ConsulCert: pki.ClientCert, ConsulKey: pki.ClientKey}, agent.ManagementToken)},
		objdb.ErrAuth, "is not trusted", "--consul-cacert")
	refused(t, "token file readable by others", Config{ConsulEndpoints: eps,
		Auth: Auth{ConsulCACert: pki.CA, ConsulTokenFile: secretFile(t, agent.ManagementToken, 0o640)}},
		objdb.ErrInvalid, "--consul-token-file", "chmod 600")
}
