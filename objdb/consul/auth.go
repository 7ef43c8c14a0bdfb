package consul

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"

	"github.com/hashicorp/consul/api"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/utils/tlsutil"
)

// pickScheme decides http or https from the schemes the endpoints named
// ("" = none) and whether TLS settings were given. TLS settings with an
// explicit http:// endpoint, or a mix of http:// and https://, are
// refused: the operator would talk in clear without noticing.
func pickScheme(named map[string]bool, haveTLS bool) (string, error) {
	switch {
	case named["http"] && named["https"]:
		return "", fmt.Errorf("%w: consul endpoints mix http:// and https://", objdb.ErrInvalid)
	case named["http"] && haveTLS:
		return "", fmt.Errorf("%w: consul TLS settings given but the endpoints are http://; use https:// or host:port", objdb.ErrInvalid)
	case named["https"] || haveTLS:
		return "https", nil
	}
	return "http", nil
}

// authError says why an agent refused the client, wrapping objdb.ErrAuth
// (or objdb.ErrInvalid for an agent that does not speak the scheme
// asked for), or returns nil when err is not such a refusal.
func authError(scheme, ep string, cfg Config, err error) error {
	var se api.StatusError
	if errors.As(err, &se) && se.Code == http.StatusForbidden {
		if cfg.Token == "" {
			return fmt.Errorf("consul at %s refused a request without ACL token (give one with --consul-token-file): %w: %v", ep, objdb.ErrAuth, err)
		}
		return fmt.Errorf("consul at %s refused the ACL token (--consul-token-file): %w: %v", ep, objdb.ErrAuth, err)
	}
	if scheme != "https" {
		if errors.As(err, &se) && se.Code == http.StatusBadRequest {
			return fmt.Errorf("%w: consul at %s refused a plain http request (an https agent? use https:// and --consul-cacert): %v", objdb.ErrInvalid, ep, err)
		}
		return nil
	}
	return classifyTLS(ep, cfg.TLS, err)
}

func classifyTLS(ep string, cfg *tls.Config, err error) error {
	switch tlsutil.ClassifyError(err) {
	case tlsutil.ServerUntrusted:
		return fmt.Errorf("the certificate of consul at %s is not trusted by the consul CA given (--consul-cacert): %w: %v", ep, objdb.ErrAuth, err)
	case tlsutil.PlainPeer:
		return fmt.Errorf("%w: consul at %s does not answer TLS (an http agent?): %v", objdb.ErrInvalid, ep, err)
	case tlsutil.RefusedByPeer:
		if !tlsutil.HasClientCert(cfg) {
			return fmt.Errorf("consul at %s asks for a client certificate and none is configured (--consul-cert, --consul-key): %w: %v", ep, objdb.ErrAuth, err)
		}
		return fmt.Errorf("consul at %s refused the client certificate: %w: %v", ep, objdb.ErrAuth, err)
	}
	return nil
}
