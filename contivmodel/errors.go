package contivmodel

import (
	"errors"
	"fmt"

	"github.com/contiv/netplugin/utils/usererr"
)

// Sentinel errors. The client-visible text of an error is its *Error
// message (see Message); these sentinels let Go callers classify it with
// errors.Is.
var (
	// ErrNotFound: no object of that type has the key ("<type> not found").
	ErrNotFound = errors.New("contivmodel: object not found")
	// ErrInvalid: the request failed decoding or validation.
	ErrInvalid = errors.New("contivmodel: invalid object")
	// ErrNoController: the type has no controller ("Invalid object type").
	ErrNoController = errors.New("contivmodel: invalid object type")
	// ErrReadOnly: a write was attempted through a read-only Tx.
	ErrReadOnly = errors.New("contivmodel: read-only transaction")
	// ErrNestedTx: Registry.Update (or an operation using it) was called
	// from inside a transaction, which would deadlock.
	ErrNestedTx = errors.New("contivmodel: nested transaction")
)

// Error is the shared user-visible error (utils/usererr): its Msg is
// exactly what a REST client sees as the first line of the 500 body.
// Wrapping it with context (fmt.Errorf("…: %w")) keeps that message: the
// handlers answer with the Msg of the first *Error in the chain and log the
// whole chain.
type Error = usererr.Error

// Errorf formats a client-visible error message. A %w verb makes the
// wrapped error its cause (reachable by errors.Is) while the message stays
// the formatted text.
func Errorf(format string, args ...any) error { return usererr.Errorf(format, args...) }

// NotFound returns the generic "<typ> not found" error (spec §1.7).
func NotFound(typ string) error {
	return &Error{Msg: typ + " not found", Err: ErrNotFound}
}

// Message is the client-visible text of err: the Msg of the first *Error in
// its chain, or err.Error() when there is none.
func Message(err error) string { return usererr.Message(err) }

func invalidf(format string, args ...any) error {
	return &Error{Msg: fmt.Sprintf(format, args...), Err: ErrInvalid}
}

func noController() error {
	return &Error{Msg: "Invalid object type", Err: ErrNoController}
}
