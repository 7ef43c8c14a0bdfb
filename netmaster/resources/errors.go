// Package resources allocates the cluster-wide packet tags: VLAN ids for
// VLAN networks, and VXLAN VNIs paired with host-local VLANs for VXLAN
// networks (docs/daemons.md §4.5, §4.6). The pools live in the original's
// keys and JSON (state/auto-vlan/global, oper/auto-vlan/global,
// state/auto-vxlan/global, oper/auto-vxlan/global); every allocation and
// free is a compare-and-swap on the oper object (docs/architecture.md decision 2).
package resources

import (
	"errors"

	"github.com/contiv/netplugin/utils/usererr"
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

// userErr is a *usererr.Error with the exact user-visible text of the
// spec next to its sentinel; usererr.Message(err) gives the text back
// through any wrapping.
func userErr(kind error, format string, args ...any) error {
	return usererr.New(kind, format, args...)
}
