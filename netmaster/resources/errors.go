// Package resources allocates the cluster-wide packet tags: VLAN ids for
// VLAN networks, and VXLAN VNIs paired with host-local VLANs for VXLAN
// networks (spec daemons.md §4.5, §4.6). The pools live in the original's
// keys and JSON (state/auto-vlan/global, oper/auto-vlan/global,
// state/auto-vxlan/global, oper/auto-vxlan/global); every allocation and
// free is a compare-and-swap on the oper object (DESIGN.md decision 2).
package resources

import (
	"errors"
	"fmt"
)

// Sentinel errors; test with errors.Is.
var (
	ErrInvalidRange       = errors.New("resources: invalid tag range")
	ErrRangeInUse         = errors.New("resources: tags in use outside the new range")
	ErrVLANUnavailable    = errors.New("resources: requested vlan not available")
	ErrVLANExhausted      = errors.New("resources: no vlans available")
	ErrVXLANOutOfRange    = errors.New("resources: requested vxlan is out of range")
	ErrVXLANUnavailable   = errors.New("resources: requested vxlan not available")
	ErrVXLANExhausted     = errors.New("resources: no vxlans available")
	ErrLocalVLANExhausted = errors.New("resources: no local vlans available")
	ErrNotDefined         = errors.New("resources: tag pool not defined")
)

// UserError carries the exact user-visible text of spec rest-api.md §2.1
// and §2.4 (Error() is that text) next to its sentinel (Unwrap).
type UserError struct {
	Kind error
	Text string
}

func (e *UserError) Error() string { return e.Text }

// Unwrap makes errors.Is(err, e.Kind) work.
func (e *UserError) Unwrap() error { return e.Kind }

func userErr(kind error, format string, args ...any) error {
	return &UserError{Kind: kind, Text: fmt.Sprintf(format, args...)}
}

// Message returns the user-visible text of the first UserError in err's
// chain, or err.Error() when there is none.
func Message(err error) string {
	var ue *UserError
	if errors.As(err, &ue) {
		return ue.Text
	}
	if err == nil {
		return ""
	}
	return err.Error()
}
