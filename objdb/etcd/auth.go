package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/status"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/utils/tlsutil"
)

// clientTLS returns the TLS settings for endpoints: cfg (cloned) when
// any endpoint is https, system roots when none is given, nil for http
// endpoints only. TLS settings with only http endpoints are refused: the
// operator meant TLS and would otherwise talk in clear.
func clientTLS(endpoints []string, cfg *tls.Config) (*tls.Config, error) {
	var https, plain []string
	for _, ep := range endpoints {
		if strings.HasPrefix(ep, "https://") {
			https = append(https, ep)
		} else {
			plain = append(plain, ep)
		}
	}
	switch {
	case len(https) == 0 && cfg != nil:
		return nil, fmt.Errorf("%w: etcd TLS settings given but the endpoints %s are http://; use https:// URLs",
			objdb.ErrInvalid, strings.Join(plain, ","))
	case len(https) > 0 && len(plain) > 0:
		return nil, fmt.Errorf("%w: etcd endpoints mix https (%s) and http (%s)",
			objdb.ErrInvalid, strings.Join(https, ","), strings.Join(plain, ","))
	case len(https) == 0:
		return nil, nil
	case cfg == nil:
		return &tls.Config{MinVersion: tls.VersionTLS12}, nil
	}
	return cfg.Clone(), nil
}

// probeTLS opens one TLS connection to each https endpoint and asks for
// /version, so that a certificate refused by either side is reported as
// objdb.ErrAuth at once, with the reason, instead of gRPC retrying it as
// an unreachable store. An endpoint that does not answer is left to the
// client's own retries.
func probeTLS(ctx context.Context, endpoints []string, cfg *tls.Config, timeout time.Duration) error {
	if cfg == nil {
		return nil
	}
	tr := &http.Transport{Proxy: nil, TLSClientConfig: cfg.Clone(), DisableKeepAlives: true,
		TLSHandshakeTimeout: timeout, ForceAttemptHTTP2: false}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, ep := range endpoints {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, ep+"/version", nil)
		if err != nil {
			return fmt.Errorf("%w: etcd endpoint %q: %v", objdb.ErrInvalid, ep, err)
		}
		resp, err := hc.Do(req)
		if err == nil {
			io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			continue
		}
		if cerr := classifyTLS(ep, cfg, err); cerr != nil {
			return cerr
		}
	}
	return nil
}

// classifyTLS turns a TLS failure into a message that says which side
// refused whom; other errors give nil.
func classifyTLS(ep string, cfg *tls.Config, err error) error {
	switch tlsutil.ClassifyError(err) {
	case tlsutil.ServerUntrusted:
		return fmt.Errorf("the certificate of etcd at %s is not trusted by the etcd CA given (--etcd-cacert): %w: %v", ep, objdb.ErrAuth, err)
	case tlsutil.PlainPeer:
		return fmt.Errorf("%w: etcd at %s does not answer TLS (an http:// endpoint?): %v", objdb.ErrInvalid, ep, err)
	case tlsutil.RefusedByPeer:
		if !tlsutil.HasClientCert(cfg) {
			return fmt.Errorf("etcd at %s asks for a client certificate and none is configured (--etcd-cert, --etcd-key): %w: %v", ep, objdb.ErrAuth, err)
		}
		return fmt.Errorf("etcd at %s refused the client certificate: %w: %v", ep, objdb.ErrAuth, err)
	}
	return nil
}

// authErrors are the etcd answers that no retry can change.
var authErrors = []error{
	rpctypes.ErrAuthFailed, rpctypes.ErrUserEmpty, rpctypes.ErrPermissionDenied,
	rpctypes.ErrUserNotFound, rpctypes.ErrRoleNotGranted,
}

// isAuthErr reports whether etcd refused the user, password or permission.
func isAuthErr(err error) bool {
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		for _, a := range authErrors {
			if ee == a {
				return true
			}
		}
		return false
	}
	if s, ok := status.FromError(err); ok {
		conv := rpctypes.Error(s.Err())
		for _, a := range authErrors {
			if errors.Is(conv, a) {
				return true
			}
		}
	}
	return false
}
