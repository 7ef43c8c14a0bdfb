package apierr_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/netmaster/apierr"
	"github.com/contiv/netplugin/objdb"
)

func TestStoreNamesTheMissingRecord(t *testing.T) {
	err := apierr.Store("read network state web.default", fmt.Errorf("get: %w", objdb.ErrNotFound))
	if got := contivmodel.Message(err); got != "network web.default not found" {
		t.Fatalf("message %q", got)
	}
	if !errors.Is(err, contivmodel.ErrMissing) || !errors.Is(err, objdb.ErrNotFound) {
		t.Fatalf("%v does not wrap ErrMissing and ErrNotFound", err)
	}
}

func TestStoreWrapsOtherErrors(t *testing.T) {
	cause := errors.New("boom")
	err := apierr.Store("write endpoint e1", cause)
	if !errors.Is(err, cause) || err.Error() != "write endpoint e1: boom" {
		t.Fatalf("got %v", err)
	}
	if errors.Is(err, contivmodel.ErrMissing) {
		t.Fatal("a store failure must not read as a missing record")
	}
}
