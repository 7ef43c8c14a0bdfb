package ofrpc

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/rpc"
	"slices"
)

// Authorizer decides whether the peer of a connection may make one call:
// peer is its verified TLS certificate (nil on a plain connection), arg
// the decoded argument. An error refuses the call; the caller gets its
// text (docs/security.md, "Certificates and roles").
type Authorizer func(peer *x509.Certificate, method string, arg any) error

// authCodec checks each request body with auth once it is decoded.
type authCodec struct {
	rpc.ServerCodec
	conn   net.Conn
	auth   Authorizer
	method string
}

func (c *authCodec) ReadRequestHeader(r *rpc.Request) error {
	err := c.ServerCodec.ReadRequestHeader(r)
	c.method = r.ServiceMethod
	return err
}

func (c *authCodec) ReadRequestBody(x any) error {
	if err := c.ServerCodec.ReadRequestBody(x); err != nil {
		return err
	}
	if x == nil { // the body of a request net/rpc could not route
		return nil
	}
	var peer *x509.Certificate
	if tc, ok := c.conn.(*tls.Conn); ok {
		if st := tc.ConnectionState(); len(st.PeerCertificates) > 0 {
			peer = st.PeerCertificates[0]
		}
	}
	if err := c.auth(peer, c.method, x); err != nil {
		return fmt.Errorf("%s refused: %w", c.method, err)
	}
	return nil
}

// ErrNotYourAddress refuses a call naming an address the caller's
// certificate does not carry.
var ErrNotYourAddress = errors.New("the address is not in the caller's certificate")

// AgentIdentity is the ofnet master's Authorizer on mutual TLS: an agent
// registers, unregisters and announces endpoints only for an address its
// certificate carries (its VTEP and control addresses), so one host's
// certificate cannot speak for another host.
func AgentIdentity(peer *x509.Certificate, method string, arg any) error {
	var addr net.IP
	switch a := arg.(type) {
	case *OfnetNode:
		addr = net.ParseIP(a.HostAddr)
	case *OfnetEndpoint:
		addr = a.OriginatorIp
	case *OfnetEndpointSync:
		addr = net.ParseIP(a.Node.HostAddr)
	default:
		return nil
	}
	if peer == nil {
		return errors.New("no client certificate")
	}
	if addr == nil || !slices.ContainsFunc(peer.IPAddresses, addr.Equal) {
		return fmt.Errorf("%v: %w", addr, ErrNotYourAddress)
	}
	return nil
}
