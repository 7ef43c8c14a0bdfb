package ofrpc

import (
	"errors"
	"net"
	"time"
)

// Defaults of Limits (docs/security.md, "RPC limits").
const (
	DefaultMaxConns        = 1024
	DefaultMaxMessageBytes = 1 << 20
	DefaultIdleTimeout     = 5 * time.Minute
)

// Errors a server reports through Limits.OnReject.
var (
	// ErrTooManyConns: a connection arrived while MaxConns were open; it
	// was closed at once.
	ErrTooManyConns = errors.New("ofrpc: too many connections")
	// ErrMessageTooLarge: a request exceeded MaxMessageBytes; the server
	// answered an error and closed the connection.
	ErrMessageTooLarge = errors.New("ofrpc: request too large")
	// ErrMalformed: the stream is not a sequence of JSON objects.
	ErrMalformed = errors.New("ofrpc: malformed request")
)

// Limits bound what one server accepts. The zero value takes every
// default; a negative number means no limit (tests only).
type Limits struct {
	// MaxConns bounds the open connections; one more is closed as soon
	// as it is accepted. 0: DefaultMaxConns.
	MaxConns int
	// MaxMessageBytes bounds one request (the JSON object, from '{' to
	// its '}'). A larger one is answered with an error and the
	// connection is closed. 0: DefaultMaxMessageBytes.
	MaxMessageBytes int
	// IdleTimeout is the read deadline: the whole next request must
	// arrive within it, or the connection is closed (clients of Pool
	// redial). 0: DefaultIdleTimeout.
	IdleTimeout time.Duration
	// OnReject, if set, is told about every connection refused or closed
	// for a limit or a malformed stream (for logging; it must not block).
	OnReject func(remote net.Addr, err error)
	// Authorize, if set, checks every call before it runs (on mutual TLS:
	// AgentIdentity for the ofnet master; docs/security.md).
	Authorize Authorizer
}

// withDefaults fills the zero fields.
func (l Limits) withDefaults() Limits {
	if l.MaxConns == 0 {
		l.MaxConns = DefaultMaxConns
	}
	if l.MaxMessageBytes == 0 {
		l.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if l.IdleTimeout == 0 {
		l.IdleTimeout = DefaultIdleTimeout
	}
	return l
}

func (l Limits) reject(remote net.Addr, err error) {
	if l.OnReject != nil {
		l.OnReject(remote, err)
	}
}
