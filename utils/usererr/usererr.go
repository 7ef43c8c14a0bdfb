// Package usererr is the one error type whose text a user sees verbatim:
// the first line of a REST 500 body or a CLI error. Packages that own such
// texts (ipam, resources, contivmodel) return it, context is wrapped around
// it with %w, and the edge answers with Message(err).
package usererr

import (
	"errors"
	"fmt"
)

// Error is an error whose Msg is exactly the user-visible text; Err is an
// optional cause or sentinel reachable with errors.Is / errors.As.
type Error struct {
	Msg string
	Err error
}

func (e *Error) Error() string { return e.Msg }

// Unwrap makes errors.Is(err, e.Err) work.
func (e *Error) Unwrap() error { return e.Err }

// New returns an Error with the formatted text and kind as its cause.
func New(kind error, format string, args ...any) error {
	return &Error{Msg: fmt.Sprintf(format, args...), Err: kind}
}

// Errorf formats the text; a %w verb makes the wrapped error the cause while
// the text stays the formatted message.
func Errorf(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &Error{Msg: err.Error(), Err: errors.Unwrap(err)}
}

// Message is the user-visible text of err: the Msg of the first *Error in
// its chain, else err.Error() ("" for nil).
func Message(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Msg
	}
	return err.Error()
}
