package contivmodel

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/utils/usererr"
)

// Sentinel errors. The client-visible text of an error is its *Error
// message (see Message); these sentinels let Go callers classify it with
// errors.Is, and decide the HTTP status of a refusal (see Status).
var (
	// ErrNotFound: no object of that type has the key ("<type> not found").
	ErrNotFound = errors.New("contivmodel: object not found")
	// ErrMissing: an object the request refers to (not the one it is
	// about) does not exist, e.g. the tenant of a new network.
	ErrMissing = errors.New("contivmodel: referenced object missing")
	// ErrInvalid: the request failed decoding or validation.
	ErrInvalid = errors.New("contivmodel: invalid object")
	// ErrConflict: the request is well formed but the current state does
	// not allow it (in use, exists, cannot change after create).
	ErrConflict = errors.New("contivmodel: conflicts with the current state")
	// ErrTooLarge: the request body exceeds the configured limit.
	ErrTooLarge = errors.New("contivmodel: request body too large")
	// ErrTimeout: the request body did not arrive within the server's
	// read timeout.
	ErrTimeout = errors.New("contivmodel: request body timed out")
	// ErrNoController: the type has no controller ("Invalid object type").
	ErrNoController = errors.New("contivmodel: invalid object type")
	// ErrReadOnly: a write was attempted through a read-only Tx.
	ErrReadOnly = errors.New("contivmodel: read-only transaction")
	// ErrNestedTx: Registry.Update (or an operation using it) was called
	// from inside a transaction, which would deadlock.
	ErrNestedTx = errors.New("contivmodel: nested transaction")
)

// Error is the shared user-visible error (utils/usererr): its Msg is
// exactly what a REST client sees as the first line of an error body.
// Wrapping it with context (fmt.Errorf("…: %w")) keeps that message: the
// handlers answer with the Msg of the first *Error in the chain and log the
// whole chain.
type Error = usererr.Error

// Errorf formats a client-visible error message. A %w verb makes the
// wrapped error its cause (reachable by errors.Is) while the message stays
// the formatted text. Without a recognised cause it answers 409 (a
// refusal by the controller, see Status).
func Errorf(format string, args ...any) error { return usererr.Errorf(format, args...) }

// Invalidf is a client-visible validation error (400).
func Invalidf(format string, args ...any) error {
	return &Error{Msg: fmt.Sprintf(format, args...), Err: ErrInvalid}
}

// Missingf is a client-visible "referenced object does not exist" (404).
func Missingf(format string, args ...any) error {
	return &Error{Msg: fmt.Sprintf(format, args...), Err: ErrMissing}
}

// NotFound returns the generic "<typ> not found" error (docs/rest-api.md §1.7).
func NotFound(typ string) error {
	return &Error{Msg: typ + " not found", Err: ErrNotFound}
}

// Message is the client-visible text of err: the Msg of the first *Error in
// its chain, or err.Error() when there is none.
func Message(err error) string { return usererr.Message(err) }

func invalidf(format string, args ...any) error { return Invalidf(format, args...) }

func noController() error {
	return &Error{Msg: "Invalid object type", Err: ErrNoController}
}

// ServerFault reports whether err is the server's fault whatever else its
// chain says: the store unreachable or closed, a deadline or cancellation,
// a misuse of transactions.
func ServerFault(err error) bool {
	for _, s := range []error{context.DeadlineExceeded, context.Canceled, objdb.ErrUnavailable, objdb.ErrClosed, ErrNestedTx, ErrReadOnly} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// Status is the HTTP status of err (docs/rest-errors.md): 200 for nil;
// 500 for a server fault and for an error without a client-visible message;
// otherwise 413 (body too large), 408 (body too slow), 404 (the object or
// one it names does not exist), 400 (malformed or invalid request), 409
// (any other refusal: the state does not allow it).
func Status(err error) int {
	var ue *Error
	switch {
	case err == nil:
		return http.StatusOK
	case errors.Is(err, ErrTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, ErrTimeout):
		return http.StatusRequestTimeout
	case ServerFault(err):
		return http.StatusInternalServerError
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrMissing):
		return http.StatusNotFound
	case errors.Is(err, ErrInvalid), errors.Is(err, ErrNoController):
		return http.StatusBadRequest
	case errors.Is(err, ErrConflict):
		return http.StatusConflict
	case errors.As(err, &ue):
		return http.StatusConflict
	}
	return http.StatusInternalServerError
}
