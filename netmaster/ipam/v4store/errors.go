package v4store

import (
	"errors"

	"github.com/contiv/netplugin/utils/usererr"
)

// Sentinel errors of the stored pools, which netmaster/ipam's errors wrap
// too: their text names ipam, the package callers see.
var (
	// ErrInUse: a requested address (or an address of a requested
	// sub-pool) is already allocated or reserved.
	ErrInUse = errors.New("ipam: address in use")
	// ErrOutOfSubnet: the address is not inside the pool's subnet.
	ErrOutOfSubnet = errors.New("ipam: address outside subnet")
	// ErrNotAllocatable: the address is inside the subnet but never handed
	// out by this pool (network or broadcast address, outside the pool's
	// range).
	ErrNotAllocatable = errors.New("ipam: address not allocatable")
	// ErrInvalid: malformed subnet, range, pool or address.
	ErrInvalid = errors.New("ipam: invalid argument")
	// ErrPoolNotFound: no pool with this id.
	ErrPoolNotFound = errors.New("ipam: pool not found")
	// ErrPoolExists: a pool with this id exists with another definition.
	ErrPoolExists = errors.New("ipam: pool exists")
	// ErrRestoreConflict: the stored pool differs from the one being
	// restored.
	ErrRestoreConflict = errors.New("ipam: stored pool differs from the restored one")
)

// MaxConflicts bounds how often one request is retried after losing a
// compare-and-swap race before it fails.
const MaxConflicts = 1000

// restoreWriter is the allocator id written into restored chunks.
const restoreWriter = "restore"

// userErr is a *usererr.Error with the exact user-visible text of the
// spec next to its sentinel; usererr.Message(err) gives the text back
// through any wrapping.
func userErr(kind error, format string, args ...any) error {
	return usererr.New(kind, format, args...)
}
