// Package jsonreq holds what the local front-end APIs (the attach API and
// the CNI API) share to read a request body: one strict JSON decoder and
// one error type naming the field at fault (docs/architecture.md decision
// 7: bad input gets a clear error that names the field).
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
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: decode JSON: %w", ErrInvalidRequest, err)
	}
	switch _, err := dec.Token(); {
	case err == nil:
		return fmt.Errorf("%w: trailing data after the JSON value", ErrInvalidRequest)
	case !errors.Is(err, io.EOF):
		return fmt.Errorf("%w: after the JSON value: %w", ErrInvalidRequest, err)
	}
	return nil
}
