package usererr

import (
	"errors"
	"fmt"
	"testing"
)

func TestMessageAndCause(t *testing.T) {
	kind := errors.New("pkg: exhausted")
	err := fmt.Errorf("allocate in pool %q: %w", "n.t", New(kind, "no vlans available"))
	if got := Message(err); got != "no vlans available" {
		t.Fatalf("message %q", got)
	}
	if !errors.Is(err, kind) {
		t.Fatal("cause lost")
	}
	inner := errors.New("store down")
	e := Errorf("Network %s not found: %w", "web", inner)
	if Message(e) != "Network web not found: store down" || !errors.Is(e, inner) {
		t.Fatalf("Errorf: %q", Message(e))
	}
	if Message(errors.New("plain")) != "plain" || Message(nil) != "" {
		t.Fatal("fallbacks")
	}
}
