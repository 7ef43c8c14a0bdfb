package ipam

import (
	"errors"

	"github.com/contiv/netplugin/utils/usererr"
)

// Sentinel errors. Every error this package returns wraps one of them (or an
// objdb error); test with errors.Is.
var (
	// ErrExhausted: no free address is left in the pool.
	ErrExhausted = errors.New("ipam: subnet exhausted")
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
	// ErrClosed: the allocator was closed.
	ErrClosed = errors.New("ipam: allocator closed")
)

// userErr is a *usererr.Error with the exact user-visible text of the
// spec next to its sentinel; usererr.Message(err) gives the text back
// through any wrapping.
func userErr(kind error, format string, args ...any) error {
	return usererr.New(kind, format, args...)
}
