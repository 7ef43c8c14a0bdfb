package ipam

import (
	"errors"

	"github.com/contiv/netplugin/netmaster/ipam/v4store"
	"github.com/contiv/netplugin/utils/usererr"
)

// Sentinel errors. Every error this package returns wraps one of them (or an
// objdb error); test with errors.Is. Those of the stored pools are
// netmaster/ipam/v4store's, named here too.
var (
	// ErrExhausted: no free address is left in the pool.
	ErrExhausted = errors.New("ipam: subnet exhausted")
	// ErrInUse: a requested address (or an address of a requested
	// sub-pool) is already allocated or reserved.
	ErrInUse = v4store.ErrInUse
	// ErrOutOfSubnet: the address is not inside the pool's subnet.
	ErrOutOfSubnet = v4store.ErrOutOfSubnet
	// ErrNotAllocatable: the address is inside the subnet but never handed
	// out by this pool (network or broadcast address, outside the pool's
	// range).
	ErrNotAllocatable = v4store.ErrNotAllocatable
	// ErrInvalid: malformed subnet, range, pool or address.
	ErrInvalid = v4store.ErrInvalid
	// ErrPoolNotFound: no pool with this id.
	ErrPoolNotFound = v4store.ErrPoolNotFound
	// ErrPoolExists: a pool with this id exists with another definition.
	ErrPoolExists = v4store.ErrPoolExists
	// ErrRestoreConflict: the stored pool differs from the one being
	// restored.
	ErrRestoreConflict = v4store.ErrRestoreConflict
	// ErrClosed: the allocator was closed.
	ErrClosed = errors.New("ipam: allocator closed")
)

// userErr is a *usererr.Error with the exact user-visible text of the
// spec next to its sentinel; usererr.Message(err) returns it.
func userErr(kind error, format string, args ...any) error {
	return usererr.New(kind, format, args...)
}
