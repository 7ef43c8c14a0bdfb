package embedetcd_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/embedetcd"
	"github.com/contiv/netplugin/objdb/etcd"
	"github.com/contiv/netplugin/objdb/objdbtest"
	"github.com/contiv/netplugin/utils/tlsutil"
)

// TestRefusesPlainHTTPOffLoopback: plain http on an address other than
// loopback is refused before anything binds, unless Insecure.
func TestRefusesPlainHTTPOffLoopback(t *testing.T) {
	ctx := context.Background()
	for _, cfg := range []embedetcd.Config{
		{DataDir: t.TempDir(), ClientURL: "http://198.18.9.9:2379", PeerURL: "http://127.0.0.1:0"},
		{DataDir: t.TempDir(), ClientURL: "http://127.0.0.1:0", PeerURL: "http://198.18.9.9:2380"},
	} {
		_, err := embedetcd.Start(ctx, cfg)
		if !errors.Is(err, objdb.ErrInvalid) || !strings.Contains(err.Error(), "--embedded-etcd-insecure") {
			t.Errorf("%s / %s: %v", cfg.ClientURL, cfg.PeerURL, err)
		}
	}
	pki := objdbtest.NewPKI(t)
	for _, tc := range []struct {
		cfg  embedetcd.Config
		want string
	}{
		{embedetcd.Config{ClientURL: "https://127.0.0.1:0"}, "no certificate and key"},
		{embedetcd.Config{ClientURL: "http://127.0.0.1:0", CertFile: pki.ServerCert, KeyFile: pki.ServerKey}, "client URL http://127.0.0.1:0 is http"},
		{embedetcd.Config{ClientURL: "https://127.0.0.1:0", CertFile: pki.ServerCert}, "go together"},
		{embedetcd.Config{ClientURL: "https://127.0.0.1:0", ClientCAFile: pki.CA}, "needs a server certificate"},
	} {
		tc.cfg.DataDir = t.TempDir()
		_, err := embedetcd.Start(ctx, tc.cfg)
		if !errors.Is(err, objdb.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

// TestServesTLSWithClientCertAuth: with a certificate and a client CA
// the embedded etcd serves https and refuses a client without a
// certificate of that CA.
func TestServesTLSWithClientCertAuth(t *testing.T) {
	pki := objdbtest.NewPKI(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv, err := embedetcd.Start(ctx, embedetcd.Config{DataDir: t.TempDir(), ClientURL: "https://127.0.0.1:0", PeerURL: "http://127.0.0.1:0",
		CertFile: pki.ServerCert, KeyFile: pki.ServerKey, ClientCAFile: pki.CA})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if !strings.HasPrefix(srv.Endpoint(), "https://") {
		t.Fatalf("endpoint %s", srv.Endpoint())
	}
	good, err := tlsutil.ClientConfig(pki.CA, pki.ClientCert, pki.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := etcd.New(ctx, etcd.Config{Endpoints: []string{srv.Endpoint()}, TLS: good})
	if err != nil {
		t.Fatalf("client with the right certificate: %v", err)
	}
	if _, err := c.Put(ctx, "k", []byte("v")); err != nil {
		t.Fatalf("put: %v", err)
	}
	c.Close()
	bare, err := tlsutil.ClientConfig(pki.CA, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if c, err := etcd.New(ctx, etcd.Config{Endpoints: []string{srv.Endpoint()}, TLS: bare}); !errors.Is(err, objdb.ErrAuth) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("client without a certificate: %v, want ErrAuth", err)
	}
}
