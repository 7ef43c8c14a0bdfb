package ofrpc_test

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net"
	"testing"

	"github.com/contiv/netplugin/ofnet/ofrpc"
	"github.com/contiv/netplugin/utils/certgen"
	"github.com/contiv/netplugin/utils/tlsutil"
)

// TestAgentIdentity: an agent registers and announces endpoints only for
// the addresses its certificate carries.
func TestAgentIdentity(t *testing.T) {
	ca, err := certgen.NewCA("ca", 0)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ca.Issue(certgen.Request{Role: tlsutil.RoleAgent, Host: "h1", IPs: []net.IP{net.ParseIP("198.18.0.11"), net.ParseIP("198.18.1.11")}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := parseCert(p.CertPEM)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		arg any
		ok  bool
	}{
		{&ofrpc.OfnetNode{HostAddr: "198.18.0.11", HostPort: 9002}, true},
		{&ofrpc.OfnetNode{HostAddr: "198.18.0.12", HostPort: 9002}, false},
		{&ofrpc.OfnetEndpoint{OriginatorIp: net.ParseIP("198.18.0.11")}, true},
		{&ofrpc.OfnetEndpoint{OriginatorIp: net.ParseIP("198.18.0.12")}, false},
		{&ofrpc.OfnetEndpoint{}, false},
		{&ofrpc.OfnetEndpointSync{Node: ofrpc.OfnetNode{HostAddr: "198.18.0.11", HostPort: 9002}}, true},
		{&ofrpc.OfnetEndpointSync{Node: ofrpc.OfnetNode{HostAddr: "198.18.0.12", HostPort: 9002}}, false},
	} {
		err := ofrpc.AgentIdentity(c, "m", tc.arg)
		if (err == nil) != tc.ok {
			t.Errorf("%+v: %v", tc.arg, err)
		}
		if err != nil && tc.ok == false && !errors.Is(err, ofrpc.ErrNotYourAddress) {
			t.Errorf("%+v: error %v does not wrap ErrNotYourAddress", tc.arg, err)
		}
	}
	if err := ofrpc.AgentIdentity(nil, "m", &ofrpc.OfnetNode{HostAddr: "198.18.0.11"}); err == nil {
		t.Error("a call without a certificate was admitted")
	}
}

func parseCert(pemBytes []byte) (*x509.Certificate, error) {
	pool, rest := pemDecode(pemBytes)
	_ = rest
	return x509.ParseCertificate(pool)
}

func pemDecode(b []byte) ([]byte, []byte) {
	blk, rest := pem.Decode(b)
	if blk == nil {
		return nil, rest
	}
	return blk.Bytes, rest
}
