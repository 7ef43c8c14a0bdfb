package netctl

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"net/url"

	"github.com/urfave/cli"

	"github.com/contiv/netplugin/utils/tlsutil"
)

// Global options for a netmaster serving HTTPS with its own CA and bearer
// tokens (docs/operations.md, "TLS and tokens"), beyond the original's: the
// application help lists them after --insecure, the original's lines
// unchanged (docs/compat.md); each has an environment variable twin.
var opsOptions = []struct{ name, env, usage string }{
	{"tls-ca-file", "NETCTL_TLS_CA_FILE", "PEM CAs trusted for netmaster's certificate"},
	{"tls-cert-file", "NETCTL_TLS_CERT_FILE", "PEM client certificate presented to netmaster"},
	{"tls-key-file", "NETCTL_TLS_KEY_FILE", "PEM key of --tls-cert-file"},
	{"token", "NETCTL_TOKEN", "bearer token sent to netmaster (visible in ps: prefer NETCTL_TOKEN or --token-file)"},
	{"token-file", "NETCTL_TOKEN_FILE", "file holding the bearer token (mode 0600)"},
}

func opsFlags() []cli.Flag {
	var out []cli.Flag
	for _, o := range opsOptions {
		out = append(out, cli.StringFlag{Name: o.name, Usage: o.usage + " [$" + o.env + "]"})
	}
	return out
}

// readOpsOptions fills the TLS settings and token from the options or
// their environment variables (the option wins).
func (n *Netctl) readOpsOptions(c *cli.Context) error {
	val := map[string]string{}
	for _, o := range opsOptions {
		v := c.String(o.name)
		if !c.IsSet(o.name) {
			v = n.opts.Getenv(o.env)
		}
		val[o.name] = v
	}
	if err := n.resolveToken(c, val); err != nil {
		return err
	}
	if val["tls-ca-file"] == "" && val["tls-cert-file"] == "" && val["tls-key-file"] == "" {
		n.tlsConfig = nil
		return nil
	}
	cfg, err := tlsutil.ClientConfig(val["tls-ca-file"], val["tls-cert-file"], val["tls-key-file"])
	if err != nil {
		return fail(exitInvalid, "TLS settings: "+err.Error())
	}
	n.tlsConfig = cfg
	return nil
}

// newHTTPClient is the transport of object calls and login: --insecure,
// the TLS settings and the bearer token.
func (n *Netctl) newHTTPClient() *http.Client {
	if !n.insecure && n.tlsConfig == nil && n.token == "" {
		return &http.Client{CheckRedirect: sameOriginRedirects}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	cfg := insecureTLSConfig()
	if n.tlsConfig != nil {
		cfg = n.tlsConfig.Clone()
		cfg.InsecureSkipVerify = n.insecure
	} else if !n.insecure {
		cfg = nil
	}
	tr.TLSClientConfig = cfg
	var rt http.RoundTripper = tr
	if n.token != "" {
		u, err := url.Parse(n.netmaster)
		if err == nil {
			rt = bearer{token: n.token, origin: origin(u), next: tr}
		} else {
			rt = bearer{token: n.token, origin: "", next: tr} // every request is another origin: no token
		}
	}
	return &http.Client{Transport: rt, CheckRedirect: sameOriginRedirects}
}

// versionClient asks /version: the TLS settings, but no token and no
// --insecure, as the original's version command did.
func (n *Netctl) versionClient() *http.Client {
	if n.tlsConfig == nil {
		return &http.Client{}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = n.tlsConfig.Clone()
	return &http.Client{Transport: tr}
}

// tlsHint explains a certificate netctl does not trust.
func tlsHint(err error) string {
	var ua x509.UnknownAuthorityError
	var ve *tls.CertificateVerificationError
	if errors.As(err, &ua) || errors.As(err, &ve) {
		return " (netmaster's certificate is not trusted: pass its CA with --tls-ca-file or NETCTL_TLS_CA_FILE, or --insecure)"
	}
	return ""
}
