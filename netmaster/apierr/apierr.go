// Package apierr turns store errors into the errors netmaster's REST and
// /plugin answers carry (docs/rest-errors.md). Every netmaster package that
// answers a client uses it, so a missing record reads the same everywhere.
package apierr

import (
	"errors"
	"fmt"
	"strings"

	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/objdb"
)

// Store is a client-facing store error. A missing record says which one:
// what is "<verb> <record> <id>" ("read network state web.default") and the
// message "<record> <id> not found" (the original's "key not found" named
// nothing; docs/rest-errors.md). Any other error is wrapped with what.
func Store(what string, err error) error {
	if errors.Is(err, objdb.ErrNotFound) {
		_, obj, ok := strings.Cut(what, " ")
		if !ok {
			obj = what
		}
		obj = strings.Replace(obj, " state ", " ", 1)
		return &contivmodel.Error{Msg: obj + " not found", Err: fmt.Errorf("%s: %w: %w", what, contivmodel.ErrMissing, err)}
	}
	return fmt.Errorf("%s: %w", what, err)
}
