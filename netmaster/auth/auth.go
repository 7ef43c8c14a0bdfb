// Package auth checks netmaster's bearer tokens (docs/operations.md,
// "TLS and tokens"). A token file lists tokens with one of two roles:
// admin (every method) and read-only (GET and HEAD). Requests carry the
// token as "Authorization: Bearer <token>" or, as the original netctl
// sends the token of its config file, "X-Auth-Token: <token>".
//
// A request without a valid token is answered 401, a read-only token used
// for another method 403; neither reaches the API, so a refused request
// changes nothing.
package auth

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/contiv/netplugin/utils/secretfile"
)

// Role is what a token may do.
type Role int

const (
	// ReadOnly tokens may GET and HEAD.
	ReadOnly Role = iota + 1
	// Admin tokens may use every method.
	Admin
)

func (r Role) String() string {
	switch r {
	case ReadOnly:
		return "read-only"
	case Admin:
		return "admin"
	}
	return "unknown"
}

// ParseRole reads "admin" or "read-only".
func ParseRole(s string) (Role, error) {
	switch s {
	case "admin":
		return Admin, nil
	case "read-only", "readonly":
		return ReadOnly, nil
	}
	return 0, fmt.Errorf("unknown role %q: want admin or read-only", s)
}

// maxTokenLen bounds a token (file and header).
const maxTokenLen = 512

// Identity is the holder of a token.
type Identity struct {
	Name string
	Role Role
}

// Tokens is a parsed token file. Tokens are kept as SHA-256 digests.
type Tokens struct {
	byDigest map[[32]byte]Identity
}

// Len is the number of tokens.
func (t *Tokens) Len() int { return len(t.byDigest) }

// LoadFile reads a token file (see Parse). A file the group or others can
// read or write is refused (secretfile.ErrMode).
func LoadFile(path string) (*Tokens, error) {
	b, err := secretfile.Read(path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	t, err := Parse(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("token file %s: %w", path, err)
	}
	return t, nil
}

// Parse reads lines "token,name,role" (role admin or read-only); blank
// lines and lines starting with '#' are skipped. Tokens are 16 to 512
// printable ASCII characters without spaces or commas, and unique.
func Parse(r io.Reader) (*Tokens, error) {
	t := &Tokens{byDigest: map[[32]byte]Identity{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 64*1024)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.Split(line, ",")
		if len(parts) != 3 {
			return nil, fmt.Errorf("line %d: want token,name,role (3 fields), got %d", n, len(parts))
		}
		tok, name, roleStr := strings.TrimSpace(parts[0]), strings.TrimSpace(parts[1]), strings.TrimSpace(parts[2])
		if err := checkToken(tok); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if len(tok) < 16 {
			return nil, fmt.Errorf("line %d: token shorter than 16 characters", n)
		}
		if name == "" {
			return nil, fmt.Errorf("line %d: empty name", n)
		}
		role, err := ParseRole(roleStr)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		d := sha256.Sum256([]byte(tok))
		if _, dup := t.byDigest[d]; dup {
			return nil, fmt.Errorf("line %d: duplicate token", n)
		}
		t.byDigest[d] = Identity{Name: name, Role: role}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", n+1, err)
	}
	if len(t.byDigest) == 0 {
		return nil, errors.New("no tokens")
	}
	return t, nil
}

// checkToken accepts printable ASCII without spaces and commas.
func checkToken(tok string) error {
	if tok == "" {
		return errors.New("empty token")
	}
	if len(tok) > maxTokenLen {
		return fmt.Errorf("token longer than %d characters", maxTokenLen)
	}
	for i := 0; i < len(tok); i++ {
		if c := tok[i]; c <= ' ' || c >= 0x7f || c == ',' {
			return fmt.Errorf("token has a character that is not allowed at offset %d", i)
		}
	}
	return nil
}

// Errors of Authenticate; each is answered 401.
var (
	ErrNoToken      = errors.New("auth: no bearer token (send Authorization: Bearer <token>)")
	ErrMalformed    = errors.New("auth: malformed Authorization header")
	ErrUnknownToken = errors.New("auth: invalid token")
)

// Authenticate finds the identity of r's token.
func (t *Tokens) Authenticate(r *http.Request) (Identity, error) {
	tok, err := token(r)
	if err != nil {
		return Identity{}, err
	}
	id, ok := t.byDigest[sha256.Sum256([]byte(tok))]
	if !ok {
		return Identity{}, ErrUnknownToken
	}
	return id, nil
}

func token(r *http.Request) (string, error) {
	hs := r.Header.Values("Authorization")
	xs := r.Header.Values("X-Auth-Token")
	switch {
	case len(hs)+len(xs) == 0:
		return "", ErrNoToken
	case len(hs)+len(xs) > 1:
		return "", fmt.Errorf("%w: more than one token header", ErrMalformed)
	case len(xs) == 1:
		if err := checkToken(xs[0]); err != nil {
			return "", fmt.Errorf("%w: X-Auth-Token: %v", ErrMalformed, err)
		}
		return xs[0], nil
	}
	scheme, tok, ok := strings.Cut(hs[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", fmt.Errorf("%w: want \"Bearer <token>\"", ErrMalformed)
	}
	if err := checkToken(tok); err != nil {
		return "", fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return tok, nil
}

// Allowed reports whether role may use method.
func Allowed(role Role, method string) bool {
	if role == Admin {
		return true
	}
	return role == ReadOnly && (method == http.MethodGet || method == http.MethodHead)
}

// Middleware answers 401 or 403 for requests the tokens do not allow and
// passes the others to next. exempt requests pass without a token.
func (t *Tokens) Middleware(next http.Handler, exempt func(*http.Request) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if exempt != nil && exempt(r) {
			next.ServeHTTP(w, r)
			return
		}
		id, err := t.Authenticate(r)
		if err != nil {
			challenge := `Bearer realm="netmaster"`
			switch {
			case errors.Is(err, ErrMalformed):
				challenge += `, error="invalid_request"`
			case errors.Is(err, ErrUnknownToken):
				challenge += `, error="invalid_token"`
			}
			w.Header().Set("WWW-Authenticate", challenge)
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		if !Allowed(id.Role, r.Method) {
			http.Error(w, fmt.Sprintf("auth: token %q (%s) may not %s", id.Name, id.Role, r.Method), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}
