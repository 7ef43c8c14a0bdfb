package jsonreq

import (
	"errors"
	"strings"
	"testing"
)

type req struct {
	Name string `json:"name"`
}

func TestDecodeStrict(t *testing.T) {
	var r req
	if err := DecodeStrict(strings.NewReader(` {"name":"a"} `), &r); err != nil || r.Name != "a" {
		t.Fatalf("good body: %+v, %v", r, err)
	}
	for _, bad := range []string{``, `{`, `{"name":"a","x":1}`, `{"name":"a"}{}`, `{"name":"a"} x`, `[1]`, `{"name":1}`} {
		var r req
		err := DecodeStrict(strings.NewReader(bad), &r)
		if !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("body %q: want an ErrInvalidRequest, got %v", bad, err)
		}
	}
}

func TestFieldError(t *testing.T) {
	var err error = &FieldError{"netns", "is empty"}
	if !errors.Is(err, ErrInvalidRequest) {
		t.Fatal("a FieldError must wrap ErrInvalidRequest")
	}
	if got, want := err.Error(), `invalid request: field "netns" is empty`; got != want {
		t.Fatalf("text %q, want %q", got, want)
	}
}
