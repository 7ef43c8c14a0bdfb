package netctl

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/urfave/cli"

	"github.com/contiv/netplugin/utils/secretfile"
)

// Token sources (docs/security.md, "Tokens"): NETCTL_TOKEN_FILE or
// --token-file name a file readable by its owner only; NETCTL_TOKEN holds
// the token itself. --token still works but warns: a command-line
// argument is visible to every user in ps.

// errTokenInClear is returned instead of sending a token over plain http
// to a host other than loopback.
var errTokenInClear = errors.New("netctl sends its token only over https (or http to loopback)")

// resolveToken picks the bearer token from the options and environment.
func (n *Netctl) resolveToken(c *cli.Context, val map[string]string) error {
	n.token = ""
	tok, file := val["token"], val["token-file"]
	if c.IsSet("token") && c.IsSet("token-file") {
		return fail(exitUsage, "give --token-file or --token, not both")
	}
	if c.IsSet("token") {
		fmt.Fprintln(n.opts.Stderr, "netctl: warning: --token shows the token to every user of this machine (ps); use NETCTL_TOKEN_FILE or NETCTL_TOKEN instead")
		n.token = tok
		return nil
	}
	if file != "" {
		t, err := secretfile.ReadToken(file)
		if err != nil {
			return fail(exitInvalid, "token file: "+err.Error())
		}
		n.token = t
		return nil
	}
	n.token = tok
	return nil
}

// origin is a URL's scheme and host, lower case.
func origin(u *url.URL) string {
	return strings.ToLower(u.Scheme + "://" + u.Host)
}

// tokenAllowed reports whether a token may be sent to u: https, or http
// to a loopback host.
func tokenAllowed(u *url.URL) bool {
	if u.Scheme == "https" {
		return true
	}
	if u.Scheme != "http" {
		return false
	}
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// bearer adds "Authorization: Bearer <token>" to requests for netmaster's
// origin only, and refuses to send it in clear text to another host. A
// request for another origin (a redirect) goes without the token.
type bearer struct {
	token  string
	origin string // scheme://host of --netmaster
	next   http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if origin(r.URL) != b.origin {
		return b.next.RoundTrip(r)
	}
	if !tokenAllowed(r.URL) {
		return nil, fmt.Errorf("%w: refusing to send it to %s", errTokenInClear, b.origin)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// sameOriginRedirects refuses a redirect away from the first request's
// scheme and host: netmaster never sends one (a follower proxies to the
// leader), and following it would hand the token (a header set by the
// model client is kept by net/http) to whoever it names.
func sameOriginRedirects(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if origin(req.URL) != origin(via[0].URL) {
		return fmt.Errorf("netmaster redirected to %s: netctl does not follow a redirect to another host or scheme", origin(req.URL))
	}
	return nil
}
