// Package jsonreq holds what the local front-end APIs (the attach API, the
// CNI API and the Docker plugin API) share to read a request body: one
// JSON decoder that takes exactly one value, and the error type naming the
// field at fault (docs/architecture.md decision 7: bad input gets a clear
// error that names the field).
package jsonreq

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// ErrInvalidRequest: a request is malformed or a field is invalid. Every
// error of DecodeStrict and every *FieldError wraps it.
var ErrInvalidRequest = errors.New("invalid request")

// FieldError names the request field (by its JSON key) that is invalid.
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%s: field %q %s", ErrInvalidRequest, e.Field, e.Reason)
}

// Is makes errors.Is(err, ErrInvalidRequest) hold.
func (e *FieldError) Is(target error) bool { return target == ErrInvalidRequest }

// DecodeStrict decodes exactly one JSON value from r into v: unknown keys
// and trailing data are refused. Every error wraps ErrInvalidRequest.
func DecodeStrict(r io.Reader, v any) error {
	if err := DecodeOne(r, v, true); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	return nil
}

// DecodeOne decodes exactly one JSON value from r into v and refuses
// trailing data; strict also refuses keys v does not have. The caller
// wraps the error with its own API's sentinel.
func DecodeOne(r io.Reader, v any, strict bool) error {
	dec := json.NewDecoder(r)
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode JSON: %w", err)
	}
	switch _, err := dec.Token(); {
	case err == nil:
		return errors.New("trailing data after the JSON value")
	case !errors.Is(err, io.EOF):
		return fmt.Errorf("after the JSON value: %w", err)
	}
	return nil
}
